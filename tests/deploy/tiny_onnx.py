"""Small ONNX files for the engine tests: a real conv net exported by torch, and hand-made bad graphs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn


class TinyDetector(nn.Module):
    """Three stride-2 convs down to stride 8, then a 1x1 head: output [B, 4 + nc, H/8 * W/8]."""

    def __init__(self, nc: int = 3, width: int = 16):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, width, 3, 2, 1), nn.SiLU(),
            nn.Conv2d(width, width * 2, 3, 2, 1), nn.SiLU(),
            nn.Conv2d(width * 2, width * 4, 3, 2, 1), nn.SiLU(),
        )  # fmt: skip
        self.head = nn.Conv2d(width * 4, 4 + nc, 1)

    def forward(self, x):
        return self.head(self.body(x)).flatten(2)


def tiny_onnx(
    path: Path,
    *,
    hw: tuple[int, int] = (64, 96),
    dynamic_batch: bool = True,
    batch: int = 1,
    input_name: str = "images",
    width: int = 16,
    dynamic_hw: bool = False,
    metadata: dict[str, str] | None = None,
) -> Path:
    """Export :class:`TinyDetector` (seeded weights) to ``path``; its metadata records its one stride, 8 (plus
    ``metadata``)."""
    torch.manual_seed(0)
    model = TinyDetector(width=width).eval()
    axes = {}
    if dynamic_batch or dynamic_hw:
        axes = {input_name: {}, "output0": {}}
        if dynamic_batch:
            axes[input_name][0] = "batch"
            axes["output0"][0] = "batch"
        if dynamic_hw:
            axes[input_name].update({2: "height", 3: "width"})
            axes["output0"][2] = "anchors"
    torch.onnx.export(
        model, (torch.zeros(batch, 3, *hw),), str(path), input_names=[input_name], output_names=["output0"],
        dynamic_axes=axes or None, opset_version=17, dynamo=False,
    )  # fmt: skip
    metadata = {"stride": "[8]", **(metadata or {})}
    if metadata:
        m = onnx.load(str(path))
        for k, v in metadata.items():
            entry = m.metadata_props.add()
            entry.key, entry.value = k, v
        onnx.save(m, str(path))
    return path


def nms_onnx(path: Path, *, hw: tuple[int, int] = (64, 64)) -> Path:
    """A minimal end2end-style graph: ``images`` -> conv -> boxes/scores -> NonMaxSuppression."""
    h, w = hw
    a = (h // 8) * (w // 8)
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((5, 3, 8, 8)).astype(np.float32), "wconv"),
        numpy_helper.from_array(np.array([1, 5, a], np.int64), "shape_bca"),
        numpy_helper.from_array(np.array([0], np.int64), "s0"),
        numpy_helper.from_array(np.array([4], np.int64), "s4"),
        numpy_helper.from_array(np.array([5], np.int64), "s5"),
        numpy_helper.from_array(np.array([1], np.int64), "ax1"),
        numpy_helper.from_array(np.array([10], np.int64), "max_out"),
        numpy_helper.from_array(np.array([0.5], np.float32), "iou"),
        numpy_helper.from_array(np.array([0.1], np.float32), "score"),
    ]
    nodes = [
        helper.make_node("Conv", ["images", "wconv"], ["feat"], strides=[8, 8]),
        helper.make_node("Reshape", ["feat", "shape_bca"], ["pred"]),
        helper.make_node("Slice", ["pred", "s0", "s4", "ax1"], ["box_t"]),
        helper.make_node("Transpose", ["box_t"], ["boxes"], perm=[0, 2, 1]),
        helper.make_node("Slice", ["pred", "s4", "s5", "ax1"], ["logits"]),
        helper.make_node("Sigmoid", ["logits"], ["scores"]),
        helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score"], ["selected"]),
    ]
    graph = helper.make_graph(
        nodes, "nms", [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, h, w])],
        [helper.make_tensor_value_info("selected", TensorProto.INT64, [None, 3])], inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def unknown_op_onnx(path: Path, *, hw: tuple[int, int] = (64, 64)) -> Path:
    """``images`` -> an op no parser knows (``NotARealOp``) -> a head-shaped output [1, 7, anchors at stride 8]:
    a detector by its signature, which TensorRT's parser must fail on."""
    h, w = hw
    nodes = [
        helper.make_node("Relu", ["images"], ["r"], name="relu0"),
        helper.make_node("NotARealOp", ["r"], ["output0"], name="mystery", domain="y9.test"),
    ]
    graph = helper.make_graph(
        nodes, "bad", [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, h, w])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 7, (h // 8) * (w // 8)])],
    )  # fmt: skip
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("y9.test", 1)]
    )
    entry = model.metadata_props.add()
    entry.key, entry.value = "stride", "[8]"
    onnx.save(model, str(path))
    return path
