"""Host pre/post-processing timings on ONE CPU thread: letterbox, prepare, postprocess.

    python benchmarks/bench_host_ops.py [--iters 300] [--json]

Targets (DESIGN.md): letterbox 1920x1080 -> 640 < 2 ms median; decode + NMS of a [1, 84, 8400] prediction
< 1 ms median at conf 0.25. Thread pools are pinned to one thread before numpy/OpenCV load.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import cv2  # noqa: E402
import numpy as np  # noqa: E402

from y9deploy.post.host import to_detections  # noqa: E402
from y9deploy.postprocess import postprocess  # noqa: E402
from y9deploy.pre.host import prepare  # noqa: E402
from y9deploy.preprocess import letterbox  # noqa: E402


def synthetic_prediction(seed: int = 0, nc: int = 80, imgsz: int = 640, n_objects: int = 40) -> np.ndarray:
    """A [1, 4+nc, A] raw output shaped like a trained detector's on a busy scene.

    Anchors of strides 8/16/32 (A = 8400 at 640). Background class scores are sigmoid(N(-9, 1)) (a few
    reach 0.01-0.05); each of ``n_objects`` objects lights up the anchors near its centre on the level that
    fits its size, with jittered boxes, a peak score decaying with the distance to the centre and a weaker
    second class. At seed 0: ~580 anchors above 0.25, ~6900 above 0.001.
    """
    rng = np.random.default_rng(seed)
    pts = []
    for s in (8, 16, 32):
        g = imgsz // s
        yy, xx = np.mgrid[0:g, 0:g]
        pts.append(np.stack([(xx.ravel() + 0.5) * s, (yy.ravel() + 0.5) * s, np.full(g * g, s)], 1))
    pts = np.concatenate(pts).astype(np.float32)
    a = len(pts)
    logits = rng.normal(-9.0, 1.0, (nc, a)).astype(np.float32)
    wh = np.exp(rng.uniform(np.log(8), np.log(160), (2, a))).astype(np.float32)
    xy = pts[:, :2].T + rng.normal(0, 2, (2, a)).astype(np.float32)
    for _ in range(n_objects):
        w, h = np.exp(rng.uniform(np.log(12), np.log(300), 2))
        cx, cy = rng.uniform(0, imgsz, 2)
        c = rng.integers(nc)
        d2 = ((pts[:, 0] - cx) / (w / 2)) ** 2 + ((pts[:, 1] - cy) / (h / 2)) ** 2
        level_ok = np.abs(np.log2(pts[:, 2] / max(min(w, h) / 4, 8))) <= 1
        m = (d2 < 0.35) & level_ok
        k = int(m.sum())
        xy[:, m] = np.array([[cx], [cy]]) + rng.normal(0, 0.05 * np.array([[w], [h]]), (2, k))
        wh[:, m] = np.array([[w], [h]]) * np.exp(rng.normal(0, 0.1, (2, k)))
        peak = rng.uniform(1.5, 4.0)
        logits[c, m] = np.maximum(logits[c, m], peak - 10.0 * d2[m] + rng.normal(0, 0.5, k))
        c2 = rng.integers(nc)
        logits[c2, m] = np.maximum(logits[c2, m], peak - 3.0 - 10.0 * d2[m])
    scores = 1 / (1 + np.exp(-logits))
    return np.concatenate([xy, wh, scores]).astype(np.float32)[None]


def measure(fn: Callable[[], object], iters: int, warmup: int = 10) -> dict[str, float]:
    """Median / p90 / min wall time of ``fn()`` in milliseconds."""
    for _ in range(warmup):
        fn()
    times = np.empty(iters)
    for i in range(iters):
        t0 = time.perf_counter_ns()
        fn()
        times[i] = time.perf_counter_ns() - t0
    ms = times / 1e6
    return {
        "median_ms": float(np.median(ms)),
        "p90_ms": float(np.percentile(ms, 90)),
        "min_ms": float(ms.min()),
    }


def run(iters: int) -> dict[str, object]:
    cv2.setNumThreads(1)
    frame = np.random.Generator(np.random.PCG64(7)).integers(0, 256, (1080, 1920, 3), np.uint8)
    pred = synthetic_prediction(0)
    blob, infos = prepare(frame, 640)
    rows = postprocess(pred)[0]
    buf4 = np.empty((4, 3, 640, 640), np.float32)
    cases: list[tuple[str, Callable[[], object], int]] = [
        ("letterbox 1920x1080 -> 640x640 (uint8 HWC)", lambda: letterbox(frame, 640), iters),
        ("prepare 1920x1080 -> [1,3,640,640] float32", lambda: prepare(frame, 640), iters),
        ("prepare 1920x1080 -> [1,3,640,640] float16", lambda: prepare(frame, 640, dtype=np.float16), iters),
        ("prepare 4 x 1920x1080 -> [4,3,640,640] float32", lambda: prepare([frame] * 4, 640), iters // 4),
        (
            "prepare 4 x 1920x1080 -> [4,3,640,640] float32, out= reused",
            lambda: prepare([frame] * 4, 640, out=buf4),
            iters // 4,
        ),
        ("postprocess [1,84,8400] conf 0.25 iou 0.45", lambda: postprocess(pred), iters),
        (
            "postprocess [1,84,8400] conf 0.001 iou 0.7",
            lambda: postprocess(pred, conf=0.001, iou=0.7),
            iters // 10,
        ),
        (
            "postprocess [1,84,8400] conf 0.001 iou 0.7 multi-label",
            lambda: postprocess(pred, conf=0.001, iou=0.7, multi_label=True),
            iters // 10,
        ),
        ("to_detections (scale back + Detections)", lambda: to_detections(rows, infos[0], []), iters),
    ]
    results = {name: measure(fn, max(n, 10)) for name, fn, n in cases}
    scores = pred[0, 4:]
    return {
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "opencv": cv2.__version__,
        "threads": 1,
        "iters": iters,
        "prediction": {
            "shape": list(pred.shape),
            "anchors_above_0.25": int((scores.max(0) > 0.25).sum()),
            "anchors_above_0.001": int((scores.max(0) > 0.001).sum()),
            "pairs_above_0.001": int((scores > 0.001).sum()),
            "detections_at_0.25": len(rows),
        },
        "results": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=300, help="timed iterations per case")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    report = run(args.iters)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    p = report["prediction"]
    print(
        f"numpy {report['numpy']}, OpenCV {report['opencv']}, 1 thread; prediction {p['shape']}: "
        f"{p['anchors_above_0.25']} anchors > 0.25 ({p['detections_at_0.25']} detections), "
        f"{p['anchors_above_0.001']} > 0.001, {p['pairs_above_0.001']} (anchor, class) pairs > 0.001"
    )
    width = max(len(k) for k in report["results"])
    print(f"{'case':<{width}}  {'median ms':>9}  {'p90 ms':>7}  {'min ms':>7}")
    for name, r in report["results"].items():
        print(f"{name:<{width}}  {r['median_ms']:>9.3f}  {r['p90_ms']:>7.3f}  {r['min_ms']:>7.3f}")


if __name__ == "__main__":
    main()
