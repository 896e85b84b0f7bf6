"""Host pre-processing throughput of a batch: the OpenCV letterbox of B frames into one uint8 buffer split over a
thread pool (what the Detector's "hybrid" pre-processing does), for several pool sizes and OpenCV thread
settings; and a plain copy of the same frames (the memory-bandwidth floor).

    python benchmarks/bench_host_pre.py --batch 64 --frame 1080x1920 --threads 1,4,8,16 --repeat 20

Prints one JSON line per setting (median ms per batch and frames/s); ``--json OUT`` writes them all.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from y9deploy.measure.bench import synthetic_frame  # noqa: E402
from y9deploy.pre.host import letterbox_batch_u8  # noqa: E402


def timed(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return float(np.median(times))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--frame", default="1080x1920")
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--threads", default="1,4,8,16")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    h, w = (int(v) for v in args.frame.lower().split("x"))
    distinct = [synthetic_frame(h, w, seed=s) for s in range(16)]
    frames = [distinct[i % 16].copy() for i in range(args.batch)]  # separate buffers, as decoded video
    out = np.empty((args.batch, args.imgsz, args.imgsz, 3), np.uint8)
    rows = []
    default_cv = cv2.getNumThreads()
    for cv_threads in (default_cv, 1):
        cv2.setNumThreads(cv_threads)
        for n in [int(t) for t in args.threads.split(",")]:
            pool = ThreadPoolExecutor(n) if n > 1 else None
            step = -(-args.batch // n)
            parts = [(a, min(a + step, args.batch)) for a in range(0, args.batch, step)]

            def letterbox(parts=parts, pool=pool):
                if pool is None:
                    letterbox_batch_u8(frames, args.imgsz, out=out)
                    return
                futures = [
                    pool.submit(letterbox_batch_u8, frames[a:b], args.imgsz, out=out[a:b]) for a, b in parts
                ]
                for f in futures:
                    f.result()

            big = np.empty((args.batch, h, w, 3), np.uint8)

            def copy(parts=parts, pool=pool, big=big):
                if pool is None:
                    for k, f in enumerate(frames):
                        np.copyto(big[k], f)
                    return
                list(pool.map(lambda ab: [np.copyto(big[k], frames[k]) for k in range(*ab)], parts))

            for name, fn in (("letterbox_u8", letterbox), ("copy_frames", copy)):
                ms = timed(fn, args.repeat)
                row = {"op": name, "threads": n, "cv2_threads": cv_threads, "batch": args.batch,
                       "ms_per_batch": round(ms, 3), "frames_per_s": round(args.batch * 1000 / ms, 1)}  # fmt: skip
                rows.append(row)
                print(json.dumps(row), flush=True)
            if pool is not None:
                pool.shutdown()
    cv2.setNumThreads(default_cv)
    if args.json:
        args.json.write_text(json.dumps({"cpus": os.cpu_count(), "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
