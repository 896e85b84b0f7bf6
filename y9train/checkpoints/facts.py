"""The model facts (``y9core.model_facts.ModelFacts``) of a trained model, as training writes them into the
checkpoint (``meta["facts"]``) and as they are read back from any checkpoint.

A checkpoint cannot record its own file's sha256: ``facts_of`` fills ``source_sha256`` from the file when it is
read, so that every artifact exported from it carries the same hash. Checkpoints written before the record
existed (and official ones) get facts derived from what they do hold: the class names, the architecture's
strides and the trained size ``meta["imgsz"]`` (640 when none is recorded, the official default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from y9core.errors import ModelFileError
from y9core.model_facts import LetterboxRule, ModelFacts

DEFAULT_IMGSZ = 640  # the official training size: what a checkpoint without a record was most likely trained at


def _strides(model: Any) -> tuple[int, ...]:
    stride = model.stride
    return tuple(int(s) for s in (stride.tolist() if hasattr(stride, "tolist") else stride))


def recorded_imgsz(meta: Mapping[str, Any]) -> tuple[int, int] | None:
    """``meta["imgsz"]`` (a side or [h, w]) as (h, w), or None when absent or malformed."""
    value = meta.get("imgsz")
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value, value
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value
    ):
        return int(value[0]), int(value[1])
    return None


def trained_facts(model: Any, *, imgsz: int | tuple[int, int], recipe: str = "") -> ModelFacts:
    """The facts training writes for ``model`` (a y9 YOLO) trained at ``imgsz``."""
    from y9core.version import __version__

    hw = (imgsz, imgsz) if isinstance(imgsz, int) else (int(imgsz[0]), int(imgsz[1]))
    strides = _strides(model)
    return ModelFacts(
        imgsz=hw,
        names=tuple(str(n) for n in model.names),
        strides=strides,
        letterbox=LetterboxRule(stride=max(strides)),
        model=str(model.name),
        recipe=recipe,
        y9_version=__version__,
    )


def training_size(model: Any) -> tuple[int, str]:
    """The size a run trains ``model`` at when none is given, and why: the longer side of the size a loaded
    checkpoint was trained at (its facts, else ``meta["imgsz"]``), rounded up to a multiple of 32; else
    ``DEFAULT_IMGSZ`` (a fresh network, or a checkpoint that records none)."""
    meta = getattr(model, "meta", None) or {}
    if "facts" not in meta and recorded_imgsz(meta) is None:
        return DEFAULT_IMGSZ, "the default"
    hw = facts_of(model).imgsz
    side = -(-max(hw) // 32) * 32
    return side, f"the size it was trained at ({hw[0]}x{hw[1]})"


def stored_facts(meta: Mapping[str, Any], where: str, names: list[str]) -> ModelFacts | None:
    """``meta["facts"]`` checked (types, ranges, and its names equal to the checkpoint's ``names``), or None."""
    raw = meta.get("facts")
    if raw is None:
        return None
    facts = ModelFacts.from_dict(raw, where)
    if list(facts.names) != list(names):
        raise ModelFileError(
            f"{where}: its model facts list {facts.nc} class names ({', '.join(facts.names[:3])}...) but the "
            f"checkpoint holds {len(names)} ({', '.join(names[:3])}...); expected the same names (a damaged or "
            "hand-edited checkpoint)."
        )
    return facts


def facts_of(model: Any, *, source_sha256: str = "", where: str = "the checkpoint") -> ModelFacts:
    """The facts of a loaded model (``load_checkpoint``'s result: its ``meta`` holds what the file recorded);
    ``where`` names the file in an error."""
    meta = dict(getattr(model, "meta", None) or {})
    origin = where
    facts = stored_facts(meta, origin, [str(n) for n in model.names])
    if facts is None:
        hw = recorded_imgsz(meta) or (DEFAULT_IMGSZ, DEFAULT_IMGSZ)
        facts = trained_facts(model, imgsz=hw).replace(y9_version=str(meta.get("y9_version", "")))
    elif facts.strides != _strides(model):
        raise ModelFileError(
            f"{origin}: its model facts record strides {list(facts.strides)} but the model has "
            f"{list(_strides(model))}; expected the same (a damaged or hand-edited checkpoint)."
        )
    return facts.replace(source_sha256=source_sha256)


def payload_facts(payload: Mapping[str, Any], *, source_sha256: str = "", where: str = "the checkpoint") -> ModelFacts:
    """The facts of a y9 checkpoint's payload (``read_checkpoint``'s result), without building its model: the
    recorded facts, else derived from its config (names, the architecture's strides) and ``meta["imgsz"]``."""
    from y9train.models.config import load_config

    cfg, meta = payload["config"], dict(payload.get("meta", {}))
    facts = stored_facts(meta, where, [str(n) for n in cfg["names"]])
    if facts is None:
        arch = cfg.get("arch") or load_config(cfg["name"])
        strides = tuple(int(s) for s in arch["strides"])
        hw = recorded_imgsz(meta) or (DEFAULT_IMGSZ, DEFAULT_IMGSZ)
        facts = ModelFacts(imgsz=hw, names=tuple(str(n) for n in cfg["names"]), strides=strides,
                           letterbox=LetterboxRule(stride=max(strides)), model=str(cfg["name"]),
                           y9_version=str(meta.get("y9_version", "")))  # fmt: skip
    return facts.replace(source_sha256=source_sha256)
