"""Latency and throughput of a Detector, per model and batch size, by stage.

``benchmark(path, batch_sizes=(1, 8, 32))`` runs ``warmup`` untimed calls, then ``iters`` timed calls of
``Detector.predict`` on full-size frames (1080p by default) and returns a ``BenchmarkResult``: p50, p90,
p99, max and mean (milliseconds) of pre-processing, inference, post-processing and end to end, and images per
second. On a GPU the stages are timed with CUDA events recorded on the Detector's stream (what the GPU did,
not when the host returned); end to end is always the host's wall clock around ``predict``. With
``idle_ms`` the calls are spaced apart as in a camera loop (clocks drop, caches go cold: the latency a
real-time application sees). With ``stream=True`` the batches go through ``Detector.predict_stream``
(mode "stream" in the JSON): img/s of the pipelined loop. Each case names the pre- and post-processing
implementations that ran (``pipeline``, ``pre_impl``, ``post_impl``: ``Detector.choice()``).

This module measures; how the results report (table, JSON, ``compare`` against an earlier JSON) is
``y9deploy.measure.bench_result``, whose names are re-exported here. Nothing here prints: the CLI does.
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from y9core.wording import count_range
from y9deploy.measure.bench_result import (  # noqa: F401 - the records and compare are part of this API
    COMPARED,
    BenchmarkCase,
    BenchmarkResult,
    ComparisonRow,
    StageStats,
    compare,
)
from y9deploy.measure.stage_timer import STAGES, StageTimer  # noqa: F401 - StageTimer is part of this API


# ------------------------------------------------------------------------------------------------ frames, machine
def synthetic_frame(h: int = 1080, w: int = 1920, seed: int = 0) -> np.ndarray:
    """A deterministic smooth colour scene (ndarray[h, w, 3] uint8 BGR): low-frequency noise upscaled."""
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (max(2, h // 60), max(2, w // 60), 3), dtype=np.uint8)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)


def machine_info() -> dict[str, Any]:
    """Platform, CPU count, library versions and the GPU (from y9deploy.measure.doctor)."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
        "opencv": cv2.__version__,
    }
    try:
        from y9deploy.measure.doctor import diagnose

        report = diagnose()
        info["gpus"] = [asdict(g) for g in report.gpus]
        info["torch"] = report.torch
        info["onnxruntime"] = report.onnxruntime
    except Exception as exc:  # noqa: BLE001 - a benchmark never fails because a description did
        info["doctor_error"] = str(exc)
    return info


# ------------------------------------------------------------------------------------------------ benchmark
def _bench_case(
    det: Any,
    path: Path,
    batch: int,
    frames: list[np.ndarray],
    *,
    iters: int,
    warmup: int,
    idle_ms: float,
    stream: bool = False,
) -> BenchmarkCase:
    batch_frames = [frames[i % len(frames)] for i in range(batch)]
    pipe = det.pipeline
    cuda = bool(pipe.cuda)
    timer = StageTimer(cuda=cuda)
    samples: dict[str, list[float]] = {s: [] for s in STAGES}
    run = _bench_stream if stream else _bench_predict
    n_dets = run(det, batch_frames, timer, samples, iters=iters, warmup=warmup, idle_ms=idle_ms)
    stats = {s: StageStats.of(samples[s]) for s in STAGES}
    choice = det.choice()  # after the runs: a fallback while running shows
    total_s = sum(samples["e2e"]) / 1000.0
    return BenchmarkCase(
        model=path.name,
        backend=det.backend.name,
        device=det.device,
        batch=batch,
        imgsz=list(det.imgsz),
        frame_hw=list(batch_frames[0].shape[:2]),
        iters=iters,
        warmup=warmup,
        idle_ms=float(idle_ms),
        timer="cuda-events" if cuda else "host",
        preprocess=_options(pipe),
        stages=stats,
        img_per_s=batch * iters / total_s if total_s > 0 else 0.0,
        detections_per_image=n_dets / max(1, batch * iters),
        mode="stream" if stream else "predict",
        pre_impl=choice["preprocess"],
        post_impl=choice["postprocess"],
        pipeline=choice["pipeline"],
    )


def _options(pipe: Any) -> str:
    """The placement options of ``pipe``, as the ``preprocess`` field has always said them."""
    if str(pipe.pre) == "host":
        return "cpu"
    return f"{pipe.pre}/post-{getattr(pipe, 'post_option', pipe.post)}"


def _bench_predict(
    det: Any,
    batch_frames: list[np.ndarray],
    timer: StageTimer,
    samples: dict[str, list[float]],
    *,
    iters: int,
    warmup: int,
    idle_ms: float,
) -> int:
    """``iters`` timed ``predict`` calls after ``warmup`` (at least one: CUDA graphs are captured on the first
    call of a batch size). Returns the number of detections over the timed calls."""
    for _ in range(max(warmup, 1)):
        det.predict(batch_frames)
    n_dets = 0
    for _ in range(iters):
        if idle_ms > 0:
            time.sleep(idle_ms / 1000.0)
        timer.reset()
        t0 = time.perf_counter()
        dets = det.predict(batch_frames, timer=timer)
        samples["e2e"].append((time.perf_counter() - t0) * 1000.0)
        for stage, ms in timer.stages_ms().items():
            samples[stage].append(ms)
        n_dets += sum(len(d) for d in dets)
    return n_dets


def _bench_stream(
    det: Any,
    batch_frames: list[np.ndarray],
    timer: StageTimer,
    samples: dict[str, list[float]],
    *,
    iters: int,
    warmup: int,
    idle_ms: float,
) -> int:
    """``iters`` batches timed through one ``predict_stream`` after ``warmup`` (at least one) untimed ones.

    e2e of a batch is the interval between consecutive results (the steady-state cost of a batch while the
    next one's letterbox overlaps it); pre is what is left on the critical path (upload and normalisation),
    infer and post as in predict mode. Returns the number of detections over the timed batches.
    """
    warm = max(warmup, 1)
    batches = (batch_frames for _ in range(warm + iters))
    if idle_ms > 0:
        batches = (_slept(b, idle_ms) for b in batches)
    results = det.predict_stream(batches, timer=timer)
    for _ in range(warm):
        next(results)
    n_dets = 0
    t_prev = time.perf_counter()
    for _ in range(iters):
        timer.reset()
        dets = next(results)
        now = time.perf_counter()
        samples["e2e"].append((now - t_prev) * 1000.0)
        t_prev = now
        for stage, ms in timer.stages_ms().items():
            samples[stage].append(ms)
        n_dets += sum(len(d) for d in dets)
    results.close()
    return n_dets


def _slept(batch: list[np.ndarray], idle_ms: float) -> list[np.ndarray]:
    time.sleep(idle_ms / 1000.0)
    return batch


def batch_refusal(path: Path, lo: int, hi: int, bad: list[int]) -> str:
    """The sentence for batch sizes a model cannot take: a static batch says how to get a model that can."""
    asked = ", ".join(map(str, bad))
    if lo == hi:
        how = ("y9 build-engine --batch 1:8:16 builds an engine with a batch range" if path.suffix == ".engine" else
               "y9 export --dynamic-batch exports an ONNX that takes any batch")  # fmt: skip
        return (f"{path.name} has a static batch of {count_range(lo, hi, 'image')}, so it cannot be benchmarked at "
                f"batch {asked}; expected --batch {lo} (batch_sizes=({lo},)), or a model made for batches: {how}.")
    return f"{path.name} accepts batches of {count_range(lo, hi, 'image')}, not {asked}."


def benchmark(
    path: str | Path | list[str | Path],
    *,
    batch_sizes: tuple[int, ...] | list[int] = (1,),
    iters: int = 100,
    warmup: int = 10,
    idle_ms: float = 0.0,
    device: str | int | None = None,
    frame_hw: tuple[int, int] = (1080, 1920),
    frames: list[np.ndarray] | None = None,
    progress: Any = None,
    stream: bool = False,
    **detector_kwargs: Any,
) -> BenchmarkResult:
    """Benchmark one model file or several (``Detector`` per model, every batch size).

    Args:
        path: a model file (.engine/.onnx/.pt) or a list of them.
        batch_sizes: batch sizes to run (each within what the model accepts).
        iters: timed calls per batch size; warmup: untimed calls before them.
        idle_ms: sleep between calls (camera-loop latency); 0 for back-to-back calls.
        device: as ``Detector``.
        frame_hw: size of the synthetic frames (ignored when ``frames`` are given).
        frames: real frames (ndarray[H, W, 3] uint8 BGR) to use instead, cycled to fill a batch.
        progress: optional callable ``progress(model_name, batch)`` called before each case.
        stream: time ``Detector.predict_stream`` over ``iters`` consecutive batches (mode "stream": the
            letterbox of the next batch overlaps the device work of the current one; e2e is the interval
            between consecutive results) instead of ``iters`` separate ``predict`` calls (mode "predict").
        **detector_kwargs: passed to ``Detector`` (conf, iou, imgsz, half, preprocess, ...).
    """
    from y9deploy.runtime.detector import Detector

    paths = [Path(p) for p in (path if isinstance(path, (list, tuple)) else [path])]
    if not paths:
        raise ValueError("benchmark() got no model files; expected at least one path.")
    sizes = [int(b) for b in batch_sizes]
    if not sizes or min(sizes) < 1:
        raise ValueError(f"batch_sizes={list(batch_sizes)!r}; expected positive batch sizes.")
    if int(iters) < 1 or int(warmup) < 0 or idle_ms < 0:
        raise ValueError(
            f"iters={iters}, warmup={warmup}, idle_ms={idle_ms}: expected iters >= 1, warmup >= 0, idle_ms >= 0."
        )
    if frames is None:
        frames = [synthetic_frame(*frame_hw, seed=s) for s in range(4)]
    cases = []
    for p in paths:
        with Detector(p, device=device, **detector_kwargs) as det:
            lo, hi = det.backend.batch_range
            bad = [b for b in sizes if not lo <= b <= hi]
            if bad:
                raise ValueError(batch_refusal(p, lo, hi, bad))
            for b in sizes:
                if progress is not None:
                    progress(p.name, b)
                cases.append(
                    _bench_case(
                        det,
                        p,
                        b,
                        frames,
                        iters=int(iters),
                        warmup=int(warmup),
                        idle_ms=idle_ms,
                        stream=stream,
                    )
                )
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return BenchmarkResult(cases, machine_info(), created)
