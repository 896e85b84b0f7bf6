"""Type and range checks of an engine manifest's entries (``<engine>.json``), before anything reads them.

``check_entries(data, path)`` raises one ``ModelFileError`` sentence naming the manifest, the entry, the value
found and what was expected; it also checks that the entries agree with each other (the profile with the batch and
the input size, the class names with the output's class count). Entries that agree can still lie together about the
engine's bytes: only TensorRT, deserializing it on its GPU, can tell; ``y9 info`` says which facts were checked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from y9core.errors import ModelFileError

_SHA256 = re.compile(r"[0-9a-f]{64}")
_CC = re.compile(r"sm\d{2,3}")
FLAVOURS = ("tensorrt", "tensorrt_rtx")


def _bad(path: Path, entry: str, value: Any, expected: str) -> ModelFileError:
    shown = repr(value) if isinstance(value, (bool, int, float, str, type(None))) else type(value).__name__
    if isinstance(value, list) and len(repr(value)) <= 60:
        shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return ModelFileError(
        f"{path}: manifest entry '{entry}' is {shown}; expected {expected} (a damaged or hand-edited manifest: "
        "rebuild the engine with `y9 build-engine`)."
    )


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _dims(v: Any) -> bool:
    return isinstance(v, list) and len(v) <= 8 and all(_int(d) and d >= -1 for d in v)


def _tensors(path: Path, entry: str, value: Any) -> None:
    ok = isinstance(value, list) and 0 < len(value) <= 64
    for i, t in enumerate(value if ok else []):
        if not (isinstance(t, Mapping) and set(t) == {"name", "shape", "dtype"}):
            raise _bad(path, f"{entry}[{i}]", t, "an object with name, shape and dtype")
        if not isinstance(t["name"], str) or not _dims(t["shape"]) or not isinstance(t["dtype"], str):
            raise _bad(path, f"{entry}[{i}]", t, "a name (string), a shape (integers, -1 for dynamic), a dtype")
    if not ok:
        raise _bad(path, entry, value, "a non-empty list of tensors {name, shape, dtype}")


_SIMPLE: dict[str, tuple[Any, str]] = {
    "engine_file": (lambda v: isinstance(v, str) and 0 < len(v) <= 255, "a file name"),
    "engine_bytes": (lambda v: _int(v) and v > 0, "a positive byte count"),
    "engine_sha256": (lambda v: isinstance(v, str) and _SHA256.fullmatch(v), "64 lowercase hex digits"),
    "flavour": (lambda v: v in FLAVOURS, "'tensorrt' or 'tensorrt_rtx'"),
    "trt_version": (lambda v: isinstance(v, str) and 0 < len(v) <= 40, "a TensorRT version string"),
    "compute_capability": (lambda v: isinstance(v, str) and _CC.fullmatch(v), "a compute capability like 'sm89'"),
    "ahead_of_time": (lambda v: isinstance(v, bool), "true or false"),
    "onnx_file": (lambda v: isinstance(v, str) and 0 < len(v) <= 255, "a file name"),
    "onnx_sha256": (lambda v: isinstance(v, str) and _SHA256.fullmatch(v), "64 lowercase hex digits"),
    "precision": (lambda v: v in ("fp16", "fp32", "int8"), "'fp16', 'fp32' or 'int8'"),
    "batch": (lambda v: isinstance(v, list) and len(v) == 3 and all(_int(b) for b in v) and 1 <= v[0] <= v[1] <= v[2],
              "[min, opt, max] with 1 <= min <= opt <= max"),  # fmt: skip
    "imgsz": (lambda v: isinstance(v, list) and len(v) == 2 and all(_int(d) and d > 0 for d in v),
              "[height, width] of positive integers"),  # fmt: skip
    "end2end": (lambda v: isinstance(v, bool), "true or false"),
    "onnx_metadata": (lambda v: isinstance(v, Mapping) and all(isinstance(k, str) and isinstance(x, str)
                                                               for k, x in v.items()), "an object of strings"),  # fmt: skip
    "y9_version": (lambda v: isinstance(v, str) and len(v) <= 40, "a version string"),
    "built_at": (lambda v: isinstance(v, str) and len(v) <= 40, "an ISO 8601 time"),
    "build_seconds": (lambda v: _number(v) and v >= 0, "a non-negative number"),
    "workspace_gb": (lambda v: _number(v) and v > 0, "a positive number"),
    "notes": (lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v), "a list of strings"),
    "facts": (lambda v: v is None or isinstance(v, Mapping), "the model facts object"),
}


def check_entries(data: Mapping[str, Any], path: Path) -> None:
    """Every entry of the manifest ``data`` read from ``path`` has the type and range the loaders rely on."""
    for entry, (ok, expected) in _SIMPLE.items():
        if entry in data and not ok(data[entry]):
            raise _bad(path, entry, data[entry], expected)
    for entry in ("inputs", "outputs"):
        _tensors(path, entry, data.get(entry))
    profile = data.get("profile")
    shapes = profile.get("images") if isinstance(profile, Mapping) else None
    if not (isinstance(shapes, Mapping) and set(shapes) == {"min", "opt", "max"}
            and all(_dims(shapes[k]) and len(shapes[k]) == 4 for k in shapes)):  # fmt: skip
        raise _bad(path, "profile", profile, "{'images': {'min', 'opt', 'max'}} with four dimensions each")
    batch, hw = data["batch"], data["imgsz"]
    if [shapes[k][0] for k in ("min", "opt", "max")] != batch:
        raise _bad(path, "batch", batch, f"the profile's batches {[shapes[k][0] for k in ('min', 'opt', 'max')]}")
    if any(shapes[k][2:] != hw or shapes[k][1] != 3 for k in shapes):
        raise _bad(path, "imgsz", hw, f"the profile's input [3, H, W] {shapes['max'][1:]}")
