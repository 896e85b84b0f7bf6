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

Backends are not thread-safe: one thread per backend (a Detector refuses a second thread: runtime.busy).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from y9core.errors import ModelFileError

END2END_OUTPUTS = ("num_dets", "boxes", "scores", "classes")
NMS_INPUTS = ("score_threshold", "iou_threshold", "max_output_boxes")
DEFAULT_LETTERBOX = {"auto": False, "scaleup": True, "color": 114, "stride": 32}
Y9_KEYS = ("names", "stride", "imgsz", "letterbox", "model")  # what `y9 export` always writes


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
        raise ModelFileError(f"{where}: metadata entry {key!r} = {props[key]!r} is not valid JSON.") from exc


def _malformed(where: str, key: str, value: Any, expected: str) -> ModelFileError:
    return ModelFileError(f"{where}: metadata entry {key!r} = {value!r} is malformed; expected {expected}.")


def _names(raw: Any, where: str, nc: int | None) -> list[str]:
    if isinstance(raw, dict):  # {"0": "person", ...} written by other tools
        try:
            keys = sorted(raw, key=lambda k: int(k))
        except (TypeError, ValueError):
            raise _malformed(where, "names", raw, "a list of class names or {index: name}") from None
        if [int(k) for k in keys] != list(range(len(keys))):
            raise _malformed(where, "names", raw, "class indices 0..N-1 without gaps")
        raw = [raw[k] for k in keys]
    if not isinstance(raw, list) or not all(isinstance(n, (str, int)) for n in raw):
        raise _malformed(where, "names", raw, "a JSON list of class names")
    return [str(n) for n in raw]


def _size(raw: Any, where: str) -> tuple[int, int]:
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = [raw, raw]
    ok = isinstance(raw, list) and len(raw) == 2
    ok = ok and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in raw)
    if not ok:
        raise _malformed(where, "imgsz", raw, "[height, width] of positive integers")
    return int(raw[0]), int(raw[1])


def _strides(raw: Any, where: str) -> list[int]:
    ok = isinstance(raw, list) and len(raw) > 0
    ok = ok and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 1 for v in raw)
    if not ok or any(float(v) != int(v) for v in raw):
        raise _malformed(where, "stride", raw, "a non-empty list of positive integers such as [8, 16, 32]")
    return [int(v) for v in raw]


def metadata_strides(props: dict[str, str], where: str) -> list[int]:
    """The ``stride`` entry of ONNX metadata (default [8, 16, 32]); ModelFileError when malformed."""
    return _strides(_json(props, "stride", [8, 16, 32], where), where)


def _letterbox(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict) or not set(raw) <= set(DEFAULT_LETTERBOX):
        raise _malformed(where, "letterbox", raw, f"an object with keys among {sorted(DEFAULT_LETTERBOX)}")
    out = {**DEFAULT_LETTERBOX, **raw}
    stride, color = out["stride"], out["color"]
    if not isinstance(stride, int) or isinstance(stride, bool) or stride < 1:
        raise _malformed(where, "letterbox", raw, "a positive integer 'stride'")
    colors = color if isinstance(color, list) else [color]
    if not colors or not all(isinstance(c, (int, float)) and 0 <= c <= 255 for c in colors):
        raise _malformed(where, "letterbox", raw, "a 'color' of 0..255 (one value or three)")
    return out


def parse_metadata(
    props: dict[str, str], *, where: str, imgsz: tuple[int, int] | None = None, nc: int | None = None
) -> ModelInfo:
    """ONNX ``metadata_props`` (all strings, JSON for structured values, as ``export.metadata`` writes them)
    -> ModelInfo.

    A file that y9 wrote (``y9_version`` present) must carry every entry ``y9 export`` writes; a file from
    another tool may lack them (names then default to ``class0..``, with a warning naming the file).

    Args:
        props: the string key/value pairs.
        where: the file they came from (for error messages).
        imgsz: the (h, w) of the model input when the file fixes it (used when ``imgsz`` is absent).
        nc: the number of classes the outputs have (names default to ``class0..``; a mismatch is an error).
    Raises:
        ModelFileError: an entry is missing (y9 files), not JSON, or not of the expected form.
    """
    if "y9_version" in props:
        missing = [k for k in Y9_KEYS if props.get(k, "") == ""]
        if missing:
            raise ModelFileError(
                f"{where}: y9 metadata lacks {', '.join(missing)}; expected every entry `y9 export` writes "
                f"({', '.join(Y9_KEYS)}): re-export the model."
            )
    raw_names = _json(props, "names", None, where)
    if raw_names is None:
        names = [f"class{i}" for i in range(nc or 0)]
        what = (
            f"its {nc} classes are called class0..class{nc - 1}"
            if nc
            else "its outputs do not give the class count, so detections carry no class names"
        )
        warnings.warn(f"{where} has no 'names' metadata; {what}.", stacklevel=3)
    else:
        names = _names(raw_names, where, nc)
    if nc is not None and len(names) != nc:
        raise ModelFileError(
            f"{where}: metadata lists {len(names)} class names but the model outputs {nc} classes."
        )
    size = _json(props, "imgsz", None, where)
    if size is None:
        if imgsz is None:
            raise ModelFileError(
                f"{where}: the input size is neither in the metadata ('imgsz') nor fixed by the model."
            )
        size = list(imgsz)
    known = {"names", "imgsz", "stride", "letterbox", "model", "end2end", "half", "dynamic_batch"}
    return ModelInfo(
        names=names,
        imgsz=_size(size, where),
        stride=_strides(_json(props, "stride", [8, 16, 32], where), where),
        letterbox=_letterbox(_json(props, "letterbox", {}, where), where),
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
