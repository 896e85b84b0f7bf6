"""Allowed ranges of numeric settings, and the one check that refuses a value outside its range.

A table maps a field name to a ``Range``; ``check_ranges`` walks it and raises one sentence naming the key,
the value and the allowed range (``hyperparameter mosaic=2.0; expected a value in [0, 1] (a probability).``).
NaN is outside every range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Range:
    """``lo <= value <= hi`` (``lo < value`` / ``value < hi`` where open); ``what`` explains the range."""

    lo: float = -math.inf
    hi: float = math.inf
    lo_open: bool = False
    hi_open: bool = False
    what: str = ""

    def contains(self, value: float) -> bool:
        if value != value:  # NaN
            return False
        above = value > self.lo if self.lo_open else value >= self.lo
        below = value < self.hi if self.hi_open else value <= self.hi
        return above and below

    def describe(self) -> str:
        if self.hi == math.inf:
            text = f"a value {'>' if self.lo_open else '>='} {self.lo:g}"
        else:
            text = f"a value in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}{')' if self.hi_open else ']'}"
        return f"{text} ({self.what})" if self.what else text


PROBABILITY = Range(0.0, 1.0, what="a probability")
NON_NEGATIVE = Range(0.0)
POSITIVE = Range(0.0, lo_open=True)
FRACTION = Range(0.0, 1.0, what="a fraction")


def check_ranges(obj: object, table: dict[str, Range], kind: str = "hyperparameter") -> None:
    """Raise ``ValueError`` for the first field of ``obj`` named in ``table`` whose value is outside its range."""
    for name, allowed in table.items():
        value = getattr(obj, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not allowed.contains(value):
            raise ValueError(f"{kind} {name}={value!r}; expected {allowed.describe()}.")
