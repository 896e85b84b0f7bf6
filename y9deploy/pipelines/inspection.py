"""Inspection: regions of interest on a fixed camera view, and pass/fail rules per region.

    rules = [Rule("weld", roi=(100, 80, 900, 600), classes=[0, 3], max_count=0, min_conf=0.5)]
    result = inspect(detector.predict(frame), rules)
    if not result.passed: reject(result.reasons)

A detection belongs to a region when its box centre lies inside the region (or, with ``min_overlap``, when that
fraction of its area does). A rule fails when more than ``max_count`` detections of its classes, each at least
``min_conf`` and ``min_area`` pixels, fall in its region.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from y9deploy.detections import Detections


@dataclass(frozen=True)
class Rule:
    """One pass/fail rule.

    Attributes:
        name: shown in the reasons.
        roi: (x1, y1, x2, y2) in frame pixels; None for the whole frame.
        classes: class ids that count (None: every class).
        max_count: most such detections allowed (0: any one fails the part).
        min_conf: detections below this score are ignored.
        min_area: detections smaller than this (pixels) are ignored.
        min_overlap: None: centre-in-region; else the fraction of a box's area that must lie in the region.
    """

    name: str
    roi: tuple[float, float, float, float] | None = None
    classes: Sequence[int] | None = None
    max_count: int = 0
    min_conf: float = 0.0
    min_area: float = 0.0
    min_overlap: float | None = None

    def __post_init__(self) -> None:
        if self.roi is not None:
            x1, y1, x2, y2 = self.roi
            if not (x2 > x1 and y2 > y1):
                raise ValueError(
                    f"rule {self.name!r}: roi {self.roi} is empty; expected (x1, y1, x2, y2) with x2 > x1, y2 > y1."
                )
        if self.max_count < 0:
            raise ValueError(f"rule {self.name!r}: max_count={self.max_count}; expected 0 or more.")
        if self.min_overlap is not None and not 0 < self.min_overlap <= 1:
            raise ValueError(
                f"rule {self.name!r}: min_overlap={self.min_overlap}; expected a fraction in (0, 1]."
            )

    def select(self, dets: Detections) -> np.ndarray:
        """Boolean mask ndarray[N] of the detections this rule counts."""
        ok = (dets.confidence >= self.min_conf) & (dets.area >= self.min_area)
        if self.classes is not None:
            ok &= np.isin(dets.class_id, np.asarray(list(self.classes), np.int64))
        if self.roi is None:
            return ok
        x1, y1, x2, y2 = self.roi
        b = dets.xyxy
        if self.min_overlap is None:
            cx, cy = (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2
            return ok & (cx >= x1) & (cx <= x2) & (cy >= y1) & (cy <= y2)
        iw = np.clip(np.minimum(b[:, 2], x2) - np.maximum(b[:, 0], x1), 0, None)
        ih = np.clip(np.minimum(b[:, 3], y2) - np.maximum(b[:, 1], y1), 0, None)
        with np.errstate(invalid="ignore", divide="ignore"):
            frac = np.where(dets.area > 0, iw * ih / dets.area, 0.0)
        return ok & (frac >= self.min_overlap)


@dataclass
class InspectionResult:
    """``passed``: every rule held. ``counts``: detections counted per rule; ``reasons``: one sentence per
    failed rule; ``detections``: the counted detections per rule."""

    passed: bool
    counts: dict[str, int] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    detections: dict[str, Detections] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "counts": dict(self.counts), "reasons": list(self.reasons),
                "detections": {k: v.to_dict()["detections"] for k, v in self.detections.items()}}  # fmt: skip


def inspect(dets: Detections, rules: Sequence[Rule]) -> InspectionResult:
    """Apply ``rules`` to the detections of one frame."""
    if not rules:
        raise ValueError("inspect() got no rules; expected at least one Rule.")
    names = [r.name for r in rules]
    if len(set(names)) != len(names):
        raise ValueError(f"rule names {names} repeat; expected one name per rule.")
    result = InspectionResult(passed=True)
    for rule in rules:
        mask = rule.select(dets)
        hit = dets[mask]
        result.counts[rule.name] = len(hit)
        result.detections[rule.name] = hit
        if len(hit) > rule.max_count:
            result.passed = False
            found = ", ".join(f"{n} {s:.2f}" for n, s in zip(hit.class_names, hit.confidence.tolist()))
            result.reasons.append(
                f"{rule.name}: {len(hit)} detections (at most {rule.max_count} allowed): {found}."
            )
    return result
