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


class UnsafePickleError(pickle.UnpicklingError):
    """The pickle asks for a global outside the allow-list."""


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
_SAFE = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("__builtin__", "set"): set,
    ("__builtin__", "frozenset"): frozenset,
    ("torch._utils", "_rebuild_tensor_v2"): torch._utils._rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): torch._utils._rebuild_parameter,
    ("torch", "Size"): torch.Size,
    ("torch", "device"): torch.device,
}


def _numpy_safe(module: str, name: str) -> Any:
    """numpy scalars / arrays (e.g. a stored best fitness): constructors of plain data only."""
    import numpy as np

    if module in ("numpy.core.multiarray", "numpy._core.multiarray") and name in ("scalar", "_reconstruct"):
        core = getattr(np, "_core", None) or np.core
        return getattr(core.multiarray, name)
    if module == "numpy" and name in ("dtype", "ndarray"):
        return getattr(np, name)
    if module == "numpy.dtypes" and name.endswith("DType"):
        return getattr(np.dtypes, name)
    return None


def placeholder_class(module: str, name: str) -> type:
    qualname = f"{module}.{name}"
    if qualname not in _PLACEHOLDERS:
        _PLACEHOLDERS[qualname] = type(name, (Placeholder,), {"_y9_qualname": qualname})
    return _PLACEHOLDERS[qualname]


class RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE:
            return _SAFE[(module, name)]
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
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
    """Unpickle an official checkpoint with the restricted unpickler (tensors on the CPU)."""
    return torch.load(path, map_location="cpu", pickle_module=restricted_pickle, weights_only=False)


def placeholder_state_dict(obj: Placeholder, prefix: str = "") -> dict[str, torch.Tensor]:
    """The state dict of an unpickled module tree: parameters and persistent buffers, module by module."""
    out: dict[str, torch.Tensor] = {}
    state = obj.__dict__
    for name, value in (state.get("_parameters") or {}).items():
        if value is not None:
            out[prefix + name] = value.detach()
    skip = state.get("_non_persistent_buffers_set") or set()
    for name, value in (state.get("_buffers") or {}).items():
        if value is not None and name not in skip:
            out[prefix + name] = value
    for name, child in (state.get("_modules") or {}).items():
        if isinstance(child, Placeholder):
            out.update(placeholder_state_dict(child, f"{prefix}{name}."))
    return out
