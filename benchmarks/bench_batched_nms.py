"""The Detector's batched decode + NMS (``post.torch_batched``) on synthetic raw outputs: buckets vs one
padded batch, the Triton scan vs the fixed point, and each result checked against the host ``postprocess``.

    PYTHONPATH=. python benchmarks/bench_batched_nms.py --device cuda             # on the GPU (all variants)
    PYTHONPATH=. python benchmarks/bench_batched_nms.py --device cpu --iters 3    # CPU tensors (no Triton)
    PYTHONPATH=. python benchmarks/bench_batched_nms.py --device cpu --iters 3 --batch 8 --candidates 5000 \
        --saturated 0 --conf 0.001 --iou 0.7                                       # validation-like, on the CPU

A batch of ``--batch`` raw outputs [B, 4+80, 8400] in which every frame has ~``--candidates`` anchors above
conf 0.25 except ``--saturated`` frames with ``--dense`` candidates each; boxes are drawn around a few centres
per frame, so they overlap in long chains (as random-weight networks give). Variants: "fixed-point" and
"triton" scans, each bucketed (the default) and as one bucket padded to the largest k (``min_bucket=1 <<
15``, the behaviour before buckets), and the host ``postprocess`` itself (what ``choose_post`` runs for CPU
tensors). Prints ms p50 per variant and whether it equals the host result bit for bit; ``--json`` writes the rows.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def synthetic_batch(
    rng, batch: int, candidates: int, saturated: int, dense: int, a: int = 8400, nc: int = 80
):
    """[B, 4+nc, A] float32: background scores below 0.2, ``candidates`` (or ``dense`` for the first
    ``saturated`` frames) anchors with a class score in (0.3, 1) and boxes clustered around 8 centres."""
    p = np.empty((batch, 4 + nc, a), np.float32)
    p[:, 4:] = rng.uniform(0, 0.2, (batch, nc, a))
    for i in range(batch):
        n = dense if i < saturated else candidates
        centres = rng.uniform(60, 580, (8, 2))
        p[i, :2] = (centres[rng.integers(0, 8, a)] + rng.normal(0, 25, (a, 2))).T
        p[i, 2:4] = rng.uniform(30, 90, (2, a))
        pos = rng.choice(a, n, replace=False)
        p[i, 4 + rng.integers(0, nc, n), pos] = rng.uniform(0.3, 1, n)
    return p


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--candidates", type=int, default=100)
    ap.add_argument("--saturated", type=int, default=1)
    ap.add_argument("--dense", type=int, default=2000)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--agnostic", action="store_true")
    ap.add_argument("--conf", type=float, default=0.25)
    ap.add_argument("--iou", type=float, default=0.45)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    import torch

    from y9core.post.choice import PostImpl, choose_post, probe
    from y9core.post.torch_batched import batched_postprocess_torch
    from y9deploy.postprocess import postprocess

    pred = synthetic_batch(np.random.default_rng(0), args.batch, args.candidates, args.saturated, args.dense)
    kw = dict(conf=args.conf, iou=args.iou, agnostic=args.agnostic)
    host_times = []
    for _ in range(max(1, args.iters)):
        t0 = time.perf_counter()
        want = postprocess(pred, **kw)
        host_times.append((time.perf_counter() - t0) * 1000)
    host_ms = float(np.median(host_times))
    dev = torch.from_numpy(pred).to(args.device)
    cuda = dev.is_cuda
    print(f"batch {args.batch}, {args.candidates} candidates/frame, {args.saturated} frame(s) with {args.dense}; "
          f"{sum(len(w) for w in want)} detections; host postprocess: {host_ms:.2f} ms p50", flush=True)  # fmt: skip
    rows = [{"scan": "host", "bucketing": "-", "ms_p50": host_ms, "ms_min": float(np.min(host_times)),
             "equal_to_host": True}]  # fmt: skip
    for scan in ("fixed-point", "triton"):
        if scan == "triton" and not (
            cuda
            and choose_post(device="cuda", torch_tensors=True, triton=probe().triton, graphs=False)
            is PostImpl.TORCH_TRITON
        ):
            print("triton: skipped (needs CUDA tensors and triton)")
            continue
        for label, min_bucket in (("buckets", 32), ("one bucket", 1 << 15)):
            run = dict(scan=scan, min_bucket=min_bucket, **kw)
            got = batched_postprocess_torch(dev, **run)  # also the warm-up (Triton compiles here)
            equal = all(g.shape == w.shape and np.array_equal(g, w) for g, w in zip(got, want))
            times = []
            for _ in range(args.iters):
                if cuda:
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                batched_postprocess_torch(dev, **run)
                if cuda:
                    torch.cuda.synchronize()
                times.append((time.perf_counter() - t0) * 1000)
            rows.append({"scan": scan, "bucketing": label, "ms_p50": float(np.median(times)),
                         "ms_min": float(np.min(times)), "equal_to_host": bool(equal)})  # fmt: skip
            print(
                f"{scan:<12} {label:<11} {np.median(times):9.2f} ms p50   equal to host: {equal}", flush=True
            )
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": str(args.json)}, "rows": rows}, indent=2)
        )
    return 0 if all(r["equal_to_host"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
