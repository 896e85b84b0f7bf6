"""A QDQ INT8 ONNX (``y9 export --int8``) as TensorRT's explicit quantization reads it.

The INT8 export is made for ONNX Runtime on the CPU: activations UINT8 with a zero point (asymmetric, the fast
integer kernels of x86), convolution biases INT32 behind a DequantizeLinear. TensorRT and TensorRT-RTX take only
symmetric quantization (zero point 0) and refuse an INT32 DequantizeLinear input. So before the parser sees it:

- every INT32 bias behind a DequantizeLinear is folded back to its float value (``(q - zero_point) * scale``);
- every UINT8 activation scale / zero point pair becomes INT8 with zero point 0 and the scale that covers the same
  calibrated range (``max(|lo|, |hi|) / 127``, ``lo`` and ``hi`` the range the pair represents).

The calibrated ranges are kept; what changes is the rounding grid, so an engine scores close to, not exactly as,
the ONNX Runtime model. The file on disk is never changed (the builder parses the rewritten bytes).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _int32_bias_dq(node: Any, inits: dict[str, Any]) -> bool:
    from onnx import TensorProto

    return (node.op_type == "DequantizeLinear" and node.input[0] in inits
            and inits[node.input[0]].data_type == TensorProto.INT32)  # fmt: skip


def tensorrt_qdq(model: Any) -> tuple[Any, list[str]]:
    """A copy of ``model`` (onnx.ModelProto, QDQ) that TensorRT's explicit quantization accepts, and notes."""
    import onnx
    from onnx import TensorProto, numpy_helper

    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    inits = {i.name: i for i in graph.initializer}
    arr = {name: numpy_helper.to_array(t) for name, t in inits.items()}

    folded = [n for n in graph.node if _int32_bias_dq(n, inits)]
    for node in folded:
        q = arr[node.input[0]].astype(np.float64)
        scale = arr[node.input[1]].astype(np.float64)
        zp = arr[node.input[2]].astype(np.float64) if len(node.input) > 2 and node.input[2] else 0.0
        graph.initializer.append(numpy_helper.from_array(((q - zp) * scale).astype(np.float32), node.output[0]))
        graph.node.remove(node)

    pairs: dict[tuple[str, str], None] = {}
    for node in graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear") and len(node.input) > 2:
            zp_name = node.input[2]
            if zp_name in inits and inits[zp_name].data_type == TensorProto.UINT8:
                pairs[(node.input[1], zp_name)] = None
    for scale_name, zp_name in pairs:
        scale = arr[scale_name].astype(np.float64)
        zp = arr[zp_name].astype(np.float64)
        lo, hi = (0.0 - zp) * scale, (255.0 - zp) * scale
        new_scale = np.maximum(np.maximum(-lo, hi) / 127.0, np.finfo(np.float32).tiny)
        inits[scale_name].CopyFrom(numpy_helper.from_array(new_scale.astype(np.float32), scale_name))
        inits[zp_name].CopyFrom(numpy_helper.from_array(np.zeros(zp.shape, dtype=np.int8), zp_name))
    del graph.value_info[:]  # recorded UINT8 tensor types no longer hold; the parser infers them again
    notes = []
    if folded or pairs:
        notes.append(f"for TensorRT's explicit quantization: {len(folded)} INT32 biases folded to float, "
                     f"{len(pairs)} UINT8 activation ranges made symmetric INT8 (same calibrated ranges)")  # fmt: skip
    return out, notes
