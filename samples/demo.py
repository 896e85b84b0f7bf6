"""The y9 demo (``make demo``): the embedded model -> ONNX -> TensorRT engine -> Detector -> benchmark.

Runs on a CPU-only machine with only what the repository holds:
1. the embedded default model (``y9deploy.default_model_path()``: a small model trained by y9 on coco128, 80
   COCO classes; see y9deploy/assets/MODEL_CARD.md), or ``--weights`` any y9 or official checkpoint;
2. ``export_onnx``: an ONNX at the model's own input size (416x416 for the embedded model) with a dynamic batch, simplified, checked against torch with onnxruntime;
3. ``build_engine``: a TensorRT FP16 engine with a 1:4:8 batch profile from that ONNX, built ahead of time for an
   RTX 4090 (sm89) when TensorRT-RTX is installed (it cannot run on this machine; the manifest says what it is for);
4. ``Detector`` on the ONNX (ONNX Runtime here; the engine on an sm89 GPU): the eight coco8 images of tests/data,
   annotated copies and detections.json; the checkpoint itself gives the same detections;
5. ``benchmark`` of the ONNX model on this machine: a table of p50/p90/p99 per stage.
Uses only the public API. Seven of the eight images are among the demonstration model's coco128 training
images (tests/data/ATTRIBUTION.md): the detections show that every step works, not how well the model generalises.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import cv2

REPO = Path(__file__).resolve().parents[1]
IMAGES = sorted((REPO / "tests" / "data").glob("*.jpg"))


def step(title: str) -> float:
    print(f"\n== {title}", flush=True)
    return time.perf_counter()


def done(t: float) -> None:
    print(f"   {time.perf_counter() - t:.1f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("demo-out"))
    parser.add_argument(
        "--weights", type=Path, default=None, help="a y9 or official checkpoint (default: the embedded model)"
    )
    parser.add_argument("--imgsz", type=int, default=None, help="network input (default: the model's own size)")
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)

    from y9deploy import Detector, benchmark, build_engine, default_model_path, export_onnx, read_facts
    from y9deploy.draw import draw_detections
    from y9train.checkpoint import load_checkpoint
    from y9train.models.complexity import model_info

    t = step("1. model")
    ckpt = args.weights or default_model_path()
    model = load_checkpoint(ckpt)
    if args.imgsz is None:  # the size the model was trained at (its facts)
        args.imgsz = max(read_facts(ckpt).imgsz)
    info = model_info(model, args.imgsz)
    origin = (
        "the embedded demonstration model (trained by y9 on coco128)" if args.weights is None else "--weights"
    )
    print(f"{ckpt}: {origin}")
    print(
        f"{info.name}: {info.params:,} parameters, {info.gflops:.1f} GFLOPs @ {args.imgsz}, {model.nc} classes"
    )
    done(t)

    t = step("2. export to ONNX (dynamic batch, simplified, checked against torch)")
    onnx_path = export_onnx(ckpt, out / f"{model.name}.onnx", imgsz=args.imgsz, dynamic_batch=True)
    print(f"wrote {onnx_path} ({onnx_path.stat().st_size / 1e6:.1f} MB)")
    done(t)

    t = step("3. TensorRT FP16 engine, batch profile 1:4:8")
    try:
        engine = build_engine(
            onnx_path, out / f"{model.name}-sm89.engine", fp16=True, batch=(1, 4, 8), target="sm89"
        )
    except Exception as exc:  # no TensorRT flavour installed, or none that builds ahead of time here
        print(f"skipped: {exc}")
    else:
        manifest = json.loads(Path(str(engine) + ".json").read_text())
        print(
            f"wrote {engine} ({engine.stat().st_size / 1e6:.1f} MB) for {manifest.get('compute_capability')} "
            f"with {manifest.get('flavour')} {manifest.get('trt_version', '')} (+ manifest {engine.name}.json); "
            "it runs on an RTX 40xx GPU, not on this machine"
        )
    done(t)

    t = step(f"4. Detector on the {len(IMAGES)} coco8 images (tests/data)")
    frames = [cv2.imread(str(p)) for p in IMAGES]
    with Detector(onnx_path, conf=0.25) as det:
        print(f"{det}")
        dets = det.predict(frames)
    records = []
    for img_path, frame, d in zip(IMAGES, frames, dets):
        found = ", ".join(f"{d.names[int(c)]} {s:.2f}" for c, s in zip(d.class_id[:6], d.confidence[:6]))
        more = f" (+{len(d) - 6} more)" if len(d) > 6 else ""
        print(f"{img_path.name}: {len(d)} objects: {found or '-'}{more}")
        cv2.imwrite(str(out / f"annotated-{img_path.stem}.jpg"), draw_detections(frame, d))
        records.append({"image": img_path.name, **d.to_dict()})
    (out / "detections.json").write_text(
        json.dumps({"model": str(onnx_path.name), "results": records}, indent=1)
    )
    with Detector(ckpt, conf=0.25, imgsz=args.imgsz, device="cpu") as det_pt:
        same = sum(len(a) == len(b) for a, b in zip(dets, det_pt.predict(frames)))
    print(f"the checkpoint itself (PyTorch) finds as many objects as the ONNX on {same}/{len(IMAGES)} images")
    print(f"annotated-*.jpg and detections.json in {out}")
    done(t)

    t = step("5. benchmark (this machine, ONNX Runtime, 1080p frames)")
    res = benchmark(onnx_path, batch_sizes=(1, 4), iters=6, warmup=1)
    res.save(out / "benchmark.json")
    print(f"{'batch':>5}  {'stage':<5}  {'p50 ms':>8}  {'p90 ms':>8}  {'p99 ms':>8}")
    for case in res.cases:
        for stage, s in case.stages.items():
            print(f"{case.batch:>5}  {stage:<5}  {s.p50:>8.1f}  {s.p90:>8.1f}  {s.p99:>8.1f}")
        print(f"{case.batch:>5}  {case.img_per_s:.1f} img/s on {case.device} ({case.backend})")
    print(f"benchmark.json in {out}")
    done(t)
    print(f"\ndone: everything is in {out}/")


if __name__ == "__main__":
    main()
