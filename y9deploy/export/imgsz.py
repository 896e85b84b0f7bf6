"""The export's input size argument: ``640``, ``"384,640"``, ``(384, 640)`` ... -> ``(h, w)``."""

from __future__ import annotations

from typing import Any

import numpy as np

STRIDE = 32


def parse_imgsz(value: Any) -> tuple[int, int]:
    """``640``, ``"640"``, ``(384, 640)``, ``"384,640"`` or ``"384x640"`` -> ``(h, w)``; ValueError unless both
    are positive multiples of 32."""
    if isinstance(value, str):
        parts = value.replace("x", ",").split(",")
        try:
            nums = [int(p) for p in parts]
        except ValueError:
            raise ValueError(
                f"imgsz {value!r} is not understood; expected e.g. 640 or 384,640 (H,W)"
            ) from None
    elif isinstance(value, (int, np.integer)):
        nums = [int(value)]
    else:
        nums = [int(v) for v in value]
    if len(nums) == 1:
        nums = nums * 2
    if len(nums) != 2:
        raise ValueError(f"imgsz {value!r} is not understood; expected e.g. 640 or 384,640 (H,W)")
    h, w = nums
    if h <= 0 or w <= 0 or h % STRIDE or w % STRIDE:
        raise ValueError(f"imgsz {h}x{w} (HxW) is not a multiple of {STRIDE}; use e.g. 640 or 384,640")
    return h, w
