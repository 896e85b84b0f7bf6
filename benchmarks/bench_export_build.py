"""Export and ahead-of-time engine build times for the ten YOLOv9/GELAN models.

    python benchmarks/bench_export_build.py [--models yolov9-s gelan-c ...] [--imgsz 640] [--batch 1:4:8]
                                            [--target sm89] [--work /tmp/y9-bench-export] [--json-out FILE]

Per model (random weights: times do not depend on the values): ``export_onnx`` at a static 640x640 and with a
dynamic batch (re-parameterize + fuse, torch.onnx.export, onnx.checker, onnxsim, onnxruntime parity check),
then ``build_engine`` of the dynamic-batch ONNX: TensorRT-RTX FP16 (strongly typed FP16 conversion first),
profile 1:4:8, ahead of time for sm89 (no GPU needed). Wall time and process CPU time are both reported:
on a shared box the CPU time is the steadier figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def bench_model(name: str, imgsz: int, batch: str, target: str, work: Path) -> dict:
    import torch

    from y9deploy.engine.builder import build_engine_report
    from y9deploy.export.onnx_export import export_onnx_report
    from y9train.models import build_model

    torch.manual_seed(0)
    model = build_model(name).eval()
    params = sum(p.numel() for p in model.parameters())
    static, s_wall, s_cpu = _timed(lambda: export_onnx_report(model, work / f"{name}.onnx", imgsz=imgsz))
    dyn, d_wall, d_cpu = _timed(
        lambda: export_onnx_report(model, work / f"{name}-dyn.onnx", imgsz=imgsz, dynamic_batch=True)
    )
    row = {
        "model": name,
        "params": params,
        "export_static_s": round(s_wall, 2),
        "export_static_cpu_s": round(s_cpu, 2),
        "export_static_steps_s": {k: round(v, 2) for k, v in static.seconds.items()},
        "nodes_raw": static.nodes_raw,
        "nodes_simplified": static.nodes_simplified,
        "parity_box_rel": static.parity[0].box_rel,
        "onnx_mb": round(static.path.stat().st_size / 1e6, 1),
        "export_dynamic_s": round(d_wall, 2),
        "export_dynamic_cpu_s": round(d_cpu, 2),
        "nodes_dynamic_simplified": dyn.nodes_simplified,
    }
    try:
        built, b_wall, b_cpu = _timed(
            lambda: build_engine_report(
                dyn.path, work / f"{name}-{target}.engine", batch=batch, target=target
            )
        )
    except Exception as exc:  # no TensorRT-RTX here: report the export figures anyway
        row["build_error"] = str(exc)
        return row
    row.update(
        build_s=round(b_wall, 2),
        build_cpu_s=round(b_cpu, 2),
        builder_only_s=built.manifest.build_seconds,
        engine_mb=round(built.manifest.engine_bytes / 1e6, 1),
        flavour=f"{built.manifest.flavour} {built.manifest.trt_version}",
    )
    return row


def main() -> None:
    from y9train.models import MODEL_NAMES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODEL_NAMES))
    parser.add_argument("--imgsz", type=int, default=640)
    parser.add_argument("--batch", default="1:4:8")
    parser.add_argument("--target", default="sm89")
    parser.add_argument("--work", type=Path, default=Path("/tmp/y9-bench-export"))
    parser.add_argument("--json-out", type=Path, default=None)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)

    import torch

    rows = []
    print("| model | params | export static s (cpu s) | nodes raw -> simplified | ONNX MB | export dyn-batch s "
          "| AOT FP16 build s (cpu s) | builder only s | engine MB |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.models:
        row = bench_model(name, args.imgsz, args.batch, args.target, args.work)
        rows.append(row)
        build = (
            f"{row['build_s']} ({row['build_cpu_s']}) | {row['builder_only_s']} | {row['engine_mb']}"
            if "build_s" in row
            else f"n/a ({row['build_error']}) | | "
        )
        print(
            f"| {name} | {row['params'] / 1e6:.1f}M | {row['export_static_s']} ({row['export_static_cpu_s']}) | "
            f"{row['nodes_raw']} -> {row['nodes_simplified']} | {row['onnx_mb']} | {row['export_dynamic_s']} | "
            f"{build} |",
            flush=True,
        )
    meta = {
        "imgsz": args.imgsz,
        "batch": args.batch,
        "target": args.target,
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "load_average_end": os.getloadavg(),
        "torch": torch.__version__,
    }
    print(json.dumps(meta))
    if args.json_out:
        args.json_out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
