"""What a ``y9.Model`` holds: its kind (checked at construction, one sentence when it is none), the facts every
default comes from, and what ``Model.info()`` returns."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the kinds of model a ``Model`` holds
KINDS = ("architecture", "checkpoint", "onnx", "engine")


@dataclass(frozen=True)
class ModelSummary:
    """What ``Model.info()`` returns.

    Attributes:
        source: the file or model name given. kind: one of ``KINDS``.
        architecture: the model name (gelan-s, yolov9-c, ...; "" when the file does not record it).
        imgsz: (h, w) the model was trained at (checkpoints), or the file's fixed input (ONNX, engines).
        names: class names, index = class id.
        params, gflops: parameter count and GFLOPs at ``imgsz`` (architectures and checkpoints; None otherwise).
    """

    source: str
    kind: str
    architecture: str
    imgsz: tuple[int, int]
    names: tuple[str, ...]
    params: int | None = None
    gflops: float | None = None

    @property
    def nc(self) -> int:
        return len(self.names)

    def __str__(self) -> str:
        shown = ", ".join(self.names[:8]) + (f", ... ({self.nc} in all)" if self.nc > 8 else "")
        size = "trained at" if self.kind == "checkpoint" else "input"
        lines = [
            f"{self.source} ({self.kind})",
            f"  architecture  {self.architecture or '(not recorded)'}",
            f"  image size    {self.imgsz[0]}x{self.imgsz[1]} ({size})",
            f"  classes       {self.nc}: {shown}",
        ]
        if self.params is not None:
            lines.append(f"  parameters    {self.params:,}")
        if self.gflops is not None:
            lines.append(f"  GFLOPs        {self.gflops:.1f} at {self.imgsz[0]}x{self.imgsz[1]}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Facts:
    """The facts every default comes from (one record; ``Model._facts`` reads it)."""

    architecture: str
    imgsz: tuple[int, int]
    names: tuple[str, ...]


def kind_of(source: str | Path) -> str:
    """One of ``KINDS`` for a model name or a file, checked at the boundary (one sentence when it is neither)."""
    from y9deploy.runtime.backends.loading import ENGINE_SUFFIXES, ONNX_SUFFIXES, TORCH_SUFFIXES

    path = Path(source)
    suffix = path.suffix.lower()
    kinds = {**dict.fromkeys(TORCH_SUFFIXES, "checkpoint"), **dict.fromkeys(ONNX_SUFFIXES, "onnx"),
             **dict.fromkeys(ENGINE_SUFFIXES, "engine")}  # fmt: skip
    if suffix in kinds:
        if not path.is_file():
            from y9.model_files import missing_model_message

            raise FileNotFoundError(missing_model_message(source))  # the CLI's words too (y9.model_files)
        return kinds[suffix]
    from y9train.models.config import MODEL_NAMES, unknown_model_message

    if suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise FileNotFoundError(f"model config {path} does not exist; expected a model .yaml file, or a model "
                                    f"name: {', '.join(MODEL_NAMES)}.")  # fmt: skip
        return "architecture"
    if str(source) in MODEL_NAMES:
        return "architecture"
    raise ValueError(unknown_model_message(str(source)) + " A file must end in .pt, .onnx or .engine.")


def hw(value: Any) -> tuple[int, int]:
    return (int(value), int(value)) if isinstance(value, int) else (int(value[0]), int(value[1]))


