"""Official YOLOv9 checkpoints and bare state dicts, read without the official code.

``identify_architecture`` finds the model name and class count whose state dict has exactly the weights' keys and
shapes; ``from_state_dict`` builds that model with the weights (and the official class names, when they are not
the default indices); ``official_model`` picks the pickled model of an official checkpoint (its EMA weights when
present). ``y9train.checkpoint.load_checkpoint`` uses them for every file that is not a y9 checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from y9core.errors import ModelFileError
from y9train.checkpoints.integrity import check_finite, check_floating
from y9train.checkpoints.official_pickle import Placeholder
from y9train.models import MODEL_NAMES, YOLO, build_model, load_state_dict_checked

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


def _class_names(names: Any, nc: int, origin: Path) -> list[str] | None:
    """An official model's ``names`` (a list, or a dict by class index) as a list; None: use the defaults."""
    if names is None:
        return None
    if isinstance(names, dict):
        if not all(isinstance(k, int) for k in names) or sorted(names) != list(range(len(names))):
            raise ModelFileError(
                f"{origin}: refused: the pickle holds class names keyed by {sorted(names, key=str)[:5]}; expected "
                "the indices 0..n-1; nothing was executed"
            )
        names = [names[i] for i in sorted(names)]
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, (str, int)) for n in names):
        raise ModelFileError(
            f"{origin}: refused: the pickle holds {type(names).__name__} as the class names; expected a list or a "
            "dict of names; nothing was executed"
        )
    names = [str(n) for n in names]
    if len(names) != nc or names == [str(i) for i in range(nc)]:
        return None  # the official default names are the class indices: use COCO's names for nc=80
    return names


def from_state_dict(state_dict: Mapping[str, torch.Tensor], names: Any, origin: Path, weights: str) -> YOLO:
    """The model (float32, eval mode) these official weights fit, with them loaded; ``weights`` (``"ema"``,
    ``"model"``) goes into ``meta``. Weights of no known architecture, or not floating point or finite, are one
    ``ModelFileError`` naming ``origin``."""
    try:
        name, nc = identify_architecture(state_dict)
    except ValueError as exc:
        raise ModelFileError(f"{origin}: {exc}") from None
    check_floating(state_dict, origin)
    check_finite(state_dict, origin)
    model = build_model(name, nc=nc, names=_class_names(names, nc, origin))
    load_state_dict_checked(model, state_dict, str(origin))
    model.meta = {"source": "official", "file": origin.name, "weights": weights}
    return model.float().eval()


def official_model(ckpt: Any, path: Path) -> tuple[Placeholder, str]:
    """The pickled model of an official checkpoint: its EMA weights when present, else ``model``."""
    if not isinstance(ckpt, dict):
        raise ModelFileError(
            f"{path}: refused: the pickle holds {type(ckpt).__name__}, not the dict of an official YOLOv9 "
            "checkpoint; nothing was executed"
        )
    for key in ("ema", "model"):
        obj = ckpt.get(key)
        if obj is None:
            continue
        if not isinstance(obj, Placeholder):
            raise ModelFileError(
                f"{path}: refused: its '{key}' entry is {type(obj).__name__}; expected a pickled YOLOv9 model; "
                "nothing was executed"
            )
        return obj, key
    raise ModelFileError(
        f"{path}: has no 'model' entry holding a YOLOv9 model; it is not a checkpoint y9 knows"
    )
