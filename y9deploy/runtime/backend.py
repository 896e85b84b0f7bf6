"""The one small protocol every inference backend implements, and the metadata they share.

A backend turns a pre-processed batch into raw outputs; the Detector does pre- and post-processing.

- ``infer(batch)`` takes ``batch`` (ndarray[B, 3, H, W] of ``input_dtype``, RGB, 0..1) and returns numpy
  arrays, or, on a CUDA backend, a torch CUDA tensor of the same layout and returns torch CUDA tensors
  (the GPU path: nothing leaves the device). Outputs are keyed by name: ``output0`` (ndarray[B, 4+nc, A])
  for raw models; ``num_dets`` [B, 1], ``boxes`` [B, max_det, 4], ``scores`` [B, max_det], ``classes``
  [B, max_det] for end-to-end models (NMS inside). Returned arrays may be views of buffers that the next
  ``infer`` overwrites: copy what must outlive it.
- ``extras``: for end-to-end models whose NMS thresholds are inputs (``score_threshold``,
  ``iou_threshold``, ``max_output_boxes``), ``infer(batch, extras)`` passes their values.

Backends are not thread-safe: one thread per backend (and per Detector).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

END2END_OUTPUTS = ("num_dets", "boxes", "scores", "classes")
NMS_INPUTS = ("score_threshold", "iou_threshold", "max_output_boxes")
DEFAULT_LETTERBOX = {"auto": False, "scaleup": True, "color": 114, "stride": 32}


@runtime_checkable
class Backend(Protocol):
    """What the Detector needs from an inference backend (see the module docstring)."""

    name: str  # "onnxruntime", "torch", "tensorrt" or "tensorrt_rtx"
    device: str  # "cpu" or "cuda:N"
    input_name: str
    input_hw: tuple[int, int]
    input_dtype: np.dtype
    batch_range: tuple[int, int]  # (min, max) batch the model accepts
    end2end: bool
    extras: tuple[str, ...]  # NMS threshold inputs of an end-to-end model, if any
    metadata: dict[str, Any]

    def infer(self, batch: Any, extras: dict[str, Any] | None = None) -> dict[str, Any]: ...

    def close(self) -> None: ...


@dataclass
class ModelInfo:
    """The model description a Detector needs, parsed from ONNX metadata, an engine manifest or a checkpoint.

    Attributes:
        names: class names, index = class id.
        imgsz: network input (h, w).
        stride: the model's strides (e.g. [8, 16, 32]).
        letterbox: letterbox settings (auto, scaleup, color, stride).
    """

    names: list[str]
    imgsz: tuple[int, int]
    stride: list[int] = field(default_factory=lambda: [8, 16, 32])
    letterbox: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_LETTERBOX))
    model: str = ""
    end2end: bool = False
    half: bool = False
    dynamic_batch: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "names": list(self.names),
            "imgsz": list(self.imgsz),
            "stride": list(self.stride),
            "letterbox": dict(self.letterbox),
            "model": self.model,
            "end2end": self.end2end,
            "half": self.half,
            "dynamic_batch": self.dynamic_batch,
            **self.extra,
        }


def _json(props: dict[str, str], key: str, default: Any, where: str) -> Any:
    if key not in props or props[key] == "":
        return default
    try:
        return json.loads(props[key])
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: metadata entry {key!r} = {props[key]!r} is not valid JSON.") from exc


def parse_metadata(
    props: dict[str, str], *, where: str, imgsz: tuple[int, int] | None = None, nc: int | None = None
) -> ModelInfo:
    """ONNX ``metadata_props`` (all strings, JSON for structured values; see CONTRACTS.md) -> ModelInfo.

    Args:
        props: the string key/value pairs.
        where: the file they came from (for error messages).
        imgsz: the (h, w) of the model input when the file fixes it (used when ``imgsz`` is absent).
        nc: the number of classes the outputs have (names default to ``class0..``; a mismatch is an error).
    """
    names = _json(props, "names", None, where)
    if isinstance(names, dict):  # {"0": "person", ...} written by other tools
        names = [names[k] for k in sorted(names, key=lambda k: int(k))]
    if names is None:
        names = [f"class{i}" for i in range(nc or 0)]
    if nc is not None and len(names) != nc:
        raise ValueError(
            f"{where}: metadata lists {len(names)} class names but the model outputs {nc} classes."
        )
    size = _json(props, "imgsz", None, where)
    if size is None:
        if imgsz is None:
            raise ValueError(
                f"{where}: the input size is neither in the metadata ('imgsz') nor fixed by the model."
            )
        size = imgsz
    if isinstance(size, int):
        size = [size, size]
    letterbox = dict(DEFAULT_LETTERBOX)
    letterbox.update(_json(props, "letterbox", {}, where))
    known = {"names", "imgsz", "stride", "letterbox", "model", "end2end", "half", "dynamic_batch"}
    return ModelInfo(
        names=[str(n) for n in names],
        imgsz=(int(size[0]), int(size[1])),
        stride=[int(s) for s in _json(props, "stride", [8, 16, 32], where)],
        letterbox=letterbox,
        model=props.get("model", ""),
        end2end=props.get("end2end", "0") == "1",
        half=props.get("half", "0") == "1",
        dynamic_batch=props.get("dynamic_batch", "0") == "1",
        extra={k: v for k, v in props.items() if k not in known},
    )


def parse_device(device: str | int | None) -> tuple[str, int]:
    """``None``/"cpu"/"cuda"/"cuda:1"/1 -> ("auto"|"cpu"|"cuda", index).

    Raises:
        ValueError: anything else.
    """
    if device is None or device == "auto":
        return "auto", 0
    if isinstance(device, (int, np.integer)) and not isinstance(device, bool):
        return "cuda", int(device)
    text = str(device).strip().lower()
    if text == "cpu":
        return "cpu", 0
    if text == "cuda" or text == "gpu":
        return "cuda", 0
    if text.startswith("cuda:") and text[5:].isdigit():
        return "cuda", int(text[5:])
    if text.isdigit():
        return "cuda", int(text)
    raise ValueError(
        f"device={device!r} is not understood; expected None, 'cpu', 'cuda', 'cuda:N' or an integer N."
    )


def batch_chunks(n: int, batch_range: tuple[int, int]) -> list[tuple[int, int, int]]:
    """Split ``n`` frames into runs the model accepts.

    Returns:
        ``[(start, stop, padded_batch), ...]``: frames ``start:stop`` go through one call of batch
        ``padded_batch`` (>= stop - start: static-batch models are padded up to their minimum).
    """
    lo, hi = batch_range
    if n <= 0:
        return []
    out = []
    for start in range(0, n, hi):
        stop = min(start + hi, n)
        out.append((start, stop, max(stop - start, lo)))
    return out


def is_torch_tensor(x: Any) -> bool:
    """True for a torch.Tensor, without importing torch."""
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")
