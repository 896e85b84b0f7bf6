"""torch -> ONNX for YOLOv9/GELAN: static shape by default, optional dynamic batch, FP16, end-to-end NMS.

Steps: load (model or checkpoint) -> re-parameterize + fuse -> ``torch.onnx.export`` -> onnx.checker ->
onnxsim -> parity against torch in onnxruntime (CPU): the export FAILS beyond tolerance -> [FP16] ->
[end2end NMS] -> metadata -> written atomically. Input ``images`` float [B, 3, H, W] RGB in 0..1
(float16 with ``half``); output ``output0`` [B, 4 + nc, A] (see ``y9deploy.export.end2end`` for end2end).
"""

from __future__ import annotations

import inspect
import io
import os
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from y9core.errors import Y9Error
from y9core.model_facts import FactsWarning, size_notice
from y9deploy.export.imgsz import parse_imgsz
from y9deploy.export.parity import ParityResult, parity_batch
from y9deploy.export.result import RTOL_FP16, RTOL_FP32, ExportResult

__all__ = ["ExportResult", "export_onnx", "export_onnx_report", "parse_imgsz"]



def _wrap(model: Any) -> Any:
    """A module returning only the main raw output (eval-mode models may return tuples)."""
    from torch import nn

    class Single(nn.Module):
        def __init__(self, inner: nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x):
            y = self.inner(x)
            return y[0] if isinstance(y, (tuple, list)) else y

    return Single(model).eval()


def _torch_to_onnx(model: Any, batch: int, imgsz: tuple[int, int], opset: int, dynamic_batch: bool) -> Any:
    import onnx
    import torch

    dummy = torch.zeros(batch, 3, *imgsz)
    kwargs: dict[str, Any] = dict(
        input_names=["images"],
        output_names=["output0"],
        opset_version=opset,
        do_constant_folding=True,
    )
    if dynamic_batch:
        kwargs["dynamic_axes"] = {"images": {0: "batch"}, "output0": {0: "batch"}}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False  # the TorchScript exporter: mature for conv nets, no onnxscript needed
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore", category=DeprecationWarning)
        warnings.simplefilter("ignore", category=torch.jit.TracerWarning)
        warnings.simplefilter("ignore", category=UserWarning)
        torch.onnx.export(_wrap(model), (dummy,), buffer, **kwargs)
    return onnx.load_from_string(buffer.getvalue())


def _set_output_shape(model: Any, channels: int, anchors: int) -> None:
    """State ``output0``'s [B, 4 + nc, A] (a dynamic-batch trace leaves the channel count symbolic)."""
    out = next(o for o in model.graph.output if o.name == "output0")
    dims = out.type.tensor_type.shape.dim
    for dim, value in zip(list(dims)[1:], (channels, anchors)):
        dim.Clear()
        dim.dim_value = value


def _check(model: Any, what: str) -> None:
    import onnx

    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise Y9Error(f"the {what} ONNX graph fails onnx.checker: {exc}") from exc


def _parity(model: Any, x: np.ndarray, ref: np.ndarray, rtol: float, half: bool, path: Path) -> ParityResult:
    from y9deploy.export.parity import compare_raw, run_onnxruntime

    feed = x.astype(np.float16) if half else x
    (out,) = run_onnxruntime(model.SerializeToString(), {"images": feed}, ["output0"])
    result = compare_raw(out, ref, rtol)
    if not result.passed:
        raise Y9Error(
            f"the {'float16' if half else 'float32'} ONNX graph differs from torch in onnxruntime beyond "
            f"tolerance ({result.describe()}); {path} was not written (an untrained network with random "
            "weights can be chaotic in float32 on noise: check on real images with check_input= or "
            "`y9 export --check-images DIR`, or skip the check with --no-check)"
        )
    return result


def export_onnx_report(
    source: Any,
    path: str | os.PathLike,
    *,
    imgsz: Any = None,
    batch: int = 1,
    dynamic_batch: bool = False,
    half: bool = False,
    simplify: bool = True,
    end2end: bool = False,
    opset: int = 17,
    conf: float = 0.25,
    iou: float = 0.45,
    max_det: int = 300,
    check: bool = True,
    check_input: Any = None,
) -> ExportResult:
    """Export and report; see :func:`export_onnx`. A ``.onnx`` source with ``half=True`` is converted to FP16
    (``y9deploy.export.onnx_half``). ``conf``/``iou``/``max_det``: the end2end defaults baked
    into the graph (run-time inputs can override them). ``check=False`` skips the parity check;
    ``check_input`` (float32 [N, 3, H, W] in 0..1, or image files/folders, letterboxed here) replaces its
    default input, uniform noise. Untrained networks with random weights can be chaotic in float32 (tiny rounding
    differences grow to pixels); real images keep them in their calibrated range."""
    import onnx

    from y9core.files.atomic_write import atomic_write, ensure_writable
    from y9deploy.export.metadata import build_metadata, set_metadata
    from y9deploy.export.parity import torch_reference
    from y9deploy.export.simplify import simplify_onnx
    from y9deploy.export.source import deployable, load_source, source_facts, write_sidecar
    from y9deploy.model_file.onnx_digest import seal

    path = Path(path)
    if isinstance(source, (str, os.PathLike)) and Path(source).resolve() == path.resolve():
        raise ValueError(
            f"the output {path} is the checkpoint being exported; choose another output path (an .onnx file)"
        )
    if isinstance(source, (str, os.PathLike)) and Path(source).suffix.lower() == ".onnx":
        from y9deploy.export.onnx_half import onnx_to_fp16

        changed = {k: v for k, v in (("imgsz", imgsz), ("batch", batch if batch != 1 else None),
                                     ("dynamic_batch", dynamic_batch or None), ("end2end", end2end or None),
                                     ("opset", opset if opset != 17 else None), ("conf", conf if conf != 0.25 else None),
                                     ("iou", iou if iou != 0.45 else None),
                                     ("max_det", max_det if max_det != 300 else None))
                   if v is not None}  # fmt: skip
        return onnx_to_fp16(source, path, half=half, check=check, check_input=check_input, changed=changed)
    if not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch {batch!r} is not a positive integer")
    if end2end and opset < 13:
        raise ValueError(f"opset {opset} is too old for --end2end; expected 13 or newer (default 17)")
    if opset < 11:
        raise ValueError(f"opset {opset} is too old; expected 11 or newer (default 17)")
    times: dict[str, float] = {}
    notes: list[str] = []

    given_hw = parse_imgsz(imgsz) if imgsz is not None else None
    t = time.perf_counter()
    original, source_sha, label = load_source(source)
    model = deployable(original)  # a y9 model (else one sentence), re-parameterized and fused
    facts = source_facts(original, source_sha, label)
    hw = given_hw or parse_imgsz(facts.imgsz)
    notice = size_notice(facts, hw, f"the ONNX export of {label}")
    if notice is not None:
        warnings.warn(notice, FactsWarning, stacklevel=2)
    check_batch = int(batch) + 1 if dynamic_batch else int(batch)
    x = parity_batch(check_input, check_batch, hw, dynamic_batch)
    check_batch = x.shape[0]
    ensure_writable(path)  # a read-only or misnamed output fails now, not after the export
    times["load"] = time.perf_counter() - t
    anchors = sum((hw[0] // int(s)) * (hw[1] // int(s)) for s in model.stride.tolist())

    t = time.perf_counter()
    raw = _torch_to_onnx(model, int(batch), hw, opset, dynamic_batch)
    _set_output_shape(raw, 4 + int(model.nc), anchors)
    _check(raw, "exported")
    times["export"] = time.perf_counter() - t
    nodes_raw = len(raw.graph.node)

    t = time.perf_counter()
    graph, nodes_after, simplified = raw, nodes_raw, False
    if simplify:
        res = simplify_onnx(raw)
        graph, nodes_after, simplified = res.model, res.nodes_after, res.simplified
        if res.note:
            notes.append(f"simplification skipped: {res.note}")
        _set_output_shape(graph, 4 + int(model.nc), anchors)
    times["simplify"] = time.perf_counter() - t

    # Parity against the torch model that was exported (re-parameterized and fused, as timm's check_forward
    # does); y9train.reparam is tested on its own against the official outputs. A dynamic batch is checked at
    # batch + 1 (not the traced batch) to prove the batch really is symbolic.
    t = time.perf_counter()
    ref = torch_reference(model, x) if check else None
    parity: list[ParityResult] = []
    if check:
        parity.append(_parity(graph, x, ref, RTOL_FP32, False, path))
    times["parity"] = time.perf_counter() - t

    if half:
        from y9deploy.onnx_fp16 import convert_to_fp16

        t = time.perf_counter()
        graph = convert_to_fp16(graph, keep_io_types=False, source=f"the {label} export")
        if check:
            parity.append(_parity(graph, x, ref, RTOL_FP16, True, path))
        times["fp16"] = time.perf_counter() - t

    nms_defaults = None
    if end2end:
        from y9deploy.export.end2end import append_nms
        from y9deploy.export.parity import run_onnxruntime

        t = time.perf_counter()
        graph = append_nms(graph, nc=int(model.nc), num_anchors=anchors, conf=conf, iou=iou, max_det=max_det)
        _check(graph, "end2end")
        feed = x.astype(np.float16) if half else x
        num, boxes, _, _ = run_onnxruntime(graph.SerializeToString(), {"images": feed})
        if num.shape != (check_batch, 1) or boxes.shape != (check_batch, max_det, 4):
            raise Y9Error(f"the end2end graph gives num_dets {num.shape} and boxes {boxes.shape}; expected "
                          f"({check_batch}, 1) and ({check_batch}, {max_det}, 4)")  # fmt: skip
        nms_defaults = {"score_threshold": conf, "iou_threshold": iou, "max_output_boxes": max_det}
        times["end2end"] = time.perf_counter() - t

    from y9core.version import __version__

    out_facts = facts.replace(model=model.name, precision="fp16" if half else "fp32", end2end=end2end,
                              y9_version=__version__)  # fmt: skip
    props = build_metadata(out_facts, imgsz=hw, dynamic_batch=dynamic_batch, nms_defaults=nms_defaults)
    set_metadata(graph, props)
    graph.producer_name, graph.producer_version = "y9", props["y9_version"]
    onnx.checker.check_model(graph)
    atomic_write(path, seal(graph.SerializeToString()))  # sha256 sealed in: a damaged copy is refused
    write_sidecar(path, out_facts)
    return ExportResult(
        path=path,
        model=model.name,
        imgsz=hw,
        batch=int(batch),
        dynamic_batch=dynamic_batch,
        half=half,
        end2end=end2end,
        opset=opset,
        nodes_raw=nodes_raw,
        nodes_simplified=nodes_after,
        simplified=simplified,
        parity=parity,
        metadata=props,
        seconds=times,
        notes=notes,
    )


def export_onnx(
    source: Any,
    path: str | os.PathLike,
    *,
    imgsz: Any = None,
    batch: int = 1,
    dynamic_batch: bool = False,
    half: bool = False,
    simplify: bool = True,
    end2end: bool = False,
    opset: int = 17,
) -> Path:
    """Export ``source`` (a y9 model or a checkpoint path, y9 or official format) to ONNX at ``path``.

    ``imgsz``: None (the size the model was trained at: its facts), 640 or (h, w), multiples of 32 (the input
    size is fixed; another size than the trained one is said once, as a ``FactsWarning``). Beside the ONNX,
    ``<stem>.facts.json`` holds its model facts. ``batch``: the static batch (the
    traced batch with ``dynamic_batch``, which makes only the batch dimension symbolic). ``half``: FP16
    weights and I/O. ``simplify``: onnxsim (node counts in :func:`export_onnx_report`). ``end2end``: NMS in
    the graph (``NonMaxSuppression``; thresholds as optional inputs). The export fails if onnxruntime's
    output differs from torch's beyond 1e-3 relative (2e-2 for FP16). Returns ``path``.
    """
    return export_onnx_report(
        source,
        path,
        imgsz=imgsz,
        batch=batch,
        dynamic_batch=dynamic_batch,
        half=half,
        simplify=simplify,
        end2end=end2end,
        opset=opset,
    ).path
