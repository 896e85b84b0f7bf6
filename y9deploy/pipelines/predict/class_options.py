"""Class selection and per-class thresholds given by name or id (``--classes person,2``,
``--class-conf person=0.5``), resolved against a model's class names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def class_id(token: str | int, names: Sequence[str]) -> int:
    """A class name (exact, then case-insensitive) or id -> the id; ValueError naming the token and the classes."""
    if isinstance(token, (int, np.integer)):
        k = int(token)
    else:
        text = str(token).strip()
        if text in names:
            return list(names).index(text)
        lower = [n.lower() for n in names]
        if text.lower() in lower:
            return lower.index(text.lower())
        if not text.lstrip("-").isdigit():
            shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
            raise ValueError(f"class {text!r} is not a class of this model; expected an id 0..{len(names) - 1} "
                             f"or one of: {shown}.")  # fmt: skip
        k = int(text)
    if not 0 <= k < len(names):
        raise ValueError(f"class id {k} is out of range; this model has classes 0..{len(names) - 1}.")
    return k


def resolve_classes(tokens: Sequence[str | int] | None, names: Sequence[str]) -> list[int] | None:
    """Names and/or ids -> sorted unique class ids (None: every class)."""
    if tokens is None:
        return None
    ids = sorted({class_id(t, names) for t in tokens if str(t).strip()})
    return ids or None


def parse_class_conf(items: Sequence[str]) -> dict[str, float]:
    """``["person=0.5", "2=0.3"]`` -> ``{"person": 0.5, "2": 0.3}``; ValueError for a malformed item."""
    out: dict[str, float] = {}
    for item in items:
        key, sep, value = str(item).rpartition("=")
        try:
            v = float(value)
        except ValueError:
            v = -1.0
        if not sep or not key.strip() or not 0 <= v <= 1:
            raise ValueError(f"class threshold {item!r} is malformed; expected CLASS=VALUE with CLASS a name or "
                             "id and VALUE in [0, 1], e.g. person=0.5.")  # fmt: skip
        out[key.strip()] = v
    return out


def class_thresholds(
    default: float, per_class: Mapping[str | int, float], names: Sequence[str]
) -> np.ndarray:
    """One score threshold per class: ``default`` everywhere, ``per_class`` (by name or id) where given."""
    conf = np.full(len(names), float(default), np.float64)
    for key, value in per_class.items():
        conf[class_id(key, names)] = float(value)
    return conf
