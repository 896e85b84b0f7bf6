"""Prediction options (conf, iou, max_det, classes, agnostic): validated once, overridable per call."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

ALLOWED = ("conf", "iou", "max_det", "classes", "agnostic")


@dataclass(frozen=True)
class PredictOptions:
    """Validated prediction settings.

    Attributes:
        conf: float, or ndarray[nc] of per-class thresholds (raw models only).
        iou: NMS IoU threshold.
        max_det: most detections per image.
        classes: ndarray[K] int64 of class ids to keep, or None.
        agnostic: class-agnostic NMS.
    """

    conf: Any = 0.25
    iou: float = 0.45
    max_det: int = 300
    classes: Any = None
    agnostic: bool = False

    def extras(self, names: tuple[str, ...]) -> dict[str, Any] | None:
        """Values for an end-to-end model's NMS inputs (those of ``names`` it has)."""
        if not names:
            return None
        values = {
            "score_threshold": float(np.min(self.conf)),
            "iou_threshold": float(self.iou),
            "max_output_boxes": int(self.max_det),
        }
        return {k: v for k, v in values.items() if k in names}


def _number(name: str, value: Any, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name}={value!r} is not a number; expected a value in [{lo}, {hi}].")
    if not lo <= float(value) <= hi:
        raise ValueError(f"{name}={value!r} is out of range; expected a value in [{lo}, {hi}].")
    return float(value)


def resolve_options(
    base: PredictOptions | None, overrides: dict[str, Any], *, nc: int, end2end: bool
) -> PredictOptions:
    """``base`` with ``overrides`` applied and checked against a model of ``nc`` classes.

    Raises:
        TypeError: an unknown option name, or a value of the wrong type.
        ValueError: a value out of range, a class id the model does not have, or an option the
            end-to-end model cannot honour (agnostic NMS, per-class thresholds).
    """
    unknown = sorted(set(overrides) - set(ALLOWED))
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; predict() accepts {', '.join(ALLOWED)}.")
    opts = base or PredictOptions()
    if not overrides:
        return opts
    values: dict[str, Any] = {}
    if "conf" in overrides:
        conf = overrides["conf"]
        if isinstance(conf, (list, tuple, np.ndarray)):
            arr = np.asarray(conf, dtype=np.float64)
            if arr.shape != (nc,):
                raise ValueError(
                    f"conf has shape {arr.shape}; expected one threshold per class ({nc},) or a number."
                )
            if not np.all((arr >= 0) & (arr <= 1)):
                raise ValueError(f"conf={conf!r} has values outside [0, 1].")
            if end2end:
                raise ValueError(
                    "per-class conf thresholds need a raw model; this end-to-end model applies one threshold."
                )
            values["conf"] = arr.astype(np.float32)
        else:
            values["conf"] = _number("conf", conf, 0.0, 1.0)
    if "iou" in overrides:
        values["iou"] = _number("iou", overrides["iou"], 0.0, 1.0)
    if "max_det" in overrides:
        md = overrides["max_det"]
        if isinstance(md, bool) or not isinstance(md, (int, np.integer)) or md < 1:
            raise ValueError(f"max_det={md!r}; expected a positive integer.")
        values["max_det"] = int(md)
    if "classes" in overrides:
        cls = overrides["classes"]
        if cls is None:
            values["classes"] = None
        else:
            ids = np.asarray([cls] if isinstance(cls, (int, np.integer)) else list(cls))
            if ids.size and (not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0 or ids.max() >= nc):
                raise ValueError(f"classes={cls!r}; expected class ids in [0, {nc - 1}] for this model.")
            values["classes"] = ids.astype(np.int64)
    if "agnostic" in overrides:
        if not isinstance(overrides["agnostic"], (bool, np.bool_)):
            raise TypeError(f"agnostic={overrides['agnostic']!r}; expected True or False.")
        if overrides["agnostic"] and end2end:
            raise ValueError(
                "agnostic=True needs a raw model; this end-to-end model runs per-class NMS inside."
            )
        values["agnostic"] = bool(overrides["agnostic"])
    return replace(opts, **values)
