"""Load-time checks that a model file is a YOLO detector of the shape its metadata declares.

Each check raises :class:`~y9core.errors.ModelFileError` with one sentence naming the file, the value
found and what was expected, so that a classifier, a detector exported at another size, a model with
another input type or NaN weights is refused when it is opened, not after it gave wrong detections.
Shared by the ONNX Runtime and TensorRT backends; needs only numpy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from y9core.errors import ModelFileError

IMAGE_DTYPES = (np.dtype(np.float32), np.dtype(np.float16))


def expected_anchors(hw: tuple[int, int], strides: Sequence[float]) -> int:
    """Anchor count of a YOLO head: one per cell of every stride's grid (ceil(H/s) * ceil(W/s))."""
    h, w = hw
    return sum(math.ceil(h / float(s)) * math.ceil(w / float(s)) for s in strides)


def check_image_input(where: str, name: str, shape: Sequence[Any], dtype: np.dtype) -> None:
    """The image input must be [B, 3, H, W] of float32 or float16 (RGB scaled to 0..1)."""
    if np.dtype(dtype) not in IMAGE_DTYPES:
        raise ModelFileError(
            f"{where}: input {name!r} is of type {np.dtype(dtype).name}, expected float32 or float16 (an RGB image "
            "scaled to 0..1, as `y9 export` writes); this is not a y9 detector input."
        )
    if len(shape) != 4:
        raise ModelFileError(f"{where}: input {name!r} has shape {list(shape)}; expected [B, 3, H, W].")


def check_raw_output(
    where: str,
    name: str,
    shape: Sequence[Any],
    dtype: np.dtype,
    *,
    hw: tuple[int, int],
    strides: Sequence[float],
) -> int | None:
    """A raw head output must be float [B, 4 + nc, A] with nc >= 1 and A the anchor count of ``hw``.

    Returns:
        nc when the class dimension is fixed, else None.
    """
    if np.dtype(dtype).kind != "f":
        raise ModelFileError(
            f"{where}: output {name!r} is of type {np.dtype(dtype).name}; expected a float YOLO head output "
            "[B, 4 + classes, anchors]."
        )
    if len(shape) != 3:
        raise ModelFileError(
            f"{where}: output {name!r} has shape {list(shape)}; expected a YOLO head output [B, 4 + classes, "
            f"anchors] (3-D); a {len(shape)}-D output is not a detector's (a classifier gives [B, classes])."
        )
    channels, anchors = shape[1], shape[2]
    if isinstance(channels, int) and channels < 5:
        raise ModelFileError(
            f"{where}: output {name!r} has {channels} channels (shape {list(shape)}); expected 4 box values "
            "plus at least one class score."
        )
    if isinstance(anchors, int):
        want = expected_anchors(hw, strides)
        if anchors != want:
            stride_text = ", ".join(f"{float(s):g}" for s in strides)
            raise ModelFileError(
                f"{where}: output {name!r} has {anchors} anchors but a {hw[0]}x{hw[1]} input at strides "
                f"[{stride_text}] gives {want}; expected [B, 4 + classes, {want}] (the model was exported for "
                "another input size or is not a YOLO detector)."
            )
    return int(channels) - 4 if isinstance(channels, int) else None


def check_end2end_outputs(where: str, shapes: Mapping[str, Sequence[Any]]) -> None:
    """End-to-end outputs: num_dets [B, 1], boxes [B, K, 4], scores [B, K], classes [B, K]."""
    expect = {"num_dets": 2, "boxes": 3, "scores": 2, "classes": 2}
    for name, ndim in expect.items():
        shape = list(shapes[name])
        bad = len(shape) != ndim or (name == "boxes" and shape[2] not in (4, "4"))
        if bad:
            want = {"num_dets": "[B, 1]", "boxes": "[B, max_det, 4]"}.get(name, "[B, max_det]")
            raise ModelFileError(f"{where}: end-to-end output {name!r} has shape {shape}; expected {want}.")


def check_finite(where: str, outputs: Mapping[str, Any]) -> None:
    """Every float output of a probe inference must be finite (NaN or inf means damaged weights)."""
    for name, value in outputs.items():
        arr = np.asarray(value)
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            bad = int(arr.size - np.isfinite(arr).sum())
            raise ModelFileError(
                f"{where}: output {name!r} has {bad} NaN or infinite values (of {arr.size}) for a plain grey "
                "test image; expected finite numbers: the weights are damaged, re-export the model."
            )


def probe_batch(batch_range: tuple[int, int], hw: tuple[int, int], dtype: np.dtype) -> np.ndarray:
    """A grey (114) letterbox-coloured batch of the smallest size the model accepts, scaled to 0..1."""
    return np.full((max(1, batch_range[0]), 3, hw[0], hw[1]), 114 / 255, dtype=dtype)
