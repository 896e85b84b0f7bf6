"""The y9 demo (``make demo``): checkpoint -> ONNX -> TensorRT engine -> Detector -> benchmark.

Runs on a CPU-only machine with only what the repository holds:
1. a model (``--weights`` an official or y9 checkpoint; by default a freshly initialised gelan-s, whose
   detections are meaningless but exercise every step), saved as a y9 checkpoint;
2. ``export_onnx``: static 640x640 ONNX, simplified, checked against torch with onnxruntime;
3. ``build_engine``: a TensorRT FP16 engine with a 1:4:8 batch profile, built ahead of time for an RTX 4090
   (sm89) when TensorRT-RTX is installed (it cannot run on this machine; the manifest says what it is for);
4. ``Detector`` on the ONNX and on the checkpoint: the embedded COCO images, annotated copies and JSON;
5. ``benchmark`` of the ONNX model on this machine.
Uses only the public API.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("demo-out"))
    parser.add_argument("--weights", type=Path, default=None, help="an official or y9 checkpoint (.pt)")
    parser.add_argument("--model", default="gelan-s", help="architecture when no --weights are given")
    parser.add_argument("--imgsz", type=int, default=640)
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)

    import torch

    from y9deploy import Detector, benchmark, build_engine, export_onnx
    from y9deploy.draw import draw_detections
    from y9train.checkpoint import load_checkpoint, save_checkpoint
    from y9train.models import build_model
    from y9train.models.complexity import model_info

    t = step("1. model")
    if args.weights:
        model = load_checkpoint(args.weights)
        print(f"loaded {args.weights} ({model.name}, {model.nc} classes)")
    else:
        torch.manual_seed(0)
        model = build_model(args.model).eval()
        print(f"{args.model} with random weights (pass --weights yolov9-s.pt for real detections)")
    info = model_info(model, args.imgsz)
    ckpt = save_checkpoint(model, out / f"{model.name}.pt", imgsz=args.imgsz)
    print(f"{info.name}: {info.params:,} parameters, {info.gflops:.1f} GFLOPs @ {args.imgsz}; saved {ckpt}")
    print(f"   {time.perf_counter() - t:.1f} s")

    t = step("2. export to ONNX (static shape, simplified, checked against torch)")
    onnx_path = export_onnx(ckpt, out / f"{model.name}.onnx", imgsz=args.imgsz)
    dyn_path = export_onnx(ckpt, out / f"{model.name}-dyn.onnx", imgsz=args.imgsz, dynamic_batch=True)
    print(f"wrote {onnx_path} and {dyn_path} (dynamic batch)   {time.perf_counter() - t:.1f} s")

    t = step("3. TensorRT FP16 engine, batch profile 1:4:8")
    try:
        engine = build_engine(
            dyn_path, out / f"{model.name}-sm89.engine", fp16=True, batch=(1, 4, 8), target="sm89"
        )
    except Exception as exc:  # no TensorRT flavour installed, or none that builds ahead of time here
        print(f"skipped: {exc}")
    else:
        manifest = json.loads(Path(str(engine) + ".json").read_text())
        print(
            f"wrote {engine} ({engine.stat().st_size / 1e6:.1f} MB) for {manifest.get('compute_capability')} "
            f"with {manifest.get('flavour')} {manifest.get('trt_version', manifest.get('version', ''))}"
            f"   {time.perf_counter() - t:.1f} s"
        )

    t = step("4. Detector on the embedded COCO images")
    frames = [cv2.imread(str(p)) for p in IMAGES]
    results = {}
    for path in (onnx_path, ckpt):
        with Detector(path, conf=0.25) as det:
            dets = det.predict(frames)
            results[path.suffix] = dets
            for img_path, frame, d in zip(IMAGES, frames, dets):
                print(f"{path.name}: {img_path.name}: {len(d)} detections")
                if path == onnx_path:
                    cv2.imwrite(str(out / f"annotated-{img_path.stem}.jpg"), draw_detections(frame, d))
    (out / "detections.json").write_text(json.dumps([d.to_dict() for d in results[".onnx"]], indent=1))
    same = all(len(a) == len(b) for a, b in zip(results[".onnx"], results[".pt"]))
    print(f"ONNX and checkpoint agree on the number of detections per image: {same}")
    print(f"annotated images and detections.json in {out}   {time.perf_counter() - t:.1f} s")

    step("5. benchmark (this machine, ONNX Runtime)")
    res = benchmark(onnx_path, batch_sizes=(1,), iters=10, warmup=2)
    for case in res.cases:
        stages = ", ".join(f"{k} p50 {v.p50:.1f} ms" for k, v in case.stages.items())
        print(
            f"{case.model} batch {case.batch} on {case.device} ({case.backend}): {stages}; {case.img_per_s:.1f} img/s"
        )
    res.save(out / "benchmark.json")
    print(f"\ndone: everything is in {out}/")


if __name__ == "__main__":
    main()
