"""Checkpoints: this project's own format, and official YOLOv9 checkpoints read without running their code.

Own format (``save_checkpoint``): a plain dict of tensors, strings, numbers, lists and dicts, so that
``torch.load(path, weights_only=True)`` reads it:
``{"format": "y9-checkpoint", "version": 2, "config": {...}, "model": state_dict, "meta": {...},
"train": {...} (optional training state), "digest": {"sha256": ..., "tensors": N}}``. Since version 2 the training
state is stored packed (``y9train.checkpoints.packing``: its thousands of tensors in one buffer) and read back
unpacked; version 1 files (unpacked) still load. Writes go to a temporary file, then an atomic rename. Reads check
the zip CRCs, the digest (``y9train.checkpoints.integrity``, over the tensors as stored; files written before it
existed load without), every entry's type, and that the weights are finite.

Official checkpoints pickle the official ``models.yolo.DetectionModel`` object. ``load_checkpoint`` reads
them with a restricted unpickler (``y9train.checkpoints.official_pickle``) that turns the official classes into
inert placeholders and refuses every other global, so no code from the file runs; the architecture is identified
from the weights (``y9train.checkpoints.official``).
"""

from __future__ import annotations

import json
import os
import pickle
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from y9core.errors import ModelFileError
from y9core.files.atomic_write import publish, temporary_path
from y9core.files.file_paths import expect_file
from y9core.version import __version__
from y9train.checkpoints.facts import stored_facts
from y9train.checkpoints.integrity import (
    DIGEST_KEY,
    check_digest,
    check_finite,
    check_floating,
    check_zip_crc,
    tensor_digest,
)
from y9train.checkpoints.official import from_state_dict, official_model
from y9train.checkpoints.official_pickle import UnsafePickleError, load_official, placeholder_state_dict
from y9train.checkpoints.packing import is_packed, pack, unpack
from y9train.models import YOLO, build_model, load_state_dict_checked
from y9train.models.config import validate
from y9train.reparam import fuse

FORMAT = "y9-checkpoint"
VERSION = 2


def _jsonable(meta: Mapping[str, Any], path: Path) -> dict[str, Any]:
    try:
        return json.loads(json.dumps(dict(meta)))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: checkpoint metadata must be JSON-serialisable ({exc})") from None


def atomic_torch_save(obj: Any, path: str | Path) -> Path:
    """``torch.save`` to a temporary file in the same folder, fsync, then rename over ``path``.

    A write that fails (a full disk, a file-size limit) leaves the previous ``path`` as it was, removes the
    temporary file and raises an ``OSError`` naming ``path``: torch's zip writer turns the failed write into a
    ``RuntimeError`` ("unexpected pos ...") whose context is the real OSError, which is raised instead.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(path)  # created as every output file is (0o644 less the umask), not mkstemp's 0o600
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    except OSError as exc:  # named by the file asked for (a read-only folder, a full disk)
        raise type(exc)(exc.errno, exc.strerror, str(path)) from exc
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        publish(tmp, path)  # a target claimed new is never replaced (y9core.files.output_file)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        cause = exc if isinstance(exc, OSError) else exc.__context__
        if isinstance(exc, (OSError, RuntimeError)) and isinstance(cause, OSError) and cause.errno is not None:
            raise type(cause)(cause.errno, cause.strerror or os.strerror(cause.errno), str(path)) from exc
        raise
    return path


def cpu_copy(obj: Any) -> Any:
    """``obj`` with every tensor copied to the CPU (always a new tensor: on a CPU run ``.cpu()`` would return the
    same storage, which the next optimiser step changes) and every dict / list / tuple rebuilt."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        return {k: cpu_copy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(cpu_copy(v) for v in obj)
    return obj


def save_checkpoint(
    model: YOLO, path: str | Path, *, train_state: Mapping[str, Any] | None = None, **meta: Any
) -> Path:
    """Write ``model`` (weights + architecture + class names) and JSON-able ``meta`` (imgsz, epoch, metrics...).

    ``train_state`` (optimizer, EMA, scheduler, RNG ... as tensors and plain containers) is stored under
    ``"train"`` for exact resume; it must also load with ``weights_only=True``.
    """
    return write_payload(checkpoint_payload(model, path, train_state=train_state, **meta), path)


def checkpoint_payload(
    model: YOLO, path: str | Path, *, train_state: Mapping[str, Any] | None = None, **meta: Any
) -> dict[str, Any]:
    """The payload ``save_checkpoint`` writes, without its digest: the cheap part, a copy of ``model``'s weights on
    the CPU (``path`` only names the file in an error). ``train_state`` is stored as given (copy it first when the
    payload is written later, e.g. by ``y9train.checkpoints.writer``)."""
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
        "model": cpu_copy(model.state_dict()),
        "meta": _jsonable({"y9_version": __version__, **meta}, path),
    }
    if train_state is not None:
        payload["train"] = dict(train_state)
    return payload


def write_payload(payload: Mapping[str, Any], path: str | Path) -> Path:
    """The slow part of ``save_checkpoint``: the training state packed (when not already), the tensor digest,
    ``torch.save``, fsync and the atomic rename of a ``checkpoint_payload`` (left unchanged: the packed state and
    the digest go into a shallow copy)."""
    payload = {k: v for k, v in payload.items() if k != DIGEST_KEY}
    if payload.get("train") is not None and not is_packed(payload["train"]):
        payload["train"] = pack(payload["train"])
    payload[DIGEST_KEY] = tensor_digest(payload)
    return atomic_torch_save(payload, path)


def _check_file(path: Path) -> None:
    expect_file(path, "checkpoint", "a .pt checkpoint")
    if path.stat().st_size == 0:
        raise ModelFileError(f"{path}: is empty; expected a .pt checkpoint (y9 or official YOLOv9)")


def _torch_load_weights_only(path: Path) -> Any:
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelFileError(
            f"{path}: is truncated or corrupt ({type(exc).__name__}); expected a y9 or official YOLOv9 .pt checkpoint"
        ) from None


def _expect(ok: bool, path: Path, entry: str, value: Any, expected: str) -> None:
    if not ok:
        shown = (
            "missing"
            if value is None
            else repr(value)[:60]
            if isinstance(value, (int, float, str))
            else type(value).__name__
        )
        raise ModelFileError(
            f"{path}: entry {entry} is {shown}; expected {expected} (a damaged or hand-edited y9 checkpoint)"
        )


def _checked_payload(payload: Any, path: Path) -> dict[str, Any]:
    """A y9 payload whose entries have the types ``model_from_payload`` and resume rely on; digest verified."""
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ModelFileError(f"{path}: is not a y9 checkpoint (no 'format: {FORMAT}' entry)")
    version = payload.get("version")
    _expect(
        isinstance(version, int) and not isinstance(version, bool), path, "'version'", version, "an integer"
    )
    if version > VERSION:
        raise ModelFileError(
            f"{path}: is a y9 checkpoint of format version {version}; this y9 reads up to {VERSION}"
        )
    cfg = payload.get("config")
    _expect(isinstance(cfg, dict), path, "'config'", cfg, "a dict with name, nc and names")
    nc, names = cfg.get("nc"), cfg.get("names")
    _expect(isinstance(cfg.get("name"), str), path, "config.name", cfg.get("name"), "a model name")
    _expect(
        isinstance(nc, int) and not isinstance(nc, bool) and nc > 0,
        path,
        "config.nc",
        nc,
        "a positive integer",
    )
    _expect(
        isinstance(names, list) and len(names) == nc and all(isinstance(n, str) for n in names),
        path, "config.names", names, f"a list of {nc} class names",
    )  # fmt: skip
    _expect(
        isinstance(cfg.get("fused", False), bool), path, "config.fused", cfg.get("fused"), "true or false"
    )
    _expect(isinstance(cfg.get("arch", {}), dict), path, "config.arch", cfg.get("arch"), "a dict")
    sd = payload.get("model")
    _expect(
        isinstance(sd, dict) and bool(sd) and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in sd.items()),
        path, "'model'", sd, "a non-empty dict of named tensors",
    )  # fmt: skip
    _expect(isinstance(payload.get("meta", {}), dict), path, "'meta'", payload.get("meta"), "a dict")
    check_floating(sd, path)
    stored_facts(payload.get("meta", {}), str(path), names)
    train = payload.get("train")
    _expect(train is None or isinstance(train, dict), path, "'train'", train, "a dict of training state")
    check_digest(payload, path)
    if is_packed(train):
        try:
            payload["train"] = unpack(train)
        except ValueError as exc:
            raise ModelFileError(
                f"{path}: its packed training state cannot be read ({exc}); expected the last.pt of an unmodified y9 "
                "train run (a damaged or hand-edited last.pt)."
            ) from None
    return payload


def _weights_only_payload(path: Path) -> Any:
    """The file's payload after the file and zip CRC checks, loaded with ``weights_only=True``; None when it holds
    pickled classes (an official checkpoint)."""
    _check_file(path)
    check_zip_crc(path)
    try:
        return _torch_load_weights_only(path)
    except pickle.UnpicklingError:
        return None


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """The raw payload of a y9 checkpoint (``weights_only=True``), e.g. for resuming training.

    Zip CRCs, digest and entry types are checked: a damaged or malformed file is one ``ModelFileError``."""
    path = Path(path)
    payload = _weights_only_payload(path)
    if payload is None:
        raise ModelFileError(
            f"{path}: is not a y9 checkpoint (it holds pickled classes, e.g. an official YOLOv9 checkpoint); "
            "expected a file written by y9"
        )
    return _checked_payload(payload, path)


def read_y9_payload(path: str | Path) -> dict[str, Any] | None:
    """The checked payload of a y9 checkpoint (as ``read_checkpoint``), or None when ``path`` holds another format
    (an official checkpoint, a bare state dict): those need ``load_checkpoint``."""
    path = Path(path)
    payload = _weights_only_payload(path)
    if isinstance(payload, dict) and payload.get("format") == FORMAT:
        return _checked_payload(payload, path)
    return None


def model_from_payload(payload: Mapping[str, Any], origin: str) -> YOLO:
    """Rebuild the model of a y9 checkpoint payload (float32, eval mode); refuses NaN / infinite weights."""
    cfg = payload["config"]
    check_finite(payload["model"], origin)
    try:
        arch = validate(cfg["arch"], "its architecture") if "arch" in cfg else None
        model = (
            YOLO(arch, nc=cfg["nc"], names=cfg["names"])
            if arch
            else build_model(cfg["name"], cfg["nc"], cfg["names"])
        )
        if cfg.get("fused"):
            fuse(model)
        load_state_dict_checked(model, payload["model"], "the stored state dict")
    except ModelFileError:
        raise
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise ModelFileError(f"{origin}: its model cannot be rebuilt ({exc})") from None
    model.meta = dict(payload.get("meta", {}))
    return model.float().eval()


def _warn_repeated_names(names: list[str], path: Path) -> None:
    """A checkpoint whose class names repeat a name is loaded with one warning (``FactsWarning``) that says so."""
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    repeated = [(n, k) for n, k in counts.items() if k > 1]
    if repeated:
        import warnings

        from y9core.model_facts import FactsWarning

        shown = ", ".join(f"{n[:40]!r} {k} times" for n, k in repeated[:3]) + (" ..." if len(repeated) > 3 else "")
        warnings.warn(f"{path}: its class names repeat ({shown}): detections of those classes cannot be told apart "
                      "by name; expected distinct class names.", FactsWarning, stacklevel=3)  # fmt: skip


def load_checkpoint(path: str | Path) -> nn.Module:
    """A model (float32, eval mode) from a y9 checkpoint or an official-format YOLOv9 checkpoint.

    Official checkpoints (``yolov9-c.pt``, ``gelan-c.pt``, ``yolov9-s-converted.pt``, and the ``last.pt`` /
    ``best.pt`` the official training scripts write) are read without the official code and without executing
    pickled code; their EMA weights are taken when present (``meta["weights"]`` says which), and the
    architecture is identified from the weights' keys and shapes. A file asking to run anything else, or a
    malformed one, is refused with one sentence.
    """
    path = Path(path)
    _check_file(path)
    check_zip_crc(path)
    try:
        payload = _torch_load_weights_only(path)
    except pickle.UnpicklingError:
        payload = None  # holds pickled classes: an official checkpoint, or something unsafe
    if isinstance(payload, dict) and payload.get("format") == FORMAT:
        checked = _checked_payload(payload, path)
        _warn_repeated_names(checked["config"]["names"], path)
        return model_from_payload(checked, str(path))
    if isinstance(payload, dict):  # a bare state dict, or {"model": state_dict}
        sd = payload.get("model", payload)
        if isinstance(sd, Mapping) and sd and all(isinstance(v, torch.Tensor) for v in sd.values()):
            return from_state_dict(sd, payload.get("names"), path, "model")
    if payload is not None:
        raise ModelFileError(
            f"{path}: holds no model weights y9 recognises; expected a y9 or official YOLOv9 checkpoint"
        )
    try:
        ckpt = load_official(path)
        obj, key = official_model(ckpt, path)
        state_dict = placeholder_state_dict(obj)
    except UnsafePickleError as exc:
        raise ModelFileError(f"{path}: refused: {exc}") from None
    return from_state_dict(state_dict, obj.__dict__.get("names"), path, key)
