"""The one rule for ``imgsz`` in ``predict``, ``track``, ``val``, ``export`` and ``train``: an int (square) or an
(h, w) pair of whole numbers of pixels; a side that is not a multiple of the stride (32) is rounded UP to one with
a warning naming both sizes (as YOLO tools do); anything else is one sentence."""

from __future__ import annotations

import warnings
from typing import Any

STRIDE = 32


class ImageSizeWarning(UserWarning):
    """An image size was rounded up to a multiple of the stride."""


def _side(action: str, value: Any, given: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) and not (
        isinstance(value, float) and value.is_integer()
    ):
        raise TypeError(f"{action}(imgsz={given!r}); expected a whole number of pixels (e.g. 640) or a pair (h, w).")
    if int(value) < STRIDE:
        raise ValueError(f"{action}(imgsz={given!r}); expected at least {STRIDE} pixels a side.")
    return int(value)


def check_imgsz(action: str, value: Any, *, square: bool = False) -> int | tuple[int, int] | None:
    """``value`` as an int (a square size) or an (h, w) tuple, each side a multiple of ``STRIDE`` (rounded up with an
    ``ImageSizeWarning``); None stays None (the model's own size). ``square``: an (h, w) pair must be square (training
    takes one side): refused in one sentence otherwise, and returned as an int."""
    if value is None:
        return None
    pair = isinstance(value, (list, tuple))
    if pair and len(value) == 1:
        value, pair = value[0], False
    if pair and len(value) != 2:
        raise ValueError(f"{action}(imgsz={value!r}); expected one size or a pair (h, w).")
    sides = [_side(action, v, value) for v in (value if pair else [value])]
    rounded = [-(-s // STRIDE) * STRIDE for s in sides]
    if rounded != sides:
        shown = "x".join(map(str, rounded))
        warnings.warn(f"{action}(imgsz={value!r}): {', '.join(map(str, sides))} is not a multiple of the stride "
                      f"{STRIDE}; using {shown}.", ImageSizeWarning, stacklevel=3)  # fmt: skip
    if not pair:
        return rounded[0]
    if square:
        if rounded[0] != rounded[1]:
            raise ValueError(f"{action}(imgsz={value!r}) takes one square size, e.g. "
                             f"imgsz={max(rounded)}.")  # fmt: skip
        return rounded[0]
    return rounded[0], rounded[1]
