"""Counts, ranges and changes in messages, read as English: "1 object", "3 objects", "batches of 1 image",
"batches of 1 to 4 images", "a drop of 0.27 points", "a gain of 0.27 points" (never "1 objects", "1 to 1 images" or
"a drop of -0.27")."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

_IRREGULAR = {"batch": "batches", "box": "boxes", "class": "classes", "index": "indices"}


def plural_of(word: str) -> str:
    return _IRREGULAR.get(word, word + "s")


def plural(n: int | float, word: str, many: str | None = None) -> str:
    """``"1 object"``, ``"0 objects"``, ``"12 objects"`` (``many``: the plural when not ``word + "s"``)."""
    return f"{n} {word if n == 1 else (many or plural_of(word))}"


def count_range(lo: int, hi: int, word: str, many: str | None = None) -> str:
    """``"1 image"`` (lo == hi == 1), ``"4 images"``, ``"1 to 4 images"``."""
    if lo == hi:
        return plural(lo, word, many)
    return f"{lo} to {hi} {many or plural_of(word)}"


def change(points: float, unit: str = "point", *, digits: int = 2) -> str:
    """A signed difference, ``new - old``, as words: ``"a gain of 0.27 points"``, ``"a drop of 0.27 points"``,
    ``"no change"`` (within the printed precision)."""
    shown = round(abs(points), digits)
    if shown == 0:
        return "no change"
    kind = "gain" if points > 0 else "drop"
    return f"a {kind} of {shown:.{digits}f} {unit if shown == 1 else plural_of(unit)}"


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``" (did you mean lr0 or lrf?)"`` for the choices close to ``word`` (difflib), ``""`` when none is."""
    scored = []
    for choice in set(choices):
        m = difflib.SequenceMatcher(None, word, choice)
        if m.real_quick_ratio() >= 0.6 and m.quick_ratio() >= 0.6 and (r := m.ratio()) >= 0.6:
            scored.append((-r, choice))  # the closest first, ties in alphabetical order
    close = [c for _, c in sorted(scored)[:3]]
    if not close:
        return ""
    return f" (did you mean {', '.join(close[:-1]) + ' or ' if len(close) > 1 else ''}{close[-1]}?)"
