"""The class count of a y9 end-to-end ONNX model, read from its graph (its outputs do not show it).

``y9deploy.export.end2end`` appends NMS with an initializer ``e2e_classes`` of shape [1, nc, 1]; its dims are read
at the protobuf wire level (``ModelProto.graph`` -> ``GraphProto.initializer`` -> ``TensorProto.dims`` / ``name``),
so neither ``onnx`` nor ``protobuf`` is needed. Other tools' end-to-end models give None (not known).
"""

from __future__ import annotations

import os
from pathlib import Path

from y9deploy.model_file.onnx_digest import wire_fields, wire_varint

CLASSES_INITIALIZER = "e2e_classes"
_GRAPH, _INITIALIZER = 7, 5  # ModelProto.graph, GraphProto.initializer
_DIMS, _NAME = 1, 8  # TensorProto.dims (repeated int64), TensorProto.name


def _dims(data: memoryview) -> tuple[str, list[int]]:
    """(name, dims) of a serialized TensorProto, without reading its data."""
    name, dims = "", []
    for number, start, _, lo, hi in wire_fields(data):
        if number == _NAME:
            name = bytes(data[lo:hi]).decode("utf-8", "replace")
        elif number == _DIMS:
            tag, pos = wire_varint(data, start)
            if tag & 7 == 0:  # one unpacked varint, after its tag
                dims.append(wire_varint(data, pos)[0])
                continue
            pos = lo  # packed: varints one after another
            while pos < hi:
                value, pos = wire_varint(data, pos)
                dims.append(value)
    return name, dims


def end2end_classes(path: str | os.PathLike) -> int | None:
    """The class count of a y9 end-to-end export (the ``e2e_classes`` initializer's middle dimension), or None."""
    data = memoryview(Path(path).read_bytes())
    try:
        for number, _, _, lo, hi in wire_fields(data):
            if number != _GRAPH:
                continue
            graph = data[lo:hi]
            for g_number, _, _, g_lo, g_hi in wire_fields(graph):
                if g_number == _INITIALIZER:
                    name, dims = _dims(graph[g_lo:g_hi])
                    if name == CLASSES_INITIALIZER and len(dims) == 3:
                        return int(dims[1])
    except (ValueError, UnicodeDecodeError):
        return None  # onnxruntime has parsed the file: a structure this reader does not follow
    return None
