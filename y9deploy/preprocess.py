"""Pre-processing: letterbox (shared by training and inference), colour, layout and normalisation.

No torch here: a deployment box has numpy and OpenCV.
"""

from __future__ import annotations

from typing import Union

import cv2
import numpy as np

Shape = Union[int, tuple[int, int]]


def as_hw(new_shape: Shape) -> tuple[int, int]:
    """``640`` -> ``(640, 640)``; ``(384, 640)`` stays ``(h, w)``."""
    if isinstance(new_shape, (int, np.integer)):
        return int(new_shape), int(new_shape)
    h, w = new_shape
    return int(h), int(w)


def letterbox_params(
    in_hw: tuple[int, int],
    new_shape: Shape = 640,
    *,
    auto: bool = False,
    scaleup: bool = True,
    stride: int = 32,
) -> tuple[float, tuple[int, int], tuple[float, float], tuple[int, int]]:
    """The geometry of a letterbox without touching pixels.

    Args:
        in_hw: (h, w) of the source image.
    Returns:
        ``(r, (new_w, new_h), (dw, dh), (out_h, out_w))``: the scale, the resized size before padding,
        the padding on each side (half of the total, may be fractional) and the output size.
    """
    h0, w0 = in_hw
    nh, nw = as_hw(new_shape)
    r = min(nh / h0, nw / w0)
    if not scaleup:  # only scale down (better val mAP)
        r = min(r, 1.0)
    unpad_w, unpad_h = int(round(w0 * r)), int(round(h0 * r))
    dw, dh = nw - unpad_w, nh - unpad_h
    if auto:  # minimum rectangle: pad to a multiple of stride only
        dw, dh = dw % stride, dh % stride
    dw, dh = dw / 2, dh / 2
    top, bottom = int(round(dh - 0.1)), int(round(dh + 0.1))
    left, right = int(round(dw - 0.1)), int(round(dw + 0.1))
    out_hw = (unpad_h + top + bottom, unpad_w + left + right)
    return r, (unpad_w, unpad_h), (dw, dh), out_hw


def letterbox(
    img: np.ndarray,
    new_shape: Shape = 640,
    *,
    auto: bool = False,
    scaleup: bool = True,
    stride: int = 32,
    color: int | tuple[int, int, int] = 114,
) -> tuple[np.ndarray, tuple[float, float], tuple[float, float]]:
    """Resize keeping the aspect ratio, then pad to ``new_shape`` (or to a stride multiple with ``auto``).

    Args:
        img (ndarray[H, W, C] uint8): the image (any channel order).
        new_shape: target ``(h, w)`` or a square side.
        auto: pad only up to the next multiple of ``stride`` (minimum rectangle).
        scaleup: allow enlarging; with False small images are only padded.
        color: pad value (a grey level or a per-channel tuple).
    Returns:
        ``(out, (ratio_w, ratio_h), (dw, dh))`` with ``out`` ndarray[H', W', C] uint8 and ``dw, dh`` the
        padding added on the left/top side (the total padding halved; fractional when it is odd).
        A point ``p`` of the source maps to ``p * ratio + (dw, dh)`` (rounded padding, see ``unletterbox``).
    """
    r, (unpad_w, unpad_h), (dw, dh), _ = letterbox_params(
        img.shape[:2], new_shape, auto=auto, scaleup=scaleup, stride=stride
    )
    if (img.shape[1], img.shape[0]) != (unpad_w, unpad_h):
        img = cv2.resize(img, (unpad_w, unpad_h), interpolation=cv2.INTER_LINEAR)
    top, bottom = int(round(dh - 0.1)), int(round(dh + 0.1))
    left, right = int(round(dw - 0.1)), int(round(dw + 0.1))
    if isinstance(color, (int, np.integer)):
        color = (int(color),) * (img.shape[2] if img.ndim == 3 else 1)
    if top or bottom or left or right:
        img = cv2.copyMakeBorder(img, top, bottom, left, right, cv2.BORDER_CONSTANT, value=color)
    return img, (r, r), (dw, dh)
