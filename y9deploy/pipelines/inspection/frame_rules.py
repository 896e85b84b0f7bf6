"""Inspection: regions of interest on a fixed camera view, per-class thresholds, and count rules per region.

    rules = [Rule("weld", roi=(100, 80, 900, 600), classes=[0, 3], max_count=0, min_conf=0.5),
             Rule("screws", polygon=[(0, 0), (400, 0), (200, 300)], classes=[5], min_count=4, max_count=4)]
    result = inspect(detector.predict(frame), rules, thresholds=Thresholds.of({0: ClassThreshold(0.6)}))
    if not result.passed: reject(result.reasons)

Order of the checks for one frame:
1. ``thresholds`` drop the detections of each class below its minimum score, area, width or height
   (classes without an entry use ``Thresholds.default``);
2. each rule counts the remaining detections of its classes (at least its own ``min_conf``/``min_area``)
   whose box centre lies inside its region (or, with ``min_overlap``, that fraction of whose area does);
3. a rule fails when that count is below ``min_count`` or above ``max_count`` (``None``: no maximum).
A frame passes when every rule holds. The rules file (``y9deploy.pipelines.inspection.rules_file``) builds these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from y9deploy.detections import Detections
from y9deploy.tracking.regions import Region


@dataclass(frozen=True)
class ClassThreshold:
    """Minimum score (``confidence >= min_conf``) and sizes (pixels) a detection needs to be counted."""

    min_conf: float = 0.0
    min_area: float = 0.0
    min_width: float = 0.0
    min_height: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_conf <= 1.0:
            raise ValueError(f"min_conf={self.min_conf}; expected a score in [0, 1].")
        for key in ("min_area", "min_width", "min_height"):
            if getattr(self, key) < 0:
                raise ValueError(f"{key}={getattr(self, key)}; expected 0 or more pixels.")

    def keep(self, dets: Detections) -> np.ndarray:
        """Boolean mask ndarray[N] of the detections that meet every minimum."""
        b = dets.xyxy
        return (
            (dets.confidence >= self.min_conf)
            & (dets.area >= self.min_area)
            & ((b[:, 2] - b[:, 0]) >= self.min_width)
            & ((b[:, 3] - b[:, 1]) >= self.min_height)
        )


@dataclass(frozen=True)
class Thresholds:
    """``default`` for every class, ``per_class`` (class id -> ClassThreshold) overriding it."""

    default: ClassThreshold = field(default_factory=ClassThreshold)
    per_class: Mapping[int, ClassThreshold] = field(default_factory=dict)

    @classmethod
    def of(cls, per_class: Mapping[int, ClassThreshold], default: ClassThreshold | None = None) -> Thresholds:
        return cls(default or ClassThreshold(), dict(per_class))

    def keep(self, dets: Detections) -> np.ndarray:
        mask = self.default.keep(dets)
        for cid, th in self.per_class.items():
            sel = dets.class_id == int(cid)
            if sel.any():
                mask = np.where(sel, th.keep(dets), mask)
        return mask

    @property
    def lowest_conf(self) -> float:
        """The lowest score any class accepts (what the detector itself must keep)."""
        return min([self.default.min_conf, *(t.min_conf for t in self.per_class.values())])


@dataclass(frozen=True)
class Rule:
    """One count rule.

    Attributes:
        name: shown in the reasons.
        roi: (x1, y1, x2, y2) in frame pixels, a ``Region``, or None for the whole frame.
        classes: class ids that count (None: every class).
        max_count: most such detections allowed (0: any one fails the part; None: no maximum).
        min_count: fewest such detections required (e.g. 4 screws present).
        min_conf: detections below this score are ignored (on top of the per-class thresholds).
        min_area: detections smaller than this (pixels) are ignored.
        min_overlap: None: centre-in-region; else the fraction of a box's area that must lie in the region.
        polygon: [(x, y), ...] vertices of a polygonal region (instead of ``roi``).
    """

    name: str
    roi: tuple[float, float, float, float] | Region | None = None
    classes: Sequence[int] | None = None
    max_count: int | None = 0
    min_conf: float = 0.0
    min_area: float = 0.0
    min_overlap: float | None = None
    min_count: int = 0
    polygon: Sequence[Sequence[float]] | None = None

    def __post_init__(self) -> None:
        if self.polygon is not None:
            if self.roi is not None:
                raise ValueError(f"rule {self.name!r}: give roi or polygon, not both.")
            object.__setattr__(self, "roi", Region(self.name, polygon=np.asarray(self.polygon, np.float64)))
        elif self.roi is not None and not isinstance(self.roi, Region):
            if len(self.roi) != 4:
                raise ValueError(f"rule {self.name!r}: roi {self.roi} is not (x1, y1, x2, y2).")
            x1, y1, x2, y2 = self.roi
            if not (x2 > x1 and y2 > y1):
                raise ValueError(
                    f"rule {self.name!r}: roi {self.roi} is empty; expected (x1, y1, x2, y2) with x2 > x1, y2 > y1."
                )
        if self.max_count is not None and self.max_count < 0:
            raise ValueError(f"rule {self.name!r}: max_count={self.max_count}; expected 0 or more.")
        if self.min_count < 0:
            raise ValueError(f"rule {self.name!r}: min_count={self.min_count}; expected 0 or more.")
        if self.max_count is not None and self.min_count > self.max_count:
            raise ValueError(
                f"rule {self.name!r}: min_count={self.min_count} is above max_count={self.max_count}; no frame "
                "could pass."
            )
        if self.min_overlap is not None and not 0 < self.min_overlap <= 1:
            raise ValueError(
                f"rule {self.name!r}: min_overlap={self.min_overlap}; expected a fraction in (0, 1]."
            )

    @property
    def region(self) -> Region | None:
        if self.roi is None or isinstance(self.roi, Region):
            return self.roi
        return Region(self.name, rect=tuple(self.roi))

    def select(self, dets: Detections) -> np.ndarray:
        """Boolean mask ndarray[N] of the detections this rule counts."""
        ok = (dets.confidence >= self.min_conf) & (dets.area >= self.min_area)
        if self.classes is not None:
            ok &= np.isin(dets.class_id, np.asarray(list(self.classes), np.int64))
        region = self.region
        if region is None or not len(dets):
            return ok
        if self.min_overlap is None:
            return ok & region.contains_centres(dets.xyxy)
        return ok & (region.overlap_fraction(dets.xyxy) >= self.min_overlap)


@dataclass
class InspectionResult:
    """``passed``: every rule held. ``counts``: detections counted per rule; ``reasons``: one sentence per
    failed rule; ``detections``: the counted detections per rule; ``kept``: the detections that met the
    per-class thresholds."""

    passed: bool
    counts: dict[str, int] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    detections: dict[str, Detections] = field(default_factory=dict)
    kept: Detections | None = None

    @property
    def verdict(self) -> str:
        return "pass" if self.passed else "fail"

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "verdict": self.verdict, "counts": dict(self.counts),
                "reasons": list(self.reasons),
                "detections": {k: v.to_dict()["detections"] for k, v in self.detections.items()}}  # fmt: skip


def _n(count: int) -> str:
    return f"{count} detection" if count == 1 else f"{count} detections"


def _found(hit: Detections) -> str:
    return ", ".join(f"{n} {s:.2f}" for n, s in zip(hit.class_names, hit.confidence.tolist()))


def inspect(
    dets: Detections, rules: Sequence[Rule], thresholds: Thresholds | None = None
) -> InspectionResult:
    """Apply ``thresholds`` then ``rules`` to the detections of one frame (see the module docstring)."""
    if not rules:
        raise ValueError("inspect() got no rules; expected at least one Rule.")
    names = [r.name for r in rules]
    if len(set(names)) != len(names):
        raise ValueError(f"rule names {names} repeat; expected one name per rule.")
    kept = dets[thresholds.keep(dets)] if thresholds is not None else dets
    result = InspectionResult(passed=True, kept=kept)
    for rule in rules:
        hit = kept[rule.select(kept)]
        n = len(hit)
        result.counts[rule.name] = n
        result.detections[rule.name] = hit
        if rule.max_count is not None and n > rule.max_count:
            result.passed = False
            result.reasons.append(f"{rule.name}: {_n(n)} (at most {rule.max_count} allowed): {_found(hit)}.")
        elif n < rule.min_count:
            result.passed = False
            found = f": {_found(hit)}" if n else ""
            result.reasons.append(f"{rule.name}: {_n(n)} (at least {rule.min_count} required){found}.")
    return result
