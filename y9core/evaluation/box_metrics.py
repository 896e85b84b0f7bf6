"""``ValResult.box``: the figures of a validation under the names YOLO users read (``metrics.box.map`` ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class BoxMetrics:
    """Box detection figures (fractions in [0, 1]; nan where undefined).

    Attributes:
        map: mAP50-95. map50, map75: mAP at IoU 0.5 and 0.75. mp, mr: mean precision and recall.
        maps (ndarray[C] float64): mAP50-95 per class id 0..C-1 (C: one past the largest class id validated);
            a class without ground truth gets ``map``, as YOLO tools fill it.
        ap_class_index (ndarray[K] int64): the class ids that had ground truth.
    """

    map: float
    map50: float
    map75: float
    mp: float
    mr: float
    maps: np.ndarray
    ap_class_index: np.ndarray

    @classmethod
    def of(cls, metrics: dict[str, float], per_class: list[dict[str, Any]], nc: int | None = None) -> BoxMetrics:
        ids = np.array([int(r["class"]) for r in per_class], np.int64)
        aps = np.array([float(r.get("map50_95", np.nan)) for r in per_class], np.float64)
        size = nc if nc is not None else (int(ids.max()) + 1 if ids.size else 0)
        maps = np.full(size, float(metrics["map50_95"]), np.float64)
        known = (ids < size) & np.isfinite(aps)  # a class without ground truth keeps the overall figure
        maps[ids[known]] = aps[known]
        ids = ids[np.isfinite(aps)]
        return cls(float(metrics["map50_95"]), float(metrics["map50"]), float(metrics.get("map75", np.nan)),
                   float(metrics["precision"]), float(metrics["recall"]), maps, ids)  # fmt: skip

    def mean_results(self) -> list[float]:
        """[mp, mr, map50, map]."""
        return [self.mp, self.mr, self.map50, self.map]


def results_dict(metrics: dict[str, float]) -> dict[str, float]:
    """The figures under the keys YOLO tools write to their results (``metrics/mAP50-95(B)`` ...)."""
    return {"metrics/precision(B)": float(metrics["precision"]), "metrics/recall(B)": float(metrics["recall"]),
            "metrics/mAP50(B)": float(metrics["map50"]), "metrics/mAP50-95(B)": float(metrics["map50_95"]),
            "fitness": float(metrics["fitness"])}  # fmt: skip
