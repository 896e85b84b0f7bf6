"""FP32 ONNX -> QDQ INT8 ONNX with ONNX Runtime's static quantization (``onnxruntime.quantization``).

QDQ format (QuantizeLinear / DequantizeLinear pairs around each quantized node: what ONNX Runtime, TensorRT and
TensorRT-RTX all read), weights INT8 symmetric per output channel, activations calibrated on images (``int8_calib``)
as UINT8 with a zero point (asymmetric: ONNX Runtime's fast x86 integer kernels are UINT8 x INT8; symmetric INT8
activations ran slower than FP32 on the 2-core AVX2 box, docs/benchmarks.md "INT8"), the nodes named by
``int8_rule.float_nodes`` left in float. TensorRT takes only symmetric INT8: the engine builder rewrites the ranges
(``y9deploy.engine.qdq_tensorrt``). ``CalibMethod`` names the activation range estimators: ``average`` (the default,
chosen by measurement with the stem kept in float, docs/benchmarks.md "INT8"): each tensor's range the mean over the
calibration images of each image's min and max (ONNX Runtime's MinMax with ``CalibMovingAverage``), which clips rare
outliers; ``minmax``: the plain min and max over all images. Both keep two scalars per tensor and image (bounded
memory); percentile and entropy keep every calibration activation until the end (an earlier run reached 15 GB RSS).
Before quantizing, each AveragePool becomes the depthwise convolution it equals (``y9deploy.int8.pool_conv``): the
same function in float, and ONNX Runtime then runs it on its integer convolution kernels instead of its slow
``QLinearAveragePool`` (measured in docs/benchmarks.md "INT8").
"""

from __future__ import annotations

import tempfile
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from y9core.errors import BackendUnavailableError


class CalibMethod(str, Enum):
    """Activation range estimators of ONNX Runtime's calibrator."""

    minmax = "minmax"
    average = "average"
    percentile = "percentile"
    entropy = "entropy"


DEFAULT_METHOD = CalibMethod.average
DEFAULT_CALIB_IMAGES = 64


def _quantization() -> Any:
    try:
        import onnxruntime.quantization as q
    except ImportError as exc:
        raise BackendUnavailableError(
            "the INT8 export needs onnxruntime's quantization tools (pip install onnxruntime)"
        ) from exc
    return q


def quantize_qdq(
    model: Any,
    blobs: np.ndarray,
    *,
    batch: int,
    exclude: list[str],
    method: CalibMethod | str = DEFAULT_METHOD,
    symmetric: bool = False,
    op_types: list[str] | None = None,
) -> Any:
    """The QDQ INT8 twin of ``model`` (onnx.ModelProto, FP32, y9 detector) calibrated on ``blobs`` (float32
    [N, 3, H, W], fed ``batch`` at a time), its AveragePools as depthwise convolutions, the nodes ``exclude`` (names
    of ``model``; a rewritten pool keeps its name) kept in float. Returns an onnx.ModelProto."""
    import onnx

    from y9deploy.int8.calib import make_reader
    from y9deploy.int8.pool_conv import pools_as_convs

    q = _quantization()
    method = CalibMethod(method)
    methods = {CalibMethod.minmax: q.CalibrationMethod.MinMax, CalibMethod.average: q.CalibrationMethod.MinMax,
               CalibMethod.percentile: q.CalibrationMethod.Percentile, CalibMethod.entropy: q.CalibrationMethod.Entropy}  # fmt: skip
    chosen = methods[method]
    with tempfile.TemporaryDirectory(prefix="y9-int8-") as tmp:
        src, pre, dst = Path(tmp, "fp32.onnx"), Path(tmp, "pre.onnx"), Path(tmp, "int8.onnx")
        onnx.save(pools_as_convs(model)[0], str(src))
        q.quant_pre_process(str(src), str(pre), skip_optimization=True, skip_onnx_shape=False,
                            skip_symbolic_shape=True)  # fmt: skip
        q.quantize_static(
            str(pre),
            str(dst),
            make_reader(blobs, batch),
            quant_format=q.QuantFormat.QDQ,
            per_channel=True,
            activation_type=q.QuantType.QInt8 if symmetric else q.QuantType.QUInt8,
            weight_type=q.QuantType.QInt8,
            nodes_to_exclude=list(exclude),
            op_types_to_quantize=op_types,
            calibrate_method=chosen,
            extra_options={"ActivationSymmetric": bool(symmetric), "WeightSymmetric": True,
                           "CalibMovingAverage": method is CalibMethod.average},  # fmt: skip
        )
        out = onnx.load(str(dst))
    return out


def is_qdq(model: Any) -> bool:
    """Whether an onnx.ModelProto holds QuantizeLinear / DequantizeLinear pairs (a QDQ INT8 model)."""
    ops = {node.op_type for node in model.graph.node}
    return "QuantizeLinear" in ops and "DequantizeLinear" in ops
