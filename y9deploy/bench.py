"""Latency and throughput of a Detector, per model and batch size, by stage.

``benchmark(path, batch_sizes=(1, 8, 32))`` runs ``warmup`` untimed calls, then ``iters`` timed calls of
``Detector.predict`` on full-size frames (1080p by default) and returns a ``BenchmarkResult``: p50, p90,
p99, max and mean (milliseconds) of pre-processing, inference, post-processing and end to end, and images per
second. On a GPU the stages are timed with CUDA events recorded on the Detector's stream (what the GPU did,
not when the host returned); end to end is always the host's wall clock around ``predict``. With
``idle_ms`` the calls are spaced apart as in a camera loop (clocks drop, caches go cold: the latency a
real-time application sees). With ``stream=True`` the batches go through ``Detector.predict_stream``
(mode "stream" in the JSON): img/s of the pipelined loop. Each case names the pre- and post-processing
implementations that ran (``pipeline``, ``pre_impl``, ``post_impl``: ``Detector.choice()``). Results save to and load from JSON; ``compare``
gives the regression table against an earlier JSON. Nothing here prints: the CLI does.
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from y9core.wording import count_range
from y9deploy.stage_timer import STAGES, StageTimer  # noqa: F401 - StageTimer is part of this API

PERCENTILES = (50, 90, 99)


@dataclass
class StageStats:
    """Milliseconds over the timed iterations of one stage."""

    p50: float
    p90: float
    p99: float
    max: float
    mean: float

    @classmethod
    def of(cls, samples_ms: list[float] | np.ndarray) -> StageStats:
        a = np.asarray(samples_ms, dtype=np.float64)
        if a.size == 0:
            return cls(0.0, 0.0, 0.0, 0.0, 0.0)
        p50, p90, p99 = (float(np.percentile(a, q)) for q in PERCENTILES)
        return cls(p50, p90, p99, float(a.max()), float(a.mean()))


@dataclass
class BenchmarkCase:
    """One model at one batch size."""

    model: str
    backend: str
    device: str
    batch: int
    imgsz: list[int]
    frame_hw: list[int]
    iters: int
    warmup: int
    idle_ms: float
    timer: str  # "cuda-events" or "host"
    preprocess: str  # "cpu" (the host pipeline), else "<pre option>/post-<post option>" of the torch pipeline
    stages: dict[str, StageStats]
    img_per_s: float
    detections_per_image: float
    mode: str = "predict"  # "predict" (one call per batch) or "stream" (Detector.predict_stream)
    pre_impl: str = ""  # the pre-processing implementation that ran (y9deploy.pre.impl.PreImpl)
    post_impl: str = ""  # the post-processing implementation that ran (y9core.post.choice.PostImpl)
    pipeline: str = ""  # the frame pipeline that ran (y9deploy.runtime.frame_pipeline.PipelineImpl)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stages"] = {k: asdict(v) for k, v in self.stages.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BenchmarkCase:
        d = dict(d)
        d["stages"] = {k: StageStats(**v) for k, v in d["stages"].items()}
        return cls(**d)


@dataclass
class BenchmarkResult:
    """Every case of a benchmark run and the machine it ran on."""

    cases: list[BenchmarkCase]
    machine: dict[str, Any] = field(default_factory=dict)
    created: str = ""

    #: the columns of ``rows`` (and of ``y9 benchmark``'s table): p50 per stage and end to end p50/p99 in ms
    COLUMNS = ("model (backend, device)", "batch", "pre", "infer", "post", "e2e", "e2e p99", "img/s")

    def rows(self) -> list[tuple[str, ...]]:
        """One row of text per case, in ``COLUMNS`` order."""
        out = []
        for c in self.cases:
            s = c.stages
            where = f"{c.model} ({c.backend}, {c.device}{', stream' if c.mode == 'stream' else ''})"
            times = (s["pre"].p50, s["infer"].p50, s["post"].p50, s["e2e"].p50, s["e2e"].p99)
            out.append((where, str(c.batch), *(f"{t:.2f}" for t in times), f"{c.img_per_s:.1f}"))
        return out

    def __str__(self) -> str:
        """The cases as a plain table (milliseconds; ``print(result)``)."""
        table = [self.COLUMNS, *self.rows()]
        widths = [max(len(r[i]) for r in table) for i in range(len(self.COLUMNS))]
        lines = ["  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths)))
                 for r in table]  # fmt: skip
        return "\n".join(line.rstrip() for line in lines)

    def to_dict(self) -> dict[str, Any]:
        return {"created": self.created, "machine": self.machine, "cases": [c.to_dict() for c in self.cases]}

    def save(self, path: str | Path) -> Path:
        from y9core.atomic_write import atomic_write

        return atomic_write(path, json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BenchmarkResult:
        return cls(
            [BenchmarkCase.from_dict(c) for c in d["cases"]], d.get("machine", {}), d.get("created", "")
        )

    @classmethod
    def load(cls, path: str | Path) -> BenchmarkResult:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"benchmark JSON {path} does not exist.")
        try:
            return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(
                f"{path} is not a y9 benchmark JSON ({exc}); expected the output of --json."
            ) from exc


# ------------------------------------------------------------------------------------------------ frames, machine
def synthetic_frame(h: int = 1080, w: int = 1920, seed: int = 0) -> np.ndarray:
    """A deterministic smooth colour scene (ndarray[h, w, 3] uint8 BGR): low-frequency noise upscaled."""
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (max(2, h // 60), max(2, w // 60), 3), dtype=np.uint8)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)


def machine_info() -> dict[str, Any]:
    """Platform, CPU count, library versions and the GPU (from y9deploy.doctor)."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
        "opencv": cv2.__version__,
    }
    try:
        from y9deploy.doctor import diagnose

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


# ------------------------------------------------------------------------------------------------ comparison
@dataclass
class ComparisonRow:
    """One metric of one (model, batch) case: old vs new. ``change`` is relative (+0.10 = 10% more);
    ``regression`` is True when the new value is worse by more than the threshold (slower, or fewer img/s)."""

    model: str
    batch: int
    metric: str  # "e2e.p50", "infer.p99", "img_per_s", ...
    old: float
    new: float
    change: float
    regression: bool
    notable: bool = False  # changed by more than the threshold, either way


COMPARED = ("pre.p50", "infer.p50", "post.p50", "e2e.p50", "e2e.p99", "img_per_s")


def compare(
    new: BenchmarkResult, old: BenchmarkResult | str | Path, *, threshold: float = 0.05
) -> list[ComparisonRow]:
    """Rows for every (model, batch, mode) present in both results, for the metrics in ``COMPARED``; a change is
    notable (``ComparisonRow.notable``) beyond ``threshold`` either way, a regression beyond it for the worse."""
    if not isinstance(old, BenchmarkResult):
        old = BenchmarkResult.load(old)
    before = {(c.model, c.batch, c.mode): c for c in old.cases}
    rows = []
    for case in new.cases:
        prev = before.get((case.model, case.batch, case.mode))
        if prev is None:
            continue
        for metric in COMPARED:
            if metric == "img_per_s":
                a, b, higher_is_better = prev.img_per_s, case.img_per_s, True
            else:
                stage, stat = metric.split(".")
                a, b = getattr(prev.stages[stage], stat), getattr(case.stages[stage], stat)
                higher_is_better = False
            change = (b - a) / a if a else 0.0
            worse = -change if higher_is_better else change
            rows.append(ComparisonRow(case.model, case.batch, metric, a, b, change, worse > threshold,
                                      abs(change) > threshold))  # fmt: skip
    return rows
