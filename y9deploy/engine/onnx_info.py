"""What the engine builder needs to know about an ONNX file before TensorRT sees it (needs ``onnx``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from y9core.errors import BackendUnavailableError, ModelFileError

INPUT_NAME = "images"
END2END_OUTPUTS = ("num_dets", "boxes", "scores", "classes")
STRIDE = 32


@dataclass
class OnnxInfo:
    """``images`` input facts: ``batch`` None when symbolic; ``imgsz`` (h, w); ``half`` when float16."""

    path: Path
    batch: int | None
    imgsz: tuple[int, int]
    half: bool
    end2end: bool
    input_names: list[str]
    metadata: dict[str, str] = field(default_factory=dict)
    model: Any = field(default=None, repr=False)  # onnx.ModelProto
    facts: Any = None  # y9core.model_facts.ModelFacts, checked against the graph


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as exc:
        raise BackendUnavailableError(
            "building an engine needs the `onnx` package to read the model (pip install onnx)"
        ) from exc
    return onnx


def _dims(value_info: Any) -> list[int | str]:
    dims: list[int | str] = []
    for d in value_info.type.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        else:
            dims.append(d.dim_param or "?")
    return dims


def inspect_onnx(path: str | os.PathLike, *, check_detector: bool = True) -> OnnxInfo:
    """Load ``path`` and check it is a y9-style detector: an ``images`` input [B, 3, H, W] with fixed H, W
    that are multiples of 32, a raw head output [B, 4 + nc, anchors of H x W at its strides] or the end-to-end
    outputs, and model facts (metadata) that agree with the graph (one name per class): ``facts``
    (``check_detector=False`` leaves those checks, and ``facts``, to a later :func:`detector_facts`). Raises
    FileNotFoundError or ModelFileError with one sentence."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"ONNX file {path} does not exist")
    onnx = _onnx()
    from y9deploy.model_file.onnx_digest import note_unchecked, verify

    try:
        model = onnx.load(str(path))
    except Exception as exc:  # protobuf DecodeError and friends
        raise ModelFileError(f"{path} is not a readable ONNX model ({type(exc).__name__}: {exc})") from exc
    if not verify(path):  # a damaged copy of a y9 export that still parses is refused before the builder sees it
        note_unchecked(path)  # a y9 export without its digest: said, as predict and val say it
    graph = model.graph
    initializers = {init.name for init in graph.initializer}
    inputs = [vi for vi in graph.input if vi.name not in initializers or vi.name == INPUT_NAME]
    names = [vi.name for vi in graph.input]
    images = next((vi for vi in inputs if vi.name == INPUT_NAME), None)
    if images is None:
        raise ModelFileError(
            f"{path} has inputs {names} but no input named '{INPUT_NAME}'; expected a detector exported by "
            "`y9 export` (input 'images' [B, 3, H, W])"
        )
    dims = _dims(images)
    if len(dims) != 4 or dims[1] != 3:
        raise ModelFileError(f"{path}: input '{INPUT_NAME}' has shape {dims}, expected [B, 3, H, W]")
    h, w = dims[2], dims[3]
    if not isinstance(h, int) or not isinstance(w, int):
        raise ModelFileError(
            f"{path}: input '{INPUT_NAME}' has a dynamic height/width {dims}; y9 engines have a fixed input size: "
            "export with a fixed --imgsz (only the batch may be dynamic)"
        )
    if h % STRIDE or w % STRIDE or h <= 0 or w <= 0:
        raise ModelFileError(
            f"{path}: input size {h}x{w} (HxW) is not a multiple of {STRIDE}; export with an --imgsz whose "
            f"height and width are multiples of {STRIDE}"
        )
    elem = images.type.tensor_type.elem_type
    half = elem == onnx.TensorProto.FLOAT16
    if elem not in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16):
        raise ModelFileError(
            f"{path}: input '{INPUT_NAME}' has element type "
            f"{onnx.TensorProto.DataType.Name(elem)}, expected FLOAT or FLOAT16"
        )
    end2end = any(node.op_type == "NonMaxSuppression" for node in graph.node)
    metadata = {p.key: p.value for p in model.metadata_props}
    batch = dims[0] if isinstance(dims[0], int) else None
    info = OnnxInfo(path, batch, (h, w), half, end2end, names, metadata, model)
    if check_detector:
        info.facts = detector_facts(info)
    return info


def detector_facts(info: OnnxInfo) -> Any:
    """The model facts of a y9-style detector, checked against its graph; one sentence saying what was expected
    when it is not one."""
    from onnx import helper

    from y9deploy.facts_metadata import facts_from_props, metadata_strides
    from y9deploy.model_file.io_checks import check_end2end_outputs, check_raw_output

    path, model, hw, end2end, metadata = info.path, info.model, info.imgsz, info.end2end, info.metadata
    outputs = {o.name: (_dims(o), o.type.tensor_type.elem_type) for o in model.graph.output}
    shown = ", ".join(f"{n} {d}" for n, (d, _) in outputs.items())
    expected = (
        "expected one output [B, 4 + classes, anchors] (a YOLOv9/GELAN head as `y9 export` writes it) or the "
        "end-to-end outputs num_dets, boxes, scores, classes"
    )
    where = str(path)
    try:
        if end2end or set(END2END_OUTPUTS) <= set(outputs):
            check_end2end_outputs(where, {n: d for n, (d, _) in outputs.items() if n in END2END_OUTPUTS})
            classes = next((i for i in model.graph.initializer if i.name == "e2e_classes"), None)
            nc = int(classes.dims[1]) if classes is not None and len(classes.dims) == 3 else None
        else:
            if len(outputs) != 1:
                raise ModelFileError(f"{path} has {len(outputs)} outputs ({shown})")
            (name, (dims, elem)), = outputs.items()
            dtype = helper.tensor_dtype_to_np_dtype(elem)
            nc = check_raw_output(where, name, dims, dtype, hw=hw, strides=metadata_strides(metadata, where))
    except (ModelFileError, KeyError) as exc:
        reason = str(exc).rstrip(".") if isinstance(exc, ModelFileError) else f"{path} lacks output {exc}"
        raise ModelFileError(f"{reason}; so {path.name} is not a y9 detector: {expected}.") from None
    facts = facts_from_props(metadata, where=where, input_hw=hw, nc=nc)
    return facts.replace(precision=graph_precision_of(model, info.half), end2end=end2end)  # the graph decides


def graph_precision_of(model: Any, half: bool) -> str:
    """"fp16" (a float16 input), "int8" (QuantizeLinear / DequantizeLinear pairs: a QDQ model) or "fp32"."""
    if half:
        return "fp16"
    ops = {node.op_type for node in model.graph.node}
    return "int8" if {"QuantizeLinear", "DequantizeLinear"} <= ops else "fp32"
