"""YOLOv9 / GELAN models: ``build_model``, ``MODEL_NAMES`` and loading of official-keyed state dicts."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn

from y9train.models.config import MODEL_NAMES, load_config, unknown_model_message
from y9train.models.yolo import YOLO, default_names

__all__ = ["MODEL_NAMES", "YOLO", "build_model", "from_official_state_dict", "load_state_dict_checked"]


def build_model(name: str | Path, nc: int = 80, names: list[str] | None = None) -> YOLO:
    """A freshly initialised model by name (one of ``MODEL_NAMES``) or config path, with ``nc`` classes."""
    if not isinstance(name, (str, Path)):
        raise TypeError(f"model name must be a string, got {type(name).__name__}")
    if str(name) not in MODEL_NAMES and not str(name).endswith((".yaml", ".yml")):
        raise ValueError(unknown_model_message(str(name)))
    return YOLO(load_config(name), nc=nc, names=names)


def _first(items: list[str], k: int = 5) -> str:
    shown = ", ".join(items[:k])
    return shown + (f" and {len(items) - k} more" if len(items) > k else "")


def load_state_dict_checked(
    model: nn.Module, state_dict: Mapping[str, torch.Tensor], origin: str
) -> nn.Module:
    """``model.load_state_dict`` with one clear sentence naming the first missing, unexpected and mis-shaped keys.

    Values are cast to the model's dtype per tensor (an fp16 checkpoint loads into an fp32 model).
    """
    own = model.state_dict()
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    misshaped = [
        f"{k} {tuple(state_dict[k].shape)} vs {tuple(own[k].shape)}"
        for k in own
        if k in state_dict and tuple(state_dict[k].shape) != tuple(own[k].shape)
    ]
    problems = []
    if missing:
        problems.append(f"missing keys: {_first(missing)}")
    if unexpected:
        problems.append(f"unexpected keys: {_first(unexpected)}")
    if misshaped:
        problems.append(f"mis-shaped keys (given vs expected): {_first(misshaped, 3)}")
    if problems:
        raise ValueError(
            f"{origin} does not fit {getattr(model, 'name', 'the model')}: " + "; ".join(problems)
        )
    cast = {k: v.to(dtype=own[k].dtype) if v.is_floating_point() else v for k, v in state_dict.items()}
    model.load_state_dict(cast, strict=True)
    return model


def from_official_state_dict(
    name: str, state_dict: Mapping[str, torch.Tensor], nc: int = 80, names: list[str] | None = None
) -> YOLO:
    """Build ``name`` and load a state dict with official keys (``model.22.cv4.0.0.conv.weight`` ...).

    This project keeps the official module layout, so keys map one to one; every key must be present
    and of the right shape.
    """
    model = build_model(name, nc=nc, names=names or default_names(nc))
    return load_state_dict_checked(model, state_dict, f"the state dict given for {name}")
