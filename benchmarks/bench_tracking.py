"""What tracking adds per frame on ONE CPU thread: y9's ByteTrack / BoT-SORT (and, for comparison, supervision's
ByteTrack when it is installed), at 100 detections a frame, plus line and zone counting.

    python benchmarks/bench_tracking.py [--objects 100] [--frames 300] [--json out.json]

Target (issue 36): tracking adds at most 1 ms per frame at 100 detections (median over the frames after the
first 20). The scene: ``--objects`` boxes of 40x40 px on a 10-column grid of a 1920x1080 frame moving 2 px per
frame, with 0.5 px noise and random scores in [0.3, 0.95] (a busy drone view: every object tracked).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from y9deploy.detections import Detections  # noqa: E402
from y9deploy.tracking.counting import Counting, CountLine, Zone  # noqa: E402
from y9deploy.tracking.tracker import make_tracker  # noqa: E402


def scene(objects: int, frames: int, seed: int = 0) -> list[Detections]:
    rng = np.random.default_rng(seed)
    cols = 10
    grid = np.stack([np.arange(objects) % cols * 180 + 20, np.arange(objects) // cols * 100 + 20], 1).astype(float)
    out = []
    for t in range(frames):
        p = grid + 2 * t
        box = np.concatenate([p, p + 40], 1) + rng.normal(0, 0.5, (objects, 4))
        out.append(Detections(box, rng.uniform(0.3, 0.95, objects), np.zeros(objects, int), ["object"]))
    return out


def median_ms(step, frames: list[Detections], skip: int = 20) -> tuple[float, float]:
    times = []
    for k, dets in enumerate(frames):
        t0 = time.perf_counter()
        step(k, dets)
        times.append((time.perf_counter() - t0) * 1e3)
    rest = np.asarray(times[skip:])
    return float(np.median(rest)), float(np.percentile(rest, 90))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=100)
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    frames = scene(args.objects, args.frames)
    rows = []
    for kind in ("bytetrack", "botsort"):
        tracker = make_tracker(kind, fps=30)
        rows.append((f"y9 {kind}", *median_ms(lambda k, d, tr=tracker: tr.update(d, t=k / 30), frames)))
    tracker = make_tracker("bytetrack", fps=30)
    counting = Counting([CountLine.parse("0,540,1920,540", "mid")], [Zone.parse("0,0,960,0,960,540,0,540", "nw")])

    def track_and_count(k: int, d: Detections) -> None:
        counting.update(d, tracker.update(d, t=k / 30), k / 30)

    rows.append(("y9 bytetrack + 1 line + 1 zone", *median_ms(track_and_count, frames)))
    try:
        import supervision as sv
    except ImportError:
        sv = None
    if sv is not None and hasattr(sv, "ByteTrack"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = sv.ByteTrack()
        as_sv = [sv.Detections(xyxy=d.xyxy, confidence=d.confidence, class_id=d.class_id) for d in frames]
        rows.append((f"supervision {sv.__version__} ByteTrack (reference)",
                     *median_ms(lambda k, d: ref.update_with_detections(as_sv[k]), frames)))  # fmt: skip
    print(f"{args.objects} detections a frame, {args.frames} frames, one thread ({platform.processor() or platform.machine()})")
    print("| case | median ms | p90 ms |\n|---|---:|---:|")
    for name, med, p90 in rows:
        print(f"| {name} | {med:.3f} | {p90:.3f} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([{"case": n, "median_ms": m, "p90_ms": p} for n, m, p in rows], fh, indent=1)


if __name__ == "__main__":
    main()
