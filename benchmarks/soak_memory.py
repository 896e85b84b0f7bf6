"""Soak test: many Detector.predict calls; the process's resident memory must not grow after warm-up.

    python benchmarks/soak_memory.py [MODEL] [--calls 10000] [--warmup 300] [--device cpu] [--conf 0.25] [--json OUT]

MODEL: a .onnx / .engine / .pt file. Without one, a gelan-t checkpoint with random weights is exported to ONNX
at 256x256 in a temporary folder (needs torch). The calls cycle through a realistic mix: a 1920x1080 frame, a
1280x720 frame, and a list of three frames of different sizes (so every buffer cache is exercised), with
``--conf`` (0.25). On the GPU path, torch's allocated CUDA memory is sampled too, and the CUDA-graph
post-processing's call counts are reported. RSS (psutil) is sampled after the warm-up and every 1,000 calls; the result is the growth from the
post-warm-up sample to the last one. Exit status 1 when it exceeds --limit-mb (default 10).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np


def default_model(folder: Path) -> Path:
    import torch

    from y9deploy.export.onnx_export import export_onnx_report
    from y9train.checkpoints.load import save_checkpoint
    from y9train.models import build_model

    torch.manual_seed(0)
    pt = save_checkpoint(build_model("gelan-t").eval(), folder / "gelan-t.pt")
    return export_onnx_report(pt, folder / "gelan-t-256.onnx", imgsz=256, check=False).path


def _gpu_mb(det) -> float | None:
    """torch's allocated CUDA memory (MB) when the Detector runs the GPU path, else None."""
    if not det.pipeline.cuda:
        return None
    import torch

    return torch.cuda.memory_allocated(det.pipeline.device) / 2**20


def frames() -> list:
    rng = np.random.default_rng(0)

    def frame(h: int, w: int):
        import cv2

        small = rng.integers(0, 256, (h // 40, w // 40, 3), dtype=np.uint8)
        return cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)

    return [frame(1080, 1920), frame(720, 1280), [frame(480, 640), frame(1080, 1920), frame(600, 800)]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", type=Path)
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--device", default=None)
    ap.add_argument("--limit-mb", type=float, default=10.0)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--conf", type=float, default=0.25, help="confidence threshold of every call")
    args = ap.parse_args()

    import psutil

    from y9deploy import Detector

    proc = psutil.Process()
    tmp = tempfile.TemporaryDirectory()
    model = args.model or default_model(Path(tmp.name))
    inputs = frames()
    samples: list[tuple[int, float]] = []
    gpu_samples: list[tuple[int, float]] = []  # torch's allocated CUDA memory, on the GPU path
    t0 = time.perf_counter()
    n_dets = 0
    with Detector(model, device=args.device, conf=args.conf) as det:
        print(f"{det!r}", flush=True)
        backend = det.backend.name
        for i in range(args.warmup + args.calls):
            out = det.predict(inputs[i % len(inputs)])
            n_dets += sum(len(d) for d in out) if isinstance(out, list) else len(out)
            done = i + 1 - args.warmup
            if done == 0 or (done > 0 and (done % 1000 == 0 or done == args.calls)):
                gc.collect()
                rss = proc.memory_info().rss / 2**20
                samples.append((done, rss))
                gpu = _gpu_mb(det)
                if gpu is not None:
                    gpu_samples.append((done, gpu))
                print(
                    f"after {done:>6} calls: RSS {rss:8.1f} MB" + (f", GPU {gpu:.1f} MB" if gpu else ""),
                    flush=True,
                )
        runner = getattr(det.pipeline, "post_runner", None)  # the torch pipeline's post-processing
        graph = runner.graph if runner is not None else None
        graph_stats = asdict(graph.stats) if graph is not None else None
        choice = det.choice()
    seconds = time.perf_counter() - t0
    base, last = samples[0][1], samples[-1][1]
    growth = last - base
    result = {
        "model": str(model),
        "backend": backend,
        "calls": args.calls,
        "warmup": args.warmup,
        "rss_after_warmup_mb": round(base, 1),
        "rss_end_mb": round(last, 1),
        "growth_mb": round(growth, 2),
        "max_mb": round(max(r for _, r in samples), 1),
        "samples": [[n, round(r, 1)] for n, r in samples],
        "seconds": round(seconds, 1),
        "detections": n_dets,
        "gpu_allocated_mb": [[n, round(m, 1)] for n, m in gpu_samples],
        "graph_post_stats": graph_stats,
        "preprocess_impl": choice["preprocess"],
        "postprocess_impl": choice["postprocess"],
    }
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    ok = growth < args.limit_mb
    print(
        f"{'PASS' if ok else 'FAIL'}: RSS grew {growth:+.2f} MB over {args.calls} calls (limit {args.limit_mb} MB)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
