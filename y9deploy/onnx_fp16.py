"""FP32 -> FP16 ONNX conversion (onnxconverter-common): half exports (y9deploy.export) and strongly typed TensorRT
builds (y9deploy.engine) both import it from here, below them."""

from __future__ import annotations

import warnings
from typing import Any

from y9core.errors import BackendUnavailableError, ModelFileError


def convert_to_fp16(model: Any, *, keep_io_types: bool, source: str = "the model") -> Any:
    """Return an FP16 copy of ``model`` (onnx.ModelProto) that passes onnx.checker.

    ``keep_io_types=True`` keeps float32 graph inputs/outputs (casts inside the graph): what a strongly
    typed TensorRT build wants. ``False`` makes ``images`` and the outputs float16 (``y9 export --half``).
    Ops that must stay FP32 (Resize scales, NonMaxSuppression, TopK, ...) keep onnxconverter-common's
    default block list.
    """
    try:
        import onnx
        from onnxconverter_common import float16
    except ImportError as exc:
        raise BackendUnavailableError(
            "FP16 conversion of an ONNX model needs `onnx` and `onnxconverter-common` "
            "(pip install onnx onnxconverter-common)"
        ) from exc
    with warnings.catch_warnings():
        # The converter warns for every constant it clamps into the FP16 range; that is expected here.
        warnings.simplefilter("ignore", UserWarning)
        work = onnx.ModelProto()
        work.CopyFrom(model)  # the converter edits its argument in place
        converted = float16.convert_float_to_float16(work, keep_io_types=keep_io_types)
    try:
        onnx.checker.check_model(converted)
    except onnx.checker.ValidationError as exc:
        raise ModelFileError(f"the FP16 conversion of {source} is not a valid ONNX model: {exc}") from exc
    return converted
