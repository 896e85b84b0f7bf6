"""Recall at IoU 0.5 of tiled (sliced) inference against full-frame inference, on a data.yaml split.

    PYTHONPATH=. python benchmarks/bench_tiling_recall.py --model visdrone-s.engine \
        --data ../shared/datasets/visdrone-tiny/data.yaml --split val --overlap 0.2 --merge nms --out "$OUT/tiling"

For every image of the split: the Detector on the whole frame (letterboxed to the model's input), and
``predict_tiled`` (tiles of ``--tile`` px, default the model's input size, sent as batches; ``--full-frame`` adds
the whole frame to the tiles; ``--merge nms|nmm``). A ground-truth box is found when a detection of its class
matches it at IoU >= ``--match-iou`` (greedy by score, one detection per box: ``y9deploy.pipelines.tiling.recall``).
Reports recall overall and for small boxes (area < 32^2 px, COCO's definition), detections per image and ms per
image for both, and writes ``tiling_recall.json`` under ``--out``. The model must be trained on the data set's
classes (e.g. VisDrone for visdrone-tiny); a model of other classes measures nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SMALL = 32**2


def ground_truth(labels: np.ndarray, hw: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Rows (class, cx, cy, w, h) normalised -> (xyxy in pixels, classes)."""
    h, w = hw
    cls = labels[:, 0].astype(np.int64)
    cx, cy, bw, bh = labels[:, 1] * w, labels[:, 2] * h, labels[:, 3] * w, labels[:, 4] * h
    return np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], 1).astype(np.float32), cls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help=".engine, .onnx or .pt trained on the data set's classes")
    ap.add_argument("--data", required=True, type=Path, help="data.yaml")
    ap.add_argument("--split", default="val")
    ap.add_argument(
        "--tile", type=int, default=None, help="tile size in px (default: the model's input size)"
    )
    ap.add_argument("--overlap", type=float, default=0.2)
    ap.add_argument("--merge", choices=("nms", "nmm"), default="nms")
    ap.add_argument("--merge-iou", type=float, default=0.5)
    ap.add_argument("--full-frame", action="store_true", help="also run the whole frame with the tiles")
    ap.add_argument("--conf", type=float, default=0.25)
    ap.add_argument("--iou", type=float, default=0.45, help="the Detector's NMS IoU")
    ap.add_argument("--match-iou", type=float, default=0.5)
    ap.add_argument("--device", default=None)
    ap.add_argument("--limit", type=int, default=None, help="first N images only")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "bench-out")) / "tiling")
    args = ap.parse_args()

    from y9core.data.labels import load_labels
    from y9core.data.yaml_config import load_data_yaml
    from y9deploy import Detector
    from y9deploy.pipelines.tiling import predict_tiled
    from y9deploy.pipelines.tiling.recall import matched_ground_truth
    from y9deploy.runtime.image_file import read_image

    cfg = load_data_yaml(args.data, require=(args.split,))
    files = cfg.image_files(args.split)[: args.limit]
    labels = load_labels(files, cfg.nc, cache=False)
    det = Detector(args.model, device=args.device, conf=args.conf, iou=args.iou)
    if len(det.names) != cfg.nc:
        print(f"warning: the model has {len(det.names)} classes, {args.data} has {cfg.nc}", file=sys.stderr)
    tile = args.tile or tuple(det.imgsz)
    stats = {m: {"found": 0, "found_small": 0, "detections": 0, "ms": 0.0} for m in ("full", "tiled")}
    total = small_total = 0
    det.warmup()
    for path, lab, hw in zip(labels.files, labels.labels, labels.shapes):
        frame = read_image(path)
        gt, gt_cls = ground_truth(lab, (int(hw[0]), int(hw[1])))
        small = (gt[:, 2] - gt[:, 0]) * (gt[:, 3] - gt[:, 1]) < SMALL
        total += len(gt)
        small_total += int(small.sum())
        for method in ("full", "tiled"):
            t = time.perf_counter()
            if method == "full":
                d = det.predict(frame)
            else:
                d = predict_tiled(det, frame, tile=tile, overlap=args.overlap, include_full=args.full_frame,
                                  merge=args.merge, iou=args.merge_iou)  # fmt: skip
            s = stats[method]
            s["ms"] += (time.perf_counter() - t) * 1e3
            found = matched_ground_truth(d.xyxy, d.confidence, d.class_id, gt, gt_cls, iou=args.match_iou)
            s["found"] += int(found.sum())
            s["found_small"] += int(found[small].sum())
            s["detections"] += len(d)
    det.close()
    n = len(labels.files)
    result = {
        "model": str(args.model), "data": str(args.data), "split": args.split, "images": n, "gt_boxes": total,
        "gt_small": small_total, "tile": list(tile) if isinstance(tile, tuple) else tile, "overlap": args.overlap,
        "merge": args.merge, "full_frame_with_tiles": args.full_frame, "conf": args.conf,
        "match_iou": args.match_iou,
    }  # fmt: skip
    for method, s in stats.items():
        result[method] = {
            "recall": s["found"] / total if total else None,
            "recall_small": s["found_small"] / small_total if small_total else None,
            "detections_per_image": s["detections"] / max(n, 1),
            "ms_per_image": s["ms"] / max(n, 1),
        }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "tiling_recall.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"{n} images, {total} boxes ({small_total} small), recall at IoU {args.match_iou}:")
    for method in ("full", "tiled"):
        r = result[method]
        print(f"  {method:5s}  recall {r['recall']:.4f}  small {r['recall_small'] or 0:.4f}  "
              f"{r['detections_per_image']:.1f} dets/img  {r['ms_per_image']:.1f} ms/img")  # fmt: skip
    print(f"wrote {args.out / 'tiling_recall.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
