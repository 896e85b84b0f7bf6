"""A restricted unpickler for official YOLOv9 checkpoints.

Official checkpoints pickle model objects of the official code (``models.yolo.DetectionModel``,
``models.common.Conv`` ...) and of ``torch.nn``. This unpickler never imports those: each such class
becomes an inert placeholder that only stores the pickled state. Tensors are rebuilt by torch's own
functions. Every other global (``os.system``, ``builtins.eval``, ``subprocess.*`` ...) is refused, so no
code from the file runs.
"""

from __future__ import annotations

import collections
import pickle
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from y9core.errors import Y9Error


class UnsafePickleError(Y9Error, pickle.UnpicklingError):
    """The pickle asks for a global outside the allow-list, or is malformed: nothing from it was executed (a
    ``pickle.UnpicklingError`` too, as torch's own loader raises for a refused pickle)."""


class Placeholder:
    """Inert stand-in for a pickled class: keeps constructor arguments and state, runs nothing."""

    _y9_qualname = "?"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._y9_args = args

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, dict):
            self.__dict__.update(state)
        else:
            self._y9_state = state

    def __repr__(self) -> str:
        return f"<placeholder {self._y9_qualname}>"


_PLACEHOLDERS: dict[str, type] = {}
# Modules whose classes become placeholders: the official code and torch.nn's module classes.
_PLACEHOLDER_PREFIXES = ("models.", "utils.", "torch.nn.modules.")
_PLACEHOLDER_EXACT = {("argparse", "Namespace"), ("pathlib", "PosixPath"), ("pathlib", "WindowsPath")}
_TORCH_DTYPES = {
    name: getattr(torch, name)
    for name in (
        "float16", "half", "float32", "float", "float64", "double", "bfloat16", "uint8", "int8", "int16",
        "short", "int32", "int", "int64", "long", "bool", "complex64", "complex128",
    )
}  # fmt: skip


def _refuse(what: str) -> UnsafePickleError:
    return UnsafePickleError(f"the pickle {what}; nothing was executed")


def _latin1_encode(text: Any, encoding: Any = "latin1", *rest: Any) -> bytes:
    """``_codecs.encode`` as pickle protocol 2 uses it for bytes: a str encoded as latin-1, nothing else."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1") or rest:
        raise _refuse(
            f"asks to call _codecs.encode on {type(text).__name__} with {encoding!r}, not a latin-1 str"
        )
    return text.encode("latin-1")


def _np_dtype(spec: Any, align: Any = False, copy: Any = True) -> Any:
    """``numpy.dtype(spec)`` for plain numeric, boolean, string and date types (never object or void); a copy."""
    import numpy as np

    if not isinstance(spec, str) or len(spec) > 8:
        raise _refuse(f"asks for numpy.dtype({spec!r}); expected a short type code such as 'f8'")
    try:
        dtype = np.dtype(spec, align=bool(align), copy=True)
    except TypeError:
        raise _refuse(f"asks for numpy.dtype({spec!r}), which is not a numpy type") from None
    if dtype.kind in "OV" or dtype.hasobject:
        raise _refuse(f"asks for numpy.dtype({spec!r}), an object or void type; expected plain data")
    return dtype


def _np_scalar(dtype: Any, data: Any = None) -> Any:
    """numpy's scalar reconstruction: a plain-data dtype and exactly its item's bytes."""
    import numpy as np

    if not isinstance(dtype, np.dtype) or dtype.hasobject or dtype.kind == "V":
        raise _refuse(f"asks to build a numpy scalar of {type(dtype).__name__}; expected a plain numpy dtype")
    if not isinstance(data, bytes) or len(data) != dtype.itemsize:
        raise _refuse(
            f"asks to build a numpy {dtype} scalar from {type(data).__name__}; expected {dtype.itemsize} bytes"
        )
    return np.frombuffer(data, dtype=dtype)[0].copy()


class _NdarrayRef:
    """What ``numpy.ndarray`` names in a pickle: only a marker for ``_np_reconstruct`` (calling it builds nothing)."""


def _np_reconstruct(subtype: Any, shape: Any, dtype: Any) -> Any:
    """numpy's array reconstruction as numpy writes it (``ndarray``, ``(0,)``, ``b'b'``): an empty array whose
    data and plain-data dtype then come through ``ndarray.__setstate__``."""
    import numpy as np

    if subtype is not _NdarrayRef or shape != (0,) or dtype != b"b":
        raise _refuse(
            f"asks to build a numpy array as ({getattr(subtype, '__name__', type(subtype).__name__)}, {shape!r}, "
            f"{dtype!r}); expected (numpy.ndarray, (0,), b'b') as numpy writes it"
        )
    return np.ndarray.__new__(np.ndarray, (0,), "b")


def _numpy_safe(module: str, name: str) -> Any:
    """numpy scalars / arrays / dtypes (e.g. a stored best fitness), rebuilt as plain data; None: not allowed."""
    if module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        return {"scalar": _np_scalar, "_reconstruct": _np_reconstruct}.get(name)
    if module == "numpy" and name in ("dtype", "ndarray"):
        return _np_dtype if name == "dtype" else _NdarrayRef
    return None


_SAFE = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("__builtin__", "set"): set,
    ("__builtin__", "frozenset"): frozenset,
    ("_codecs", "encode"): _latin1_encode,
    ("torch._utils", "_rebuild_tensor_v2"): torch._utils._rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): torch._utils._rebuild_parameter,
    ("torch", "Size"): torch.Size,
    ("torch", "device"): torch.device,
}


def placeholder_class(module: str, name: str) -> type:
    qualname = f"{module}.{name}"
    if qualname not in _PLACEHOLDERS:
        _PLACEHOLDERS[qualname] = type(name, (Placeholder,), {"_y9_qualname": qualname})
    return _PLACEHOLDERS[qualname]


class RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE:
            return _SAFE[(module, name)]
        if module == "torch" and name in _TORCH_DTYPES:
            return _TORCH_DTYPES[name]
        if (
            module.startswith(_PLACEHOLDER_PREFIXES)
            or module in ("models", "utils")
            or (module, name) in _PLACEHOLDER_EXACT
        ):
            return placeholder_class(module, name)
        if module.startswith("numpy") and (found := _numpy_safe(module, name)) is not None:
            return found
        raise UnsafePickleError(
            f"the pickle asks to call {module}.{name}, which is neither a tensor nor a class of a YOLOv9 "
            "model; nothing was executed"
        )


def restricted_load(file: Any, **kwargs: Any) -> Any:
    """``pickle.load`` through the restricted unpickler (torch's legacy format calls ``load`` directly)."""
    return RestrictedUnpickler(file, **kwargs).load()


# A stand-in for the ``pickle`` module, handed to ``torch.load(pickle_module=...)``: every path torch
# takes (``Unpickler`` for zip files, ``load`` for the legacy format) goes through the allow-list.
restricted_pickle = ModuleType("y9_restricted_pickle")
restricted_pickle.Unpickler = RestrictedUnpickler
restricted_pickle.load = restricted_load


def load_official(path: str | Path) -> Any:
    """Unpickle an official checkpoint with the restricted unpickler (tensors on the CPU).

    Raises ``UnsafePickleError`` for a global outside the allow-list and for a malformed pickle of any kind (a
    truncated stream, an allowed callable given arguments of the wrong type ...), never another exception."""
    try:
        return torch.load(path, map_location="cpu", pickle_module=restricted_pickle, weights_only=False)
    except UnsafePickleError:
        raise
    except (Exception, RecursionError) as exc:  # a crafted stream can make any library code raise anything
        raise _refuse(f"is malformed ({type(exc).__name__}: {_short(exc)})") from None


def _short(exc: BaseException, limit: int = 160) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _entries(state: dict, key: str, where: str) -> list[tuple[str, Any]]:
    value = state.get(key)
    if value is None:
        return []
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise _refuse(f"holds {type(value).__name__} as {where}{key}; expected a dict keyed by names")
    return list(value.items())


_MAX_MODULES = 100_000  # YOLOv9-E has about 1,500


def placeholder_state_dict(obj: Placeholder, prefix: str = "") -> dict[str, torch.Tensor]:
    """The state dict of an unpickled module tree: parameters and persistent buffers, module by module.

    A module tree that is not one (a cycle, a non-tensor parameter, a list where a dict belongs) raises
    ``UnsafePickleError`` naming the place."""
    out: dict[str, torch.Tensor] = {}
    stack: list[tuple[Placeholder, str, frozenset[int]]] = [(obj, prefix, frozenset())]
    visited = 0
    while stack:
        node, pre, ancestors = stack.pop()
        where = pre or "the model's "
        if id(node) in ancestors:
            raise _refuse(f"holds a module that contains itself (a cycle at {pre.rstrip('.')})")
        visited += 1
        if visited > _MAX_MODULES:
            raise _refuse(f"holds more than {_MAX_MODULES} modules; expected a YOLOv9 model")
        state = node.__dict__
        skip = state.get("_non_persistent_buffers_set") or set()
        if not isinstance(skip, (set, frozenset)):
            raise _refuse(
                f"holds {type(skip).__name__} as {where}_non_persistent_buffers_set; expected a set"
            )
        for kind in ("_parameters", "_buffers"):
            for name, value in _entries(state, kind, where):
                if value is None or (kind == "_buffers" and name in skip):
                    continue
                if not isinstance(value, torch.Tensor):
                    raise _refuse(f"holds {type(value).__name__} as weight {pre}{name}; expected a tensor")
                out[pre + name] = value.detach()
        children = [(n, c) for n, c in _entries(state, "_modules", where) if c is not None]
        for name, child in reversed(children):
            if not isinstance(child, Placeholder):
                raise _refuse(f"holds {type(child).__name__} as module {pre}{name}; expected a model layer")
            stack.append((child, f"{pre}{name}.", ancestors | {id(node)}))
    return out
