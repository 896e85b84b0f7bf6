"""Augmentation parity by statistics: what the official training pipeline and y9's make of the same images.

The two draw their random numbers differently (the official from Python's global ``random``, y9 from a
generator per (seed, epoch, image)), so their samples cannot be compared one by one; their distributions can.
Both build training samples from the same data.yaml with the official recipe (hyp.scratch-high: mosaic 1.0,
mixup 0.15, translate 0.1, scale 0.9, HSV 0.015 / 0.7 / 0.4, fliplr 0.5), at 640, and this script reports per
pipeline: boxes per sample, box width and height quantiles (pixels), the share of boxes in the left half (flips),
and the mean and spread over samples of each sample's mean channel values (HSV gains act on them).

    python benchmarks/augment_stats.py official --official-dir DIR --python PY --data D.yaml --samples N --out F
        samples the untouched official LoadImagesAndLabels (run by PY, a Python with its requirements)
    python benchmarks/augment_stats.py y9 --data D.yaml --samples N --out F      samples y9's YoloDataset
    python benchmarks/augment_stats.py table A.json B.json                         both side by side

Every sample is drawn for a random image, as a shuffled epoch does. Mosaic stays on unless ``--no-mosaic`` is given:
then both pipelines make the samples of the close-mosaic epochs (the official ``dataset.mosaic = False``, y9's
``SampleKey(..., mosaic=False)``): letterbox, then the affine (scale, translate), HSV and flips, without mixup.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

IMGSZ = 640
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)

# Run by the official's Python in its source folder: its dataset class, untouched, with its own recipe file.
OFFICIAL_SAMPLER = r"""
import json, random, sys
import numpy as np, yaml
from utils.dataloaders import LoadImagesAndLabels
from utils.general import check_dataset
data, n, out, seed, mosaic = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1"
hyp = yaml.safe_load(open("data/hyps/hyp.scratch-high.yaml"))
d = check_dataset(data)
ds = LoadImagesAndLabels(d["train"], {imgsz}, 16, augment=True, hyp=hyp, rect=False, stride=32)
ds.mosaic = ds.mosaic and mosaic  # train_dual.py's close-mosaic sets this attribute
random.seed(seed); np.random.seed(seed)
rows = []
for _ in range(n):
    img, labels, _, _ = ds[random.randrange(len(ds))]
    img = img.numpy()[::-1].transpose(1, 2, 0)  # CHW RGB -> HWC BGR
    lb = labels.numpy()[:, 1:]
    h, w = img.shape[:2]
    wh = np.stack([lb[:, 3] * w, lb[:, 4] * h], 1) if len(lb) else np.zeros((0, 2))
    cx = lb[:, 1] * w if len(lb) else np.zeros(0)
    rows.append({{"shape": [h, w], "wh": wh.tolist(), "cx": cx.tolist(),
                 "mean_bgr": img.reshape(-1, 3).mean(0).tolist()}})
json.dump(rows, open(out, "w"))
"""


def sample_official(args) -> list[dict]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from reference_env import official_env

    out = Path(args.out).resolve()
    work = out.parent / (out.stem + "-official-work")
    work.mkdir(parents=True, exist_ok=True)
    code = OFFICIAL_SAMPLER.format(imgsz=IMGSZ)
    cmd = [
        args.python,
        "-c",
        code,
        str(Path(args.data).resolve()),
        str(args.samples),
        str(out),
        str(args.seed),
        "0" if args.no_mosaic else "1",
    ]
    subprocess.run(cmd, cwd=args.official_dir, env=official_env(work), check=True)
    return json.loads(out.read_text())


def sample_y9(args) -> list[dict]:
    from y9train.data import AugmentConfig, SampleKey, YoloDataset, load_data_yaml
    from y9train.hyp import load_hyp

    hyp = load_hyp("official")
    ds = YoloDataset.from_yaml(load_data_yaml(args.data), "train", imgsz=IMGSZ,
                               hyp=AugmentConfig.from_dict(hyp.to_dict()), seed=args.seed)  # fmt: skip
    rng = np.random.default_rng(args.seed)
    rows = []
    for k in range(args.samples):
        s = ds[SampleKey(int(rng.integers(len(ds))), (IMGSZ, IMGSZ), k // len(ds), not args.no_mosaic)]
        img, lb = s["img"], s["labels"]
        rows.append({"shape": list(img.shape[:2]), "wh": (lb[:, 3:5] - lb[:, 1:3]).tolist(),
                     "cx": ((lb[:, 1] + lb[:, 3]) / 2).tolist(), "mean_bgr": img.reshape(-1, 3).mean(0).tolist()})  # fmt: skip
    Path(args.out).write_text(json.dumps(rows))
    return rows


def summary(rows: list[dict]) -> dict:
    """Per-sample means (with their standard errors) and pooled box-size quantiles."""
    n_boxes = np.array([len(r["wh"]) for r in rows], float)
    wh = np.concatenate([np.asarray(r["wh"], float).reshape(-1, 2) for r in rows])
    cx = np.concatenate([np.asarray(r["cx"], float) for r in rows])
    bgr = np.array([r["mean_bgr"] for r in rows])

    def mean_se(x):
        return [float(x.mean()), float(x.std(ddof=1) / np.sqrt(len(x)))]

    return {
        "samples": len(rows),
        "boxes_per_sample": mean_se(n_boxes),
        "share_empty_samples": float((n_boxes == 0).mean()),
        "box_w_quantiles": np.quantile(wh[:, 0], QUANTILES).round(2).tolist() if len(wh) else [],
        "box_h_quantiles": np.quantile(wh[:, 1], QUANTILES).round(2).tolist() if len(wh) else [],
        "share_boxes_left_half": float((cx < IMGSZ / 2).mean()) if len(cx) else None,
        "mean_b": mean_se(bgr[:, 0]), "mean_g": mean_se(bgr[:, 1]), "mean_r": mean_se(bgr[:, 2]),
        "spread_of_sample_means": float(bgr.mean(1).std(ddof=1)),
    }  # fmt: skip


def table(paths: list[str]) -> str:
    sums = [(Path(p).stem, summary(json.loads(Path(p).read_text()))) for p in paths]
    keys = list(sums[0][1])
    lines = ["| statistic | " + " | ".join(n for n, _ in sums) + " |", "|---|" + "---:|" * len(sums)]
    for k in keys:
        cells = []
        for _, s in sums:
            v = s[k]
            if isinstance(v, list) and len(v) == 2 and k not in ("box_w_quantiles", "box_h_quantiles"):
                cells.append(f"{v[0]:.4g} ± {v[1]:.2g}")
            elif isinstance(v, list):
                cells.append(" / ".join(f"{x:g}" for x in v))
            else:
                cells.append(f"{v:.4g}" if isinstance(v, float) else str(v))
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("official", "y9"):
        s = sub.add_parser(name, help=f"sample the {name} training pipeline")
        s.add_argument("--data", required=True, help="data.yaml (its train images)")
        s.add_argument("--samples", type=int, default=1000)
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--out", required=True, help="JSON of per-sample statistics")
        s.add_argument("--no-mosaic", action="store_true", help="the samples of the close-mosaic epochs")
        if name == "official":
            s.add_argument("--official-dir", required=True)
            s.add_argument("--python", required=True)
    t = sub.add_parser("table", help="summaries of sample files side by side (markdown)")
    t.add_argument("files", nargs="+")
    return p


def main() -> None:
    args = build_parser().parse_args()
    if args.command == "table":
        print(table(args.files))
        return
    rows = sample_official(args) if args.command == "official" else sample_y9(args)
    print(json.dumps(summary(rows), indent=1))


if __name__ == "__main__":
    main()
