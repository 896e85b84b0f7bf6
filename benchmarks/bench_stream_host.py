"""Where the host time of ``Detector.predict_stream`` goes on a GPU, and how the letterbox thread pool size and
OpenCV's own threads change throughput (one Detector, optionally torch.compile'd, reused for every setting).

    PYTHONPATH=. python benchmarks/bench_stream_host.py --batch 64 --iters 60 --compile --out "$OUT/host"

For each (pool workers, cv2 threads): img/s over ``--iters`` batches of 1080p frames (wall clock, after 5 warm-up
batches) and ``StreamRunner.profile`` (``det.pipeline.stream_runner.profile``) per batch: stage_* (the stage thread: waiting for its slot, the
letterbox, enqueuing the upload) and main_* (the main thread: waiting for the staged batch, launching it,
pulling the next, enqueuing post-processing, waiting for the rows, building Detections), caller (the loop
consuming the results). Writes ``stream_host.json`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import cv2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "bench-out")) / "host")
    ap.add_argument("--work", type=Path, default=Path("/tmp/y9-bench-work"))
    ap.add_argument("--model", default="yolov9-s")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--candidates", type=int, default=100)
    ap.add_argument("--workers", default="16,12,8")
    ap.add_argument("--cv-threads", default="default,1")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--frame", default="1080x1920")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    from bench_detector_gpu import pick_conf  # beside this script
    from random_weights import fixture_like_weights, reestimate_bn

    from y9deploy import Detector
    from y9deploy.measure.bench import synthetic_frame
    from y9deploy.pre.host import prepare
    from y9deploy.runtime.gpu_pipeline import GpuPipeline
    from y9train.checkpoints.load import save_checkpoint
    from y9train.models import build_model

    h, w = (int(v) for v in args.frame.split("x"))
    distinct = [synthetic_frame(h, w, seed=s) for s in range(16)]
    model = build_model(args.model)
    fixture_like_weights(model)
    blob, _ = prepare(distinct, 640)
    reestimate_bn(model, [blob[:8], blob[8:]], "cuda")
    pt = save_checkpoint(model, args.work / f"{args.model}.pt")
    frames = [distinct[i % 16] for i in range(args.batch)]
    rows = []
    default_cv = cv2.getNumThreads()
    with Detector(pt, device="cuda", compile=args.compile) as det:
        conf = pick_conf(det, distinct, args.candidates)
        stream = det.pipeline.stream  # the Detector's CUDA stream, which the backend runs on
        for workers in [int(x) for x in args.workers.split(",")]:
            for cv_threads in args.cv_threads.split(","):
                cv2.setNumThreads(default_cv if cv_threads == "default" else int(cv_threads))
                det.pipeline = pipe = GpuPipeline(det.backend, det.info, stream=stream, workers=workers)
                profile = pipe.stream_runner.profile
                for _ in det.predict_stream((frames for _ in range(5)), conf=conf):
                    pass
                profile.reset()
                n_det = 0
                t0 = time.perf_counter()
                for dets in det.predict_stream((frames for _ in range(args.iters)), conf=conf):
                    n_det += sum(len(d) for d in dets)
                sec = time.perf_counter() - t0
                row = {"workers": workers, "cv2_threads": cv2.getNumThreads(), "batch": args.batch,
                       "img_per_s": round(args.batch * args.iters / sec, 1),
                       "ms_per_batch": round(sec * 1000 / args.iters, 2),
                       "detections_per_image": round(n_det / (args.batch * args.iters), 1),
                       "post_impl": str(pipe.post), "pre_impl": str(pipe.pre),
                       "host_ms_per_batch": profile.per_call()}  # fmt: skip
                rows.append(row)
                print(json.dumps(row), flush=True)
    cv2.setNumThreads(default_cv)
    out = {"args": {k: str(v) for k, v in vars(args).items()}, "cpus": os.cpu_count(), "rows": rows}
    (args.out / "stream_host.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
