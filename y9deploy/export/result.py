"""What an ONNX export did (``ExportResult``) and its parity tolerances, shared by the export from a checkpoint
(``onnx_export``) and the FP16 conversion of an ONNX model (``onnx_half``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from y9deploy.export.parity import ParityResult

RTOL_FP32 = 1e-3
RTOL_FP16 = 2e-2


@dataclass
class ExportResult:
    """What :func:`export_onnx_report` did. ``parity`` holds one check per precision tried."""

    path: Path
    model: str
    imgsz: tuple[int, int]
    batch: int
    dynamic_batch: bool
    half: bool
    end2end: bool
    opset: int
    nodes_raw: int
    nodes_simplified: int
    simplified: bool
    parity: list[ParityResult]
    metadata: dict[str, str]
    seconds: dict[str, float] = field(default_factory=dict)  # per step: export, simplify, parity, ...
    notes: list[str] = field(default_factory=list)
