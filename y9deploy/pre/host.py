"""Host pre-processing (numpy and OpenCV): frames checked, letterboxed, converted to the network blob.

- ``check_frame`` / ``check_frames``: one clear sentence for a frame that is not HxWx3 uint8 BGR.
- ``prepare``: frames -> network blob ``[B, 3, H, W]`` RGB 0..1 plus one ``LetterboxInfo`` per frame, in two
  passes over the pixels (a resize straight into the padded canvas, then one planar conversion).
- ``letterbox_batch_u8``: frames -> letterboxed uint8 BGR images (the compact form a GPU path uploads).
- ``frame_pre``: ``prepare`` for the frames of one size, decided once (``FramePre``: OpenCV and numpy calls bound to
  reused buffers, the padding painted once), for the Detector's host frame plan (``runtime.frame_plan``).

The geometry (``letterbox_info``, ``LetterboxInfo``) is ``y9core.letterbox``'s; its pixels equal
``y9core.letterbox.letterbox``. No torch here: a deployment box has numpy and OpenCV.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from y9core.letterbox import LetterboxInfo, Shape, letterbox_info

# ----------------------------------------------------------------------------------------------------------
# Frames -> network blob
# ----------------------------------------------------------------------------------------------------------

_EXPECTED = "expected an HxWx3 uint8 BGR image (numpy.ndarray)"


def check_frame(frame: object, index: int = 0) -> np.ndarray:
    """Validate one frame and return it; raise one clear TypeError/ValueError sentence otherwise.

    Args:
        frame (ndarray[H, W, 3] uint8): a BGR image as OpenCV reads it.
        index: its position in the batch, named in the message.
    """
    name = f"frame {index}"
    if frame is None:
        raise TypeError(f"{name} is None; {_EXPECTED} (did the video/image read fail?).")
    if not isinstance(frame, np.ndarray):
        raise TypeError(f"{name} is a {type(frame).__name__}; {_EXPECTED}.")
    if frame.dtype != np.uint8:
        raise TypeError(
            f"{name} has dtype {frame.dtype}; {_EXPECTED} with values 0..255 "
            "(convert with (img * 255).clip(0, 255).astype(np.uint8) if it holds 0..1 floats)."
        )
    if frame.ndim == 2 or (frame.ndim == 3 and frame.shape[2] == 1):
        raise ValueError(
            f"{name} has shape {frame.shape}, a single-channel (grayscale) image; {_EXPECTED} "
            "(convert with cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR))."
        )
    if frame.ndim == 3 and frame.shape[2] == 4:
        raise ValueError(
            f"{name} has shape {frame.shape}, 4 channels (BGRA); {_EXPECTED} "
            "(convert with cv2.cvtColor(frame, cv2.COLOR_BGRA2BGR))."
        )
    if frame.ndim != 3 or frame.shape[2] != 3:
        raise ValueError(f"{name} has shape {frame.shape}; {_EXPECTED}.")
    if frame.shape[0] == 0 or frame.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {frame.shape}); {_EXPECTED} of at least 1x1 pixels.")
    return frame


def check_frames(frames: object) -> list[np.ndarray]:
    """One frame (ndarray[H, W, 3]), a batch ndarray[B, H, W, 3] or a sequence of frames -> list of frames."""
    if isinstance(frames, np.ndarray):
        if frames.ndim == 4:
            if frames.shape[0] == 0:
                raise ValueError(
                    f"frames has shape {frames.shape}, an empty batch; expected at least one frame."
                )
            return [check_frame(f, i) for i, f in enumerate(frames)]
        return [check_frame(frames, 0)]
    if frames is None:
        raise TypeError(f"frames is None; {_EXPECTED}, or a list of them.")
    if not isinstance(frames, Sequence) or isinstance(frames, (str, bytes)):
        raise TypeError(f"frames is a {type(frames).__name__}; {_EXPECTED}, or a list of them.")
    if len(frames) == 0:
        raise ValueError(
            f"frames is an empty {type(frames).__name__}; expected at least one HxWx3 uint8 image."
        )
    return [check_frame(f, i) for i, f in enumerate(frames)]


def fill_value(color: int | tuple[int, int, int]) -> tuple[int, int, int]:
    if isinstance(color, (int, np.integer)):
        return (int(color),) * 3
    c = tuple(int(v) for v in color)
    if len(c) != 3:
        raise ValueError(f"color is {color!r}; expected a grey level or a (b, g, r) tuple.")
    return c


def _pad_around(canvas: np.ndarray, left: int, top: int, w: int, h: int, fill: tuple[int, int, int]) -> None:
    """Paint the canvas [H, W, 3] outside the rectangle (left, top, w, h) with ``fill`` (strips only).

    ``ndarray.fill`` for a grey level, filled ``cv2.rectangle`` otherwise: both are memset-fast, unlike a
    numpy broadcast of a 3-vector.
    """
    oh, ow = canvas.shape[:2]
    strips = [(0, 0, ow, top), (0, top + h, ow, oh), (0, top, left, top + h), (left + w, top, ow, top + h)]
    for x1, y1, x2, y2 in strips:
        if x2 > x1 and y2 > y1:
            if fill[0] == fill[1] == fill[2]:
                canvas[y1:y2, x1:x2].fill(fill[0])
            else:
                cv2.rectangle(canvas, (x1, y1), (x2 - 1, y2 - 1), fill, thickness=-1)


_LUT_F16 = (np.arange(256, dtype=np.float32) / 255).astype(np.float16).view(np.uint16)
_WORK = threading.local()


def _workspace(hw: tuple[int, int]) -> tuple[np.ndarray, list[np.ndarray]]:
    """This thread's reusable uint8 buffers for one input size: canvas [H, W, 3] and three planes [H, W].

    Reusing them avoids fresh large allocations (and their page faults) on every call.
    """
    cached = getattr(_WORK, "buffers", None)
    if cached is None or cached[0].shape[:2] != hw:
        cached = (np.empty((*hw, 3), np.uint8), [np.empty(hw, np.uint8) for _ in range(3)])
        _WORK.buffers = cached
    return cached


def _to_planar(canvas: np.ndarray, dst: np.ndarray) -> None:
    """canvas ndarray[H, W, 3] uint8 BGR -> dst ndarray[3, H, W] (float32 or float16) RGB 0..1.

    The channels are split by OpenCV into reused buffers, then float32: each plane is cast while copied and
    divided by 255 in place (bit-equal to ``x / 255``); float16: a 256-entry table of float16 bit patterns
    applied by ``cv2.LUT`` (bit-equal to ``float16(x / 255)``).
    """
    _, planes = _workspace(canvas.shape[:2])
    planes = cv2.split(canvas, planes)
    if dst.dtype == np.float16:
        bits = dst.view(np.uint16)
        for c in range(3):
            cv2.LUT(planes[2 - c], _LUT_F16, dst=bits[c])
    else:
        for c in range(3):
            dst[c] = planes[2 - c]
        np.divide(dst, np.float32(255), out=dst)


#: the letterbox geometry of a frame size, computed once per size and settings (``LetterboxInfo`` is frozen): the
#: frames of a video share one size, so a stream asks ``y9core.letterbox`` once
_geometry = functools.lru_cache(maxsize=64)(letterbox_info)


def _checked_infos(
    frames: np.ndarray | Sequence[np.ndarray], imgsz: Shape, auto: bool, scaleup: bool, stride: int
) -> tuple[list[np.ndarray], list[LetterboxInfo]]:
    """Validated frames and their letterbox geometry (one input shape for the whole batch)."""
    frames = check_frames(frames)
    size = imgsz if isinstance(imgsz, int) else tuple(imgsz)  # hashable for the cache
    infos = [_geometry(f.shape[:2], size, auto=auto, scaleup=scaleup, stride=stride) for f in frames]
    for k, info in enumerate(infos):
        if min(info.resized_wh) < 1:
            raise ValueError(
                f"frame {k} has shape {frames[k].shape}, too thin to letterbox into {info.out_hw}; "
                "expected an aspect ratio that leaves at least one pixel on each side."
            )
    shapes = {i.out_hw for i in infos}
    if len(shapes) != 1:
        raise ValueError(
            f"auto=True gave different input shapes {sorted(shapes)} for the frames of one batch; "
            "expected one shape (use auto=False for a batch of frames of different sizes)."
        )
    return frames, infos


def _checked_out(out: np.ndarray | None, shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    if out is None:
        return np.empty(shape, dt)
    if out.shape != shape or out.dtype != dt or not out.flags.c_contiguous:
        raise ValueError(
            f"out has shape {out.shape} and dtype {out.dtype}; expected a C-contiguous {shape} array of {dt}."
        )
    return out


def _letterbox_into(
    frame: np.ndarray, info: LetterboxInfo, canvas: np.ndarray, fill: tuple[int, int, int]
) -> None:
    """Letterbox ``frame`` into ``canvas`` ndarray[oh, ow, 3] uint8: padding strips painted, the frame resized
    straight into its window (bit-equal to ``letterbox``: resize + copyMakeBorder)."""
    (rw, rh), (left, top) = info.resized_wh, info.offset
    if frame.shape[:2] == canvas.shape[:2]:
        canvas[...] = frame
        return
    _pad_around(canvas, left, top, rw, rh, fill)
    roi = canvas[top : top + rh, left : left + rw]
    if frame.shape[:2] == (rh, rw):
        roi[...] = frame
    else:
        resized = cv2.resize(frame, (rw, rh), dst=roi, interpolation=cv2.INTER_LINEAR)
        if not np.shares_memory(resized, roi):  # this OpenCV build copied instead of writing in place
            roi[...] = resized


def prepare(
    frames: np.ndarray | Sequence[np.ndarray],
    imgsz: Shape = 640,
    *,
    dtype: type | np.dtype = np.float32,
    auto: bool = False,
    scaleup: bool = True,
    stride: int = 32,
    color: int | tuple[int, int, int] = 114,
    out: np.ndarray | None = None,
) -> tuple[np.ndarray, list[LetterboxInfo]]:
    """Frames -> network blob: letterbox, BGR->RGB, HWC->CHW and /255 in two passes per frame.

    The pixels equal ``letterbox(frame, imgsz, ...)`` followed by ``[..., ::-1].transpose(2, 0, 1) / 255``
    (bit for bit in float32; float16 is that value rounded to float16).

    Args:
        frames: one ndarray[H, W, 3] uint8 BGR frame, a batch ndarray[B, H, W, 3], or a sequence of frames
            (sizes may differ).
        imgsz: network input ``(h, w)`` or a square side.
        dtype: ``np.float32`` or ``np.float16``.
        auto, scaleup, stride, color: as ``letterbox``; with ``auto`` every frame must give the same shape.
        out (ndarray[B, 3, H, W] of dtype, optional): a C-contiguous buffer to fill (e.g. pinned memory).
    Returns:
        ``(blob, infos)``: blob ndarray[B, 3, H, W] RGB 0..1 and one ``LetterboxInfo`` per frame.
    """
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float16):
        raise TypeError(f"dtype is {dt}; expected numpy.float32 or numpy.float16.")
    frames, infos = _checked_infos(frames, imgsz, auto, scaleup, stride)
    fill = fill_value(color)
    (oh, ow), n = infos[0].out_hw, len(frames)
    out = _checked_out(out, (n, 3, oh, ow), dt)
    canvas, _ = _workspace((oh, ow))
    for k, (frame, info) in enumerate(zip(frames, infos)):
        if frame.shape[:2] == (oh, ow):  # already the input size: no resize, no padding
            _to_planar(frame, out[k])
            continue
        _letterbox_into(frame, info, canvas, fill)
        _to_planar(canvas, out[k])
    return out, infos


def letterbox_batch_u8(
    frames: np.ndarray | Sequence[np.ndarray],
    imgsz: Shape = 640,
    *,
    auto: bool = False,
    scaleup: bool = True,
    stride: int = 32,
    color: int | tuple[int, int, int] = 114,
    out: np.ndarray | None = None,
) -> tuple[np.ndarray, list[LetterboxInfo]]:
    """Frames -> letterboxed uint8 BGR images ndarray[B, H, W, 3] (one pass per frame; no colour or layout
    change): the compact form to upload to a GPU, which then flips, transposes and normalises.

    Each image equals ``letterbox(frame, imgsz, ...)`` bit for bit. Arguments as ``prepare``;
    ``out`` (ndarray[B, H, W, 3] uint8, optional) is filled in place (e.g. pinned memory).
    """
    frames, infos = _checked_infos(frames, imgsz, auto, scaleup, stride)
    fill = fill_value(color)
    (oh, ow), n = infos[0].out_hw, len(frames)
    out = _checked_out(out, (n, oh, ow, 3), np.dtype(np.uint8))
    for k, (frame, info) in enumerate(zip(frames, infos)):
        _letterbox_into(frame, info, out[k], fill)
    return out, infos


# ----------------------------------------------------------------------------------------------------------
# One frame size, decided once
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FramePre:
    """``prepare`` for the frames of one size, decided once: ``load(frame)`` then each of ``steps`` leave in
    ``blob[0]`` what ``prepare`` gives for the frame, bit for bit. Every call is OpenCV or numpy on buffers bound
    when the plan was built (the padding is painted then, once); ``info`` is the frames' letterbox geometry."""

    info: LetterboxInfo
    blob: np.ndarray
    load: Callable[[np.ndarray], object]
    steps: tuple[Callable[[], object], ...]


def frame_pre(
    frame: np.ndarray,
    imgsz: Shape,
    blob: np.ndarray,
    planes: list[np.ndarray],
    *,
    scaleup: bool = True,
    stride: int = 32,
    color: int | tuple[int, int, int] = 114,
) -> FramePre | None:
    """The ``FramePre`` of frames of ``frame``'s shape (checked as ``prepare`` checks it; ``auto=False``).

    Args:
        blob (ndarray[B, 3, H, W] float32 or float16, C-contiguous): the input buffer; frames go to ``blob[0]``.
        planes: three ndarray[H, W] uint8 work buffers (shared by the plans of one pipeline).
    Returns:
        the plan, or None where this OpenCV build does not resize into a given buffer (``prepare`` then).
    """
    (frame,), (info,) = _checked_infos([frame], imgsz, False, scaleup, stride)
    (oh, ow), dst = info.out_hw, blob[0]
    if blob.dtype not in (np.float32, np.float16) or dst.shape != (3, oh, ow) or not blob.flags.c_contiguous:
        raise ValueError(f"blob has shape {blob.shape} and dtype {blob.dtype}; expected a C-contiguous "
                         f"[B, 3, {oh}, {ow}] array of float32 or float16.")  # fmt: skip
    steps: list[Callable[[], object]] = []
    if frame.shape[:2] == (oh, ow):  # already the input size: no resize, no padding
        load: Callable[[np.ndarray], object] = functools.partial(cv2.split, mv=planes)
    else:
        canvas = np.empty((oh, ow, 3), np.uint8)
        (rw, rh), (left, top) = info.resized_wh, info.offset
        _pad_around(canvas, left, top, rw, rh, fill_value(color))
        roi = canvas[top : top + rh, left : left + rw]
        if frame.shape[:2] == (rh, rw):
            load = functools.partial(np.copyto, roi)
        else:
            load = functools.partial(cv2.resize, dsize=(rw, rh), dst=roi, interpolation=cv2.INTER_LINEAR)
            if not np.shares_memory(load(frame), roi):
                return None
        steps.append(functools.partial(cv2.split, canvas, planes))
    if dst.dtype == np.float16:  # as _to_planar
        bits = dst.view(np.uint16)
        steps += [functools.partial(cv2.LUT, planes[2 - c], _LUT_F16, dst=bits[c]) for c in range(3)]
    else:
        steps += [functools.partial(np.copyto, dst[c], planes[2 - c]) for c in range(3)]
        steps.append(functools.partial(np.divide, dst, np.float32(255), out=dst))
    return FramePre(info, blob, load, tuple(steps))
