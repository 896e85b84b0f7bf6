"""Average pools as fixed depthwise convolutions, before an INT8 quantization (``pools_as_convs``).

An ``AveragePool`` whose window never reaches padding (no pads, or ``count_include_pad=1``; ``ceil_mode=0``) is the
same function as a depthwise ``Conv`` (``group`` = channels) whose weights are all ``1 / (kh * kw)``: same strides,
pads and output. The rewrite matters for speed alone: ONNX Runtime fuses a quantized AveragePool into
``QLinearAveragePool``, a slow kernel on x86 (measured in docs/benchmarks.md "INT8"), while a quantized depthwise
convolution runs on its integer convolution kernels. The weight ``1 / (kh * kw)`` is exact in INT8 with per-channel symmetric scales (every weight maps to 127).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _channels(model: Any) -> dict[str, int]:
    """Channel count (dim 1) of every tensor whose shape inference gives a static one."""
    import onnx

    inferred = onnx.shape_inference.infer_shapes(model)
    out: dict[str, int] = {}
    for vi in [*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output]:
        dims = vi.type.tensor_type.shape.dim
        if len(dims) == 4 and dims[1].HasField("dim_value"):
            out[vi.name] = int(dims[1].dim_value)
    return out


def convertible(node: Any, channels: dict[str, int]) -> bool:
    """Whether an AveragePool equals a depthwise convolution: 2-D, ``ceil_mode`` 0, not dilated, no pads or pads
    counted, a static channel count."""
    if node.op_type != "AveragePool" or node.input[0] not in channels:
        return False
    a = _attrs(node)
    kernel = list(a.get("kernel_shape", []))
    pads = list(a.get("pads", [0] * 2 * len(kernel)))
    padded = any(pads) or a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET", b"VALID", "VALID")
    dilated = any(d != 1 for d in a.get("dilations", [1, 1]))
    return (len(kernel) == 2 and not a.get("ceil_mode", 0) and not dilated
            and (not padded or a.get("count_include_pad", 0) == 1))  # fmt: skip


def pools_as_convs(model: Any) -> tuple[Any, list[str]]:
    """A copy of ``model`` (onnx.ModelProto) with each convertible AveragePool made a depthwise Conv of the same name;
    returns (the copy, the names rewritten). Nodes that are not convertible stay as they are."""
    import onnx
    from onnx import helper, numpy_helper

    out = onnx.ModelProto()
    out.CopyFrom(model)
    channels = _channels(model)
    done: list[str] = []
    nodes = list(out.graph.node)
    for i, node in enumerate(nodes):
        if not convertible(node, channels):
            continue
        a = _attrs(node)
        kh, kw = a["kernel_shape"]
        c = channels[node.input[0]]
        weight = numpy_helper.from_array(np.full((c, 1, kh, kw), 1.0 / (kh * kw), np.float32), f"{node.name}/weight")
        out.graph.initializer.append(weight)
        conv_attrs = {"kernel_shape": [kh, kw], "group": c, "strides": list(a.get("strides", [1, 1])),
                      "pads": list(a.get("pads", [0, 0, 0, 0]))}  # fmt: skip
        if "auto_pad" in a:
            conv_attrs["auto_pad"] = a["auto_pad"]
        conv = helper.make_node("Conv", [node.input[0], weight.name], list(node.output), name=node.name, **conv_attrs)
        nodes[i] = conv
        done.append(node.name)
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out, done
