"""Letterbox geometry and the host letterbox, shared by training (y9train.data) and deployment (y9deploy).

- ``letterbox_params`` / ``letterbox_info``: where a frame goes inside the network input (scale, resized
  size, padding), without touching pixels; ``LetterboxInfo`` holds it for one frame.
- ``letterbox``: the official letterbox (same arguments, same pixels), by OpenCV.
- ``unmap_factors``, ``scale_boxes`` / ``unletterbox``: boxes in network-input pixels back to frame pixels.

numpy and OpenCV only.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

Shape = int | tuple[int, int]


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


# ----------------------------------------------------------------------------------------------------------
# Geometry of one letterboxed frame, and its inverse
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LetterboxInfo:
    """Where a frame went inside the network input.

    Attributes:
        in_hw: ``(h, w)`` of the source frame.
        out_hw: ``(h, w)`` of the letterboxed image (the network input).
        ratio: ``(ratio_w, ratio_h)`` as the official letterbox returns it (both equal to the scale ``r``).
        pad: ``(dw, dh)`` as the official letterbox returns it (half of the total padding, may end in .5).
        offset: ``(left, top)``: integer column/row where the resized frame really starts.
        resized_wh: ``(w, h)`` of the resized frame before padding (``round(w * r)``, ``round(h * r)``).
    """

    in_hw: tuple[int, int]
    out_hw: tuple[int, int]
    ratio: tuple[float, float]
    pad: tuple[float, float]
    offset: tuple[int, int]
    resized_wh: tuple[int, int]

    @property
    def scale_xy(self) -> tuple[float, float]:
        """``(sx, sy)``: input pixels per frame pixel along x and y, exactly as the resize applied them."""
        return self.resized_wh[0] / self.in_hw[1], self.resized_wh[1] / self.in_hw[0]


def letterbox_info(
    in_hw: tuple[int, int],
    new_shape: Shape = 640,
    *,
    auto: bool = False,
    scaleup: bool = True,
    stride: int = 32,
) -> LetterboxInfo:
    """``letterbox_params`` as a ``LetterboxInfo`` for a frame of size ``in_hw = (h, w)``."""
    r, (unpad_w, unpad_h), (dw, dh), out_hw = letterbox_params(
        in_hw, new_shape, auto=auto, scaleup=scaleup, stride=stride
    )
    return LetterboxInfo(
        in_hw=(int(in_hw[0]), int(in_hw[1])),
        out_hw=(int(out_hw[0]), int(out_hw[1])),
        ratio=(r, r),
        pad=(dw, dh),
        offset=(int(round(dw - 0.1)), int(round(dh - 0.1))),
        resized_wh=(unpad_w, unpad_h),
    )


def unmap_factors(info: LetterboxInfo) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The map of boxes from network-input pixels back to the frame of ``info``, decided once per frame size:
    ``(offset, scale, limit)``, three ndarray[4] float32 over the columns x1, y1, x2, y2, for
    ``x_frame = (x - offset) * scale`` clipped to ``[0, limit]`` (``scale_boxes``; the Detector's host frame
    plan hands them to ``y9core.boxes.decode_nms_frame``).

    The inverse of the resize really applied: ``offset = (left, top) = info.offset``, ``scale = w / resized_w``
    (and h / resized_h for y), ``limit`` the frame's width and height. The official ``scale_boxes`` subtracts the
    fractional half padding and divides by ``r`` instead; the two differ by less than ``1 / r`` frame pixels (up
    to half of it from an odd padding, up to half from the rounding of the resized size).
    """
    (h0, w0), (left, top), (rw, rh) = info.in_hw, info.offset, info.resized_wh
    offset = np.array([left, top, left, top], np.float32)
    scale = np.array([w0 / rw, h0 / rh] * 2, np.float32)
    return offset, scale, np.array([w0, h0, w0, h0], np.float32)


def scale_boxes(boxes: np.ndarray, info: LetterboxInfo, clip: bool = True) -> np.ndarray:
    """Map xyxy boxes from network-input pixels back to frame pixels (``unmap_factors``).

    Args:
        boxes (ndarray[N, 4+K]): x1, y1, x2, y2 in input pixels in the first four columns; any further
            columns (score, class) are copied unchanged.
        info: the ``LetterboxInfo`` of the frame.
        clip: clip x to ``[0, w]`` and y to ``[0, h]`` of the frame.
    Returns:
        ndarray[N, 4+K] float32: a new array (the input is not modified).
    """
    arr = np.asarray(boxes)
    if arr.ndim != 2 or arr.shape[1] < 4:
        raise ValueError(f"boxes has shape {arr.shape}; expected (N, 4) or more columns of x1, y1, x2, y2.")
    out = np.array(arr, dtype=np.float32, copy=True)
    offset, scale, limit = unmap_factors(info)
    xyxy = out[:, :4]
    xyxy -= offset
    xyxy *= scale
    if clip:
        np.clip(xyxy, 0, limit, out=xyxy)
    return out


unletterbox = scale_boxes
