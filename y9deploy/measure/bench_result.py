"""How a benchmark reports: ``BenchmarkResult`` (one ``BenchmarkCase`` per model and batch size, with
``StageStats`` per stage), its plain table (``str(result)``, ``rows``), its JSON (``save``, ``load``) and ``compare``,
the regression table against an earlier JSON. ``y9deploy.measure.bench`` measures and fills one; nothing here prints.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

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
        from y9core.files.atomic_write import atomic_write

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
