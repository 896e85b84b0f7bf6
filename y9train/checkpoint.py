"""Checkpoints: this project's own format, and official YOLOv9 checkpoints read without running their code.

Own format (``save_checkpoint``): a plain dict of tensors, strings, numbers, lists and dicts, so that
``torch.load(path, weights_only=True)`` reads it:
``{"format": "y9-checkpoint", "version": 1, "config": {...}, "model": state_dict, "meta": {...},
"train": {...} (optional training state)}``. Writes go to a temporary file, then an atomic rename.

Official checkpoints pickle the official ``models.yolo.DetectionModel`` object. ``load_checkpoint`` reads
them with a restricted unpickler (``y9train.official_pickle``) that turns the official classes into
inert placeholders and refuses every other global, so no code from the file runs.
"""

from __future__ import annotations

import json
import os
import pickle
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from y9deploy.errors import ModelFileError
from y9train import __version__
from y9train.models import MODEL_NAMES, YOLO, build_model, load_state_dict_checked
from y9train.models.config import validate
from y9train.official_pickle import UnsafePickleError, load_official, placeholder_state_dict

FORMAT = "y9-checkpoint"
VERSION = 1


def _jsonable(meta: Mapping[str, Any], path: Path) -> dict[str, Any]:
    try:
        return json.loads(json.dumps(dict(meta)))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: checkpoint metadata must be JSON-serialisable ({exc})") from None


def atomic_torch_save(obj: Any, path: str | Path) -> Path:
    """``torch.save`` to a temporary file in the same folder, fsync, then rename over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def save_checkpoint(
    model: YOLO, path: str | Path, *, train_state: Mapping[str, Any] | None = None, **meta: Any
) -> Path:
    """Write ``model`` (weights + architecture + class names) and JSON-able ``meta`` (imgsz, epoch, metrics...).

    ``train_state`` (optimizer, EMA, scheduler, RNG ... as tensors and plain containers) is stored under
    ``"train"`` for exact resume; it must also load with ``weights_only=True``.
    """
    if not isinstance(model, YOLO):
        raise TypeError(f"save_checkpoint expects a y9 YOLO model, got {type(model).__name__}")
    path = Path(path)
    arch = dict(
        model.arch,
        layers=[{k: v for k, v in layer.items() if k != "sources"} for layer in model.arch["layers"]],
    )
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "config": {
            "name": model.name,
            "nc": model.nc,
            "names": list(model.names),
            "fused": bool(model.fused),
            "arch": json.loads(json.dumps(arch)),
        },  # fmt: skip
        "model": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
        "meta": _jsonable({"y9_version": __version__, **meta}, path),
    }
    if train_state is not None:
        payload["train"] = dict(train_state)
    return atomic_torch_save(payload, path)


def _check_file(path: Path) -> None:
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such checkpoint file")
    if not path.is_file():
        raise ModelFileError(f"{path}: is not a file; expected a .pt checkpoint")
    if path.stat().st_size == 0:
        raise ModelFileError(f"{path}: is empty; expected a .pt checkpoint (y9 or official YOLOv9)")


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """The raw payload of a y9 checkpoint (``weights_only=True``), e.g. for resuming training."""
    path = Path(path)
    _check_file(path)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, zipfile.BadZipFile, OSError) as exc:
        raise ModelFileError(
            f"{path}: cannot be read as a y9 checkpoint ({type(exc).__name__}); the file may be truncated, "
            "corrupt, or not a y9 checkpoint"
        ) from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ModelFileError(f"{path}: is not a y9 checkpoint (no 'format: {FORMAT}' entry)")
    if int(payload.get("version", 0)) > VERSION:
        raise ModelFileError(
            f"{path}: is a y9 checkpoint of format version {payload['version']}; this y9 reads up to {VERSION}"
        )
    return payload


def model_from_payload(payload: Mapping[str, Any], origin: str) -> YOLO:
    """Rebuild the model of a y9 checkpoint payload (float32, eval mode)."""
    cfg = payload["config"]
    arch = validate(cfg["arch"], origin) if "arch" in cfg else None
    model = (
        YOLO(arch, nc=cfg["nc"], names=cfg["names"])
        if arch
        else build_model(cfg["name"], cfg["nc"], cfg["names"])
    )
    if cfg.get("fused"):
        from y9train.reparam import fuse

        fuse(model)
    load_state_dict_checked(model, payload["model"], origin)
    model.meta = dict(payload.get("meta", {}))
    return model.float().eval()


_SIGNATURES: dict[tuple[str, int], dict[str, tuple[int, ...]]] = {}


def _signature(name: str, nc: int) -> dict[str, tuple[int, ...]]:
    if (name, nc) not in _SIGNATURES:
        with torch.device("meta"):
            model = build_model(name, nc=nc)
        _SIGNATURES[(name, nc)] = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    return _SIGNATURES[(name, nc)]


def _nc_of(state_dict: Mapping[str, torch.Tensor]) -> int | None:
    for key, value in state_dict.items():
        if key.endswith((".cv3.0.2.bias", ".cv5.0.2.bias")):
            return int(value.shape[0])
    return None


def identify_architecture(state_dict: Mapping[str, torch.Tensor]) -> tuple[str, int]:
    """The model name and class count whose state dict has exactly these keys and shapes."""
    nc = _nc_of(state_dict)
    if nc is not None:
        shapes = {k: tuple(v.shape) for k, v in state_dict.items()}
        for name in MODEL_NAMES:
            if _signature(name, nc) == shapes:
                return name, nc
    raise ValueError(
        f"these weights ({len(state_dict)} tensors) match none of the known architectures "
        f"({', '.join(MODEL_NAMES)}); expected an unmodified YOLOv9 or GELAN model"
    )


def _from_state_dict(state_dict: Mapping[str, torch.Tensor], names: Any, origin: Path) -> YOLO:
    try:
        name, nc = identify_architecture(state_dict)
    except ValueError as exc:
        raise ModelFileError(f"{origin}: {exc}") from None
    if isinstance(names, dict):
        names = [str(names[i]) for i in sorted(names)]
    if not isinstance(names, (list, tuple)) or len(names) != nc or list(names) == [str(i) for i in range(nc)]:
        names = None  # the official default names are the class indices: use COCO's names for nc=80
    model = build_model(name, nc=nc, names=list(names) if names else None)
    load_state_dict_checked(model, state_dict, str(origin))
    model.meta = {"source": "official", "file": origin.name}
    return model.float().eval()


def load_checkpoint(path: str | Path) -> nn.Module:
    """A model (float32, eval mode) from a y9 checkpoint or an official-format YOLOv9 checkpoint.

    Official checkpoints (``yolov9-c.pt``, ``gelan-c.pt``, ``yolov9-s-converted.pt`` ...) are read without
    the official code and without executing pickled code; the architecture is identified from the
    weights' keys and shapes. A file asking to run anything else is refused.
    """
    path = Path(path)
    _check_file(path)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        payload = None  # holds pickled classes: an official checkpoint, or something unsafe
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ModelFileError(
            f"{path}: is truncated or corrupt ({type(exc).__name__}); expected a y9 or official YOLOv9 .pt checkpoint"
        ) from None
    if isinstance(payload, dict) and payload.get("format") == FORMAT:
        return model_from_payload(read_checkpoint(path), str(path))
    if isinstance(payload, dict):  # a bare state dict, or {"model": state_dict}
        sd = payload.get("model", payload)
        if isinstance(sd, Mapping) and sd and all(isinstance(v, torch.Tensor) for v in sd.values()):
            return _from_state_dict(sd, payload.get("names"), path)
    if payload is not None:
        raise ModelFileError(
            f"{path}: holds no model weights y9 recognises; expected a y9 or official YOLOv9 checkpoint"
        )
    try:
        ckpt = load_official(path)
    except UnsafePickleError as exc:
        raise ModelFileError(f"{path}: refused: {exc}") from None
    except (pickle.UnpicklingError, RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ModelFileError(
            f"{path}: cannot be read ({type(exc).__name__}: {exc}); expected a y9 or official YOLOv9 checkpoint"
        ) from None
    obj = ckpt.get("ema") or ckpt.get("model") if isinstance(ckpt, dict) else None
    if obj is None or not hasattr(obj, "_y9_qualname"):
        raise ModelFileError(
            f"{path}: has no 'model' entry holding a YOLOv9 model; it is not a checkpoint y9 knows"
        )
    return _from_state_dict(placeholder_state_dict(obj), getattr(obj, "names", None), path)
