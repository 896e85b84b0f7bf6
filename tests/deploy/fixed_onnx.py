"""A raw-output ONNX detector built with onnx.helper whose detections are known exactly.

The boxes are fixed (one per anchor, given in network-input pixels); the score of class ``c`` at anchor ``k``
is the input value at channel ``c``, row 0, column ``k`` (RGB, 0..1 after y9's pre-processing). An image the
size of the network input (letterbox = identity) with ``frame[0, k, 2 - c] = round(score * 255)`` (BGR) thus
makes the model report class ``c`` at anchor ``k`` with that score: a crafted set of images gives crafted,
known detections through the real Detector (ONNX Runtime, decode, NMS, scaling).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def fixed_boxes_onnx(
    path: Path,
    boxes_cxcywh: Sequence[Sequence[float]],
    names: Sequence[str],
    *,
    hw: tuple[int, int] = (64, 64),
    dynamic_batch: bool = True,
) -> Path:
    k, nc = len(boxes_cxcywh), len(names)
    h, w = hw
    assert 0 < k <= w and 0 < nc <= 3
    anchors = sum((h // s) * (w // s) for s in (8, 16, 32))  # the raw head's anchor count at this size
    boxes = np.asarray(boxes_cxcywh, np.float32).T[None]  # [1, 4, K]
    inits = [
        numpy_helper.from_array(boxes, "boxes"),
        numpy_helper.from_array(np.array([0, 0, 0], np.int64), "starts"),
        numpy_helper.from_array(np.array([nc, 1, k], np.int64), "ends"),
        numpy_helper.from_array(np.array([1, 2, 3], np.int64), "axes"),
        numpy_helper.from_array(np.array([2], np.int64), "squeeze_axes"),
        numpy_helper.from_array(np.array([0], np.int64), "c0"),
        numpy_helper.from_array(np.array([1], np.int64), "c1"),
        numpy_helper.from_array(np.array([1], np.int64), "ax1"),
        numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
        numpy_helper.from_array(np.array([0, 0, 0, 0, 0, anchors - k], np.int64), "pads"),
    ]
    nodes = [
        helper.make_node("Slice", ["images", "starts", "ends", "axes"], ["patch"]),  # [B, nc, 1, K]
        helper.make_node("Squeeze", ["patch", "squeeze_axes"], ["scores"]),  # [B, nc, K]
        helper.make_node("Slice", ["scores", "c0", "c1", "ax1"], ["first"]),  # [B, 1, K]
        helper.make_node("Mul", ["first", "zero"], ["zeros"]),
        helper.make_node("Add", ["zeros", "boxes"], ["batch_boxes"]),  # [B, 4, K]
        helper.make_node("Concat", ["batch_boxes", "scores"], ["fixed"], axis=1),  # [B, 4 + nc, K]
        # padded with score-0 anchors to the anchor count a raw head has at this input size
        helper.make_node("Pad", ["fixed", "pads"], ["output0"], mode="constant"),
    ]
    b = "batch" if dynamic_batch else 1
    graph = helper.make_graph(
        nodes, "fixed_boxes", [helper.make_tensor_value_info("images", TensorProto.FLOAT, [b, 3, h, w])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [b, 4 + nc, anchors])], inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    for key, value in {
        "names": json.dumps(list(names)),
        "imgsz": json.dumps([h, w]),
        "model": "fixed",
    }.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def crafted_frame(scores: dict[tuple[int, int], float], hw: tuple[int, int] = (64, 64)) -> np.ndarray:
    """A BGR frame of the network's size whose row-0 pixels make the model report ``{(class, anchor): score}``."""
    frame = np.zeros((*hw, 3), np.uint8)
    frame[8:, :] = 90  # some content below the score row (ignored by the model)
    for (c, k), s in scores.items():
        frame[0, k, 2 - c] = round(s * 255)  # BGR frame -> RGB input channel c
    return frame
