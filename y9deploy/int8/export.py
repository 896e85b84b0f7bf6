"""INT8 export: a checkpoint (or a y9 FP32 ONNX) -> a calibrated QDQ INT8 ONNX, gated on accuracy.

Steps: the FP32 ONNX twin (``export_onnx_report``, or the given FP32 ONNX) -> the calibration set (the first ``n``
train images of ``data``, ``int8_calib``) -> ONNX Runtime static quantization to QDQ (``int8_quantize``), the nodes
of ``int8_rule.float_nodes`` kept in float -> model facts with precision "int8" and the calibration digest -> the
accuracy gate: both files scored by ``y9 val``'s own validation of a deployed file (``val_deployed``) on ``data``'s
``gate_split``; an INT8 model that loses more than ``max_drop`` mAP50-95 points is refused (one sentence with both
figures) and nothing is written -> written sealed, with its ``.facts.json`` sidecar.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from y9core.errors import Y9Error
from y9deploy.int8.quantize import DEFAULT_CALIB_IMAGES, DEFAULT_METHOD, CalibMethod
from y9deploy.int8.rule import DEFAULT_KEEP, KeepFloat

DEFAULT_MAX_DROP = 1.0  # mAP50-95 points (issue 55)


class AccuracyGateError(Y9Error):
    """The INT8 model lost more mAP50-95 than allowed against its FP32 twin (nothing was written)."""


@dataclass(frozen=True)
class GateResult:
    """mAP50-95 (fractions) of the FP32 twin and the INT8 model on ``images`` images of ``data``'s ``split``."""

    data: Path
    split: str
    images: int
    fp32_map: float
    int8_map: float
    max_drop: float  # points

    @property
    def drop(self) -> float:
        """Points of mAP50-95 lost (negative: INT8 scored higher)."""
        return 100.0 * (self.fp32_map - self.int8_map)

    @property
    def passed(self) -> bool:
        return self.drop <= self.max_drop

    def describe(self) -> str:
        return (
            f"mAP50-95 {self.int8_map:.4f} (INT8) vs {self.fp32_map:.4f} (FP32) on {self.images} {self.split} images "
            f"of {self.data}: {self.drop:+.2f} points lost (allowed {self.max_drop:g})"
        )


@dataclass
class Int8Result:
    """What :func:`export_int8` did."""

    path: Path
    model: str
    imgsz: tuple[int, int]
    calib_images: int
    calib_sha256: str
    method: str
    keep: str
    float_nodes: int  # nodes kept in float by the rule
    quantized_nodes: int  # QuantizeLinear nodes of the written graph
    gate: GateResult | None
    seconds: dict[str, float] = field(default_factory=dict)


def score(data: Any, onnx_path: Path, split: str) -> tuple[float, int]:
    """(mAP50-95, images) of an ONNX file on ``split`` of ``data`` by ``y9 val``'s validation of a deployed file."""
    from y9deploy.validate_deployed import val_deployed

    res = val_deployed(data, onnx_path, split=split, device="cpu", workers=1)
    return float(res.metrics["map50_95"]), int(res.images)


def gate_check(data: Any, fp32_path: Path, int8_path: Path, *, split: str, max_drop: float, label: str) -> GateResult:
    """Score both files; :class:`AccuracyGateError` (one sentence, both figures) past ``max_drop`` points."""
    fp32_map, images = score(data, fp32_path, split)
    int8_map, _ = score(data, int8_path, split)
    gate = GateResult(Path(data), split, images, fp32_map, int8_map, float(max_drop))
    if not gate.passed:
        raise AccuracyGateError(
            f"the INT8 model of {label} loses too much accuracy, {gate.describe()}, so it was not written (try another "
            "--calib-method, calibrate on more images, or allow a larger drop)."
        )
    return gate


def _fp32_twin(source: Any, tmp: Path, imgsz: Any, batch: int, dynamic_batch: bool, opset: int) -> tuple[Path, str]:
    """(the FP32 ONNX to quantize, its label): ``source`` itself when it is an ONNX file, else its export."""
    from y9deploy.export.onnx_export import export_onnx_report

    if isinstance(source, (str, os.PathLike)) and Path(source).suffix.lower() == ".onnx":
        if imgsz is not None or batch != 1 or dynamic_batch or opset != 17:
            raise ValueError(f"{source} is already an ONNX model, which keeps its size, batch and opset; export the "
                             ".pt checkpoint with those options instead.")  # fmt: skip
        return Path(source), str(source)
    twin = tmp / "fp32.onnx"
    export_onnx_report(source, twin, imgsz=imgsz, batch=batch, dynamic_batch=dynamic_batch, opset=opset)
    return twin, str(source) if isinstance(source, (str, os.PathLike)) else getattr(source, "name", "the model")


def export_int8(
    source: Any,
    path: str | os.PathLike,
    *,
    data: str | os.PathLike,
    calib_images: int = DEFAULT_CALIB_IMAGES,
    method: CalibMethod | str = DEFAULT_METHOD,
    keep: KeepFloat | str = DEFAULT_KEEP,
    gate: bool = True,
    max_drop: float = DEFAULT_MAX_DROP,
    gate_split: str = "val",
    imgsz: Any = None,
    batch: int = 1,
    dynamic_batch: bool = False,
    opset: int = 17,
) -> Int8Result:
    """Export ``source`` (a y9 model, a checkpoint, or a y9 FP32 ONNX file) to a QDQ INT8 ONNX at ``path``.

    ``data``: a data.yaml; the first ``calib_images`` images of its train split calibrate the activations
    (``method``: minmax, percentile or entropy), and its ``gate_split`` scores the INT8 model against its FP32 twin
    (``gate=False`` skips the gate); more than ``max_drop`` mAP50-95 points lost is refused. ``keep``: how much of
    the head stays in float (``y9deploy.int8.rule``). Returns an :class:`Int8Result`.
    """
    import onnx

    from y9core.files.atomic_write import atomic_write, ensure_writable
    from y9core.version import __version__
    from y9deploy.engine.onnx_info import inspect_onnx
    from y9deploy.export.metadata import build_metadata, set_metadata
    from y9deploy.export.source import write_sidecar
    from y9deploy.facts_metadata import props_flag
    from y9deploy.int8.calib import calibration_blobs, calibration_set
    from y9deploy.int8.quantize import quantize_qdq
    from y9deploy.int8.rule import float_nodes
    from y9deploy.model_file.onnx_digest import seal

    path, method, keep = Path(path), CalibMethod(method), KeepFloat(keep)
    if not (isinstance(max_drop, (int, float)) and max_drop >= 0):
        raise ValueError(f"max_drop={max_drop!r}; expected a non-negative number of mAP50-95 points.")
    if isinstance(source, (str, os.PathLike)) and Path(source).resolve() == path.resolve():
        raise ValueError(f"the output {path} is the model being quantized; choose another output path.")
    ensure_writable(path)
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="y9-int8-") as tmp_name:
        tmp = Path(tmp_name)
        t = time.perf_counter()
        fp32_path, label = _fp32_twin(source, tmp, imgsz, batch, dynamic_batch, opset)
        info = inspect_onnx(fp32_path)
        if info.facts.precision != "fp32" or info.end2end:
            raise ValueError(f"{fp32_path} is a {info.facts.precision}{' end2end' if info.end2end else ''} model; "
                             "expected an FP32 export without end-to-end NMS to quantize.")  # fmt: skip
        times["fp32"] = time.perf_counter() - t

        t = time.perf_counter()
        calib = calibration_set(data, calib_images)
        blobs = calibration_blobs(calib.files, info.imgsz, info.facts.letterbox)
        exclude = float_nodes(info.model, keep)
        graph = quantize_qdq(info.model, blobs, batch=info.batch or 1, exclude=exclude, method=method)
        times["quantize"] = time.perf_counter() - t

        facts = info.facts.replace(precision="int8", calibration_sha256=calib.sha256, y9_version=__version__)
        dynamic = props_flag(info.metadata, "dynamic_batch", str(fp32_path))
        set_metadata(graph, build_metadata(facts, imgsz=info.imgsz, dynamic_batch=dynamic))
        graph.producer_name, graph.producer_version = "y9", __version__
        onnx.checker.check_model(graph)
        sealed = seal(graph.SerializeToString())
        result_gate = None
        if gate:
            t = time.perf_counter()
            candidate = tmp / "int8.onnx"
            candidate.write_bytes(sealed)
            result_gate = gate_check(data, fp32_path, candidate, split=gate_split, max_drop=max_drop, label=label)
            times["gate"] = time.perf_counter() - t
    atomic_write(path, sealed)
    write_sidecar(path, facts)
    return Int8Result(
        path=path, model=facts.model, imgsz=info.imgsz, calib_images=len(calib.files), calib_sha256=calib.sha256,
        method=method.value, keep=keep.value, float_nodes=len(exclude),
        quantized_nodes=sum(n.op_type == "QuantizeLinear" for n in graph.graph.node), gate=result_gate, seconds=times,
    )  # fmt: skip
