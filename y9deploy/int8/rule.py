"""Which nodes of a y9 detector an INT8 export keeps in float: the one rule (``float_nodes``), decided on the graph.

Levels (``KeepFloat``), measured in docs/benchmarks.md ("INT8"):

- ``none``: every quantizable node in INT8 (kept only to show what the rule protects: the gate refuses such models);
- ``decode``: the head's decode stays float: every node between the head's last learned convolutions and the output
  (the per-level concatenations, reshapes, the split into box and class channels, the DFL softmax and its fixed
  expectation convolution, the box arithmetic, the class sigmoid and the output concatenation);
- ``head``: ``decode`` plus the head's last learned convolutions themselves (the 1x1 convolutions that write the box
  distributions and class logits), whose outputs feed the softmax and the sigmoid directly;
- ``stem`` (the default): ``head`` plus the stem: the first learned convolution (the one that reads the image) and its
  activation (the Sigmoid and Mul of its SiLU). Measured on the embedded model (docs/benchmarks.md "INT8"): floating
  one layer at a time, the stem alone removed most of the output error against FP32 while no other layer stood out;
  kept in float it costs one small convolution (3 input channels).

The DFL's expectation convolution is recognised by its weights, 0, 1, ..., reg_max - 1 (a fixed layer, not a learned
one); the decode is then every node from which the output is reached without passing through a learned convolution.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import numpy as np


class KeepFloat(str, Enum):
    """How much of the head an INT8 export keeps in float (see the module docstring)."""

    none = "none"
    decode = "decode"
    head = "head"
    stem = "stem"


DEFAULT_KEEP = KeepFloat.stem
_ACTIVATIONS = {"Sigmoid", "Mul", "Relu", "LeakyRelu", "HardSigmoid", "HardSwish", "Tanh", "Clip"}


def _is_fixed_dfl(node: Any, weights: dict[str, Any]) -> bool:
    """A Conv whose weights are 0, 1, ..., k-1 (the DFL expectation), which no training wrote."""
    from onnx import numpy_helper

    if node.op_type != "Conv" or len(node.input) < 2 or node.input[1] not in weights:
        return False
    w = numpy_helper.to_array(weights[node.input[1]]).astype(np.float64).ravel()
    return w.size > 1 and bool(np.array_equal(w, np.arange(w.size, dtype=np.float64)))


def head_split(model: Any) -> tuple[list[str], list[str]]:
    """``(decode, last_convs)``: node names of the decode (see the module docstring) and of the learned convolutions
    that feed it. A graph without a learned convolution before its output is one sentence."""
    graph = model.graph
    weights = {init.name: init for init in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    decode: list[str] = []
    last: list[str] = []
    seen: set[str] = set()
    stack = [o.name for o in graph.output]
    while stack:
        tensor = stack.pop()
        node = producer.get(tensor)
        if node is None or node.name in seen:
            continue
        seen.add(node.name)
        if node.op_type == "Conv" and not _is_fixed_dfl(node, weights):
            last.append(node.name)
            continue
        decode.append(node.name)
        stack.extend(i for i in node.input if i)
    if not last:
        raise ValueError("the ONNX graph has no learned convolution before its output; expected a y9 detector.")
    return decode, last


def stem_nodes(model: Any) -> list[str]:
    """Node names of the stem: each Conv that reads a graph input, and the activation nodes (``_ACTIVATIONS``) reached
    from its output through activation nodes only (a SiLU's Sigmoid and Mul). No such Conv is one sentence."""
    graph = model.graph
    inputs = {i.name for i in graph.input} - {init.name for init in graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for i in node.input:
            consumers.setdefault(i, []).append(node)
    first = [n for n in graph.node if n.op_type == "Conv" and n.input and n.input[0] in inputs]
    if not first:
        raise ValueError("the ONNX graph has no convolution reading its input; expected a y9 detector.")
    out: list[str] = []
    stack = list(first)
    while stack:
        node = stack.pop()
        if node.name in out:
            continue
        out.append(node.name)
        stack.extend(c for o in node.output for c in consumers.get(o, []) if c.op_type in _ACTIVATIONS)
    return out


def float_nodes(model: Any, keep: KeepFloat | str = DEFAULT_KEEP) -> list[str]:
    """The names of the nodes an INT8 export of ``model`` (onnx.ModelProto, FP32) keeps in float at level ``keep``."""
    level = KeepFloat(keep)
    if level is KeepFloat.none:
        return []
    decode, last = head_split(model)
    if level is KeepFloat.decode:
        return decode
    return decode + last + (stem_nodes(model) if level is KeepFloat.stem else [])
