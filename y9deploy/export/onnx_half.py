"""An ONNX export of y9 converted to FP16 (``y9 export model.onnx --half``): the hand-off step ONNX -> FP16 ONNX.

The FP32 file is checked as a y9 detector (``y9deploy.engine.onnx_info.inspect_onnx``), converted with FP16
weights, input and output (as ``y9 export --half`` from a checkpoint), checked against the FP32 file in onnxruntime
(relative 2e-2, the FP16 tolerance of the export), and written sealed with its model facts (precision fp16,
everything else as the source's) and its ``.facts.json`` sidecar.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from y9core.errors import Y9Error


def onnx_to_fp16(
    source: str | os.PathLike,
    path: str | os.PathLike,
    *,
    half: bool,
    check: bool = True,
    check_input: Any = None,
    changed: dict[str, Any] | None = None,
) -> Any:
    """Convert the y9 ONNX ``source`` to FP16 at ``path``; returns an ``ExportResult``. ``changed``: options given
    explicitly; an ONNX source keeps its size, batch and outputs, so a value other than its own is refused."""
    from y9core.files.atomic_write import atomic_write, ensure_writable
    from y9core.version import __version__
    from y9deploy.engine.onnx_info import inspect_onnx
    from y9deploy.export.imgsz import parse_imgsz
    from y9deploy.export.metadata import build_metadata, set_metadata
    from y9deploy.export.parity import compare_raw, parity_batch, run_onnxruntime
    from y9deploy.export.result import RTOL_FP16, ExportResult
    from y9deploy.export.source import write_sidecar
    from y9deploy.facts_metadata import props_flag
    from y9deploy.model_file.onnx_digest import seal
    from y9deploy.onnx_fp16 import convert_to_fp16

    source, path = Path(source), Path(path)
    if not half:
        raise ValueError(
            f"{source} is already an ONNX model; `y9 export` converts an ONNX model only to FP16 (--half); export "
            "the .pt checkpoint for other options."
        )
    t0 = time.perf_counter()
    info = inspect_onnx(source)
    opset = next((o.version for o in info.model.opset_import if o.domain in ("", "ai.onnx")), None)
    own = {"imgsz": info.imgsz, "batch": info.batch or 1, "dynamic_batch": info.batch is None, "end2end": info.end2end,
           "opset": opset}  # conf, iou, max_det: baked into end2end exports only, which are not converted
    differ = {k: v for k, v in (changed or {}).items()
              if k not in own or (parse_imgsz(v) if k == "imgsz" else v) != own[k]}  # fmt: skip
    if differ:
        given = ", ".join(f"{k}={v}" for k, v in differ.items())
        raise ValueError(f"{given} cannot apply to {source}: an ONNX model keeps its input size, batch, opset and "
                         "outputs; export the .pt checkpoint with those options instead.")  # fmt: skip
    if info.half:
        raise ValueError(f"{source} is already FP16; expected an FP32 ONNX model to convert.")
    if info.end2end:
        raise ValueError(f"{source} is an end2end export; convert before the NMS is appended: "
                         f"`y9 export CHECKPOINT --half --end2end`.")  # fmt: skip
    ensure_writable(path)
    graph = convert_to_fp16(info.model, keep_io_types=False, source=str(source))
    parity = []
    if check:
        batch = info.batch or 2
        x = parity_batch(check_input, batch, info.imgsz, info.batch is None)
        (ref,) = run_onnxruntime(info.model.SerializeToString(), {"images": x}, ["output0"])
        (out,) = run_onnxruntime(graph.SerializeToString(), {"images": x.astype(np.float16)}, ["output0"])
        result = compare_raw(out, ref, RTOL_FP16)
        if not result.passed:
            raise Y9Error(f"the FP16 conversion of {source} differs from it beyond tolerance ({result.describe()}); "
                          f"{path} was not written.")  # fmt: skip
        parity.append(result)
    facts = info.facts.replace(precision="fp16", y9_version=__version__)
    dynamic = props_flag(info.metadata, "dynamic_batch", str(source))
    props = build_metadata(facts, imgsz=info.imgsz, dynamic_batch=dynamic)
    set_metadata(graph, props)
    graph.producer_name, graph.producer_version = "y9", __version__
    atomic_write(path, seal(graph.SerializeToString()))
    write_sidecar(path, facts)
    return ExportResult(
        path=path, model=facts.model, imgsz=info.imgsz, batch=info.batch or 1, dynamic_batch=dynamic, half=True,
        end2end=False, opset=max((o.version for o in graph.opset_import if o.domain in ("", "ai.onnx")), default=0),
        nodes_raw=len(info.model.graph.node), nodes_simplified=len(graph.graph.node), simplified=False,
        parity=parity, metadata=props, seconds={"fp16": time.perf_counter() - t0},
        notes=[f"converted {source.name} (FP32) to FP16 weights, input and output"],
    )  # fmt: skip
