"""FP32 / FP16 / INT8 ONNX of one y9 model on the CPU with ONNX Runtime: mAP50-95 and batch-1 latency (issue 55).

    python benchmarks/bench_int8.py MODEL.pt --data DATA.yaml [--rounds 15] [--threads 1,2] [--out result.json] (--help)

Accuracy: the FP32 export at ``--acc-imgsz`` (default: the trained size), its FP16 conversion and its INT8 export
(``--calib-images`` train images, ``--keep`` / ``--method`` as ``y9 export --int8``; no gate), scored by ``y9 val`` on
DATA's val split. Latency: the three at ``--speed-imgsz``, ``InferenceSession.run`` on one letterboxed frame (batch 1) per
thread count and level, interleaved in each round; p50 over ``--rounds`` after two warm-ups. Prints rows, writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path


def _export_three(model: str, data: str, imgsz: int | None, folder: Path, args) -> dict[str, Path]:
    from y9deploy.export.onnx_export import export_onnx_report
    from y9deploy.export.onnx_half import onnx_to_fp16
    from y9deploy.int8.export import export_int8

    fp32 = folder / "fp32.onnx"
    export_onnx_report(model, fp32, imgsz=imgsz)
    onnx_to_fp16(fp32, folder / "fp16.onnx", half=True)
    export_int8(fp32, folder / "int8.onnx", data=data, calib_images=args.calib_images, method=args.method,
                keep=args.keep, gate=False)  # fmt: skip
    return {"fp32": fp32, "fp16": folder / "fp16.onnx", "int8": folder / "int8.onnx"}


def _latency(files: dict[str, Path], frame_path: str, threads: int, level: str, rounds: int) -> dict[str, float]:
    import numpy as np
    import onnxruntime as ort

    from y9core.images.read import decode_image
    from y9deploy.engine.onnx_info import inspect_onnx
    from y9deploy.pre.host import prepare

    sessions, feeds = {}, {}
    for name, path in files.items():
        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
        opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
        opts.log_severity_level = 3
        sessions[name] = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        hw = inspect_onnx(path, check_detector=False).imgsz
        blob, _ = prepare(decode_image(frame_path), hw)
        feeds[name] = {"images": blob.astype(np.float16) if name == "fp16" else blob}
        for _ in range(2):
            sessions[name].run(None, feeds[name])
    times: dict[str, list[float]] = {n: [] for n in files}
    for _ in range(rounds):
        for name, sess in sessions.items():
            t = time.perf_counter()
            sess.run(None, feeds[name])
            times[name].append(1000 * (time.perf_counter() - t))
    return {n: statistics.median(v) for n, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--data", required=True)
    ap.add_argument("--acc-imgsz", type=int, default=None)
    ap.add_argument("--speed-imgsz", type=int, default=640)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--calib-images", type=int, default=64)
    ap.add_argument("--method", default="average")
    ap.add_argument("--keep", default="stem")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--levels", default="ORT_ENABLE_BASIC,ORT_ENABLE_ALL")
    ap.add_argument("--skip-accuracy", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    from y9core.data.yaml_config import load_data_yaml
    from y9deploy.engine.onnx_info import inspect_onnx
    from y9deploy.int8.export import score

    result = {"model": args.model, "data": args.data, "calib_images": args.calib_images, "method": args.method,
              "keep": args.keep, "machine": f"{platform.machine()} {os.cpu_count()} CPUs",
              "load_before": os.getloadavg(), "accuracy": {}, "latency_ms_p50": {}}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-int8-") as tmp:
        if not args.skip_accuracy:
            Path(tmp, "acc").mkdir()
            acc = _export_three(args.model, args.data, args.acc_imgsz, Path(tmp, "acc"), args)
            for name, path in acc.items():
                m, n = score(args.data, path, "val")
                result["accuracy"][name] = {"map50_95": m, "images": n}
                print(f"accuracy {name}: mAP50-95 {m:.4f} on {n} val images", flush=True)
        if not args.skip_accuracy and inspect_onnx(acc["fp32"]).imgsz == (args.speed_imgsz, args.speed_imgsz):
            fast = acc  # the same three files (a model trained at 640): not exported and quantized again
        else:
            Path(tmp, "speed").mkdir()
            fast = _export_three(args.model, args.data, args.speed_imgsz, Path(tmp, "speed"), args)
        frame = str(sorted(load_data_yaml(args.data).image_files("val"))[0])
        for threads in (int(t) for t in args.threads.split(",")):
            for level in args.levels.split(","):
                p50 = _latency(fast, frame, threads, level, args.rounds)
                result["latency_ms_p50"][f"{threads}t-{level}"] = p50
                print(f"latency {threads} thread(s) {level}: " + ", ".join(f"{k} {v:.1f} ms" for k, v in p50.items())
                      + f" (FP32/INT8 {p50['fp32'] / p50['int8']:.2f}x)", flush=True)  # fmt: skip
    result["load_after"] = os.getloadavg()
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
