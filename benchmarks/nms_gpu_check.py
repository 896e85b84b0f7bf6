"""Step ``nms`` of bench_detector_gpu.py: the Detector's batched GPU post-processing alone on a real raw output,
with the Triton scan and with the fixed point; ms per call and bit-equality with the host ``postprocess``."""

from __future__ import annotations

import time

import numpy as np


def nms_check(pt, frames, batch: int, candidates: int, kw_torch: dict, summary: dict) -> None:
    """Batched GPU post-processing alone on the real raw output of ``batch`` frames: the Triton scan and the
    fixed point, at ~candidates and ~4x candidates per frame; ms per call (CUDA-synchronised wall clock) and
    bit-equality with the host ``postprocess``."""
    import torch

    from y9core.post.choice import PostImpl, choose_post, probe
    from y9core.post.torch_batched import batched_postprocess_torch
    from y9deploy import Detector
    from y9deploy.postprocess import postprocess
    from y9deploy.pre.host import prepare

    rows = []
    with Detector(pt, **kw_torch) as det:
        batch_frames = [frames[i % len(frames)] for i in range(batch)]
        blob, _ = prepare(batch_frames, det.imgsz, dtype=det.backend.input_dtype)
        raw = det.backend.infer(torch.from_numpy(blob).to(det.device))["output0"]
        raw = raw.clone() if hasattr(raw, "clone") else torch.from_numpy(np.asarray(raw))
        host_raw = raw.float().cpu().numpy()
        for n in (candidates, 4 * candidates):
            best = np.sort(host_raw[:, 4:].max(1), axis=1)[:, ::-1]
            conf = float(np.median(best[:, min(n, best.shape[1] - 1)]))
            want = postprocess(host_raw, conf=conf)
            counts = (host_raw[:, 4:].max(1) > conf).sum(1)
            for scan in ("triton", "fixed-point"):
                if scan == "triton" and not (
                    raw.is_cuda
                    and choose_post(device="cuda", torch_tensors=True, triton=probe().triton, graphs=False)
                    is PostImpl.TORCH_TRITON
                ):
                    rows.append({"scan": scan, "skipped": "needs CUDA tensors and triton"})
                    continue
                got = batched_postprocess_torch(raw, conf=conf, scan=scan)
                equal = all(g.shape == w.shape and np.array_equal(g, w) for g, w in zip(got, want))
                times = []
                for _ in range(20):
                    if raw.is_cuda:
                        torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    batched_postprocess_torch(raw, conf=conf, scan=scan)
                    if raw.is_cuda:
                        torch.cuda.synchronize()
                    times.append((time.perf_counter() - t0) * 1000)
                rows.append({"scan": scan, "batch": batch, "conf": conf, "candidates_mean": float(counts.mean()),
                             "candidates_max": int(counts.max()), "detections": int(sum(len(w) for w in want)),
                             "equal_to_host": bool(equal), "ms_p50": float(np.median(times)),
                             "ms_min": float(np.min(times))})  # fmt: skip
                print(f"nms {scan:<12} batch {batch} ~{counts.mean():.0f} candidates/frame (max {counts.max()}): "
                      f"{np.median(times):.2f} ms p50, equal to host: {equal}", flush=True)  # fmt: skip
    summary["nms"] = rows
