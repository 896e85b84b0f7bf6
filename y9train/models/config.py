"""Model configuration files (this project's own format) and their validation.

A config is YAML: ``name``, ``strides``, optional ``deploy`` (how a dual model drops its auxiliary
branch) and ``layers``: one mapping per layer, its index being its position. Each layer has ``op`` and,
depending on the op, ``from`` (default -1: the previous layer; an int or a list), ``out``, ``k``, ``s``,
``mid``, ``branch``, ``depth``, ``outs``, ``pick``, ``aux``/``main`` (dual head inputs).
"""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path
from typing import Any

from y9core.errors import Y9Error
from y9core.files.yaml_load import load_yaml_file
from y9train.models.config_bounds import MAX_LAYERS, check_layer, check_size, check_strides

CONFIG_DIR = Path(__file__).with_name("configs")
MODEL_NAMES: tuple[str, ...] = (
    "yolov9-t", "yolov9-s", "yolov9-m", "yolov9-c", "yolov9-e",
    "gelan-t", "gelan-s", "gelan-m", "gelan-c", "gelan-e",
)  # fmt: skip

# op -> (required keys, optional keys)
OPS: dict[str, tuple[set[str], set[str]]] = {
    "input": (set(), set()),
    "conv": ({"out", "k", "s"}, {"from"}),
    "elan1": ({"out", "mid", "branch"}, {"from"}),
    "repncspelan": ({"out", "mid", "branch", "depth"}, {"from"}),
    "aconv": ({"out"}, {"from"}),
    "adown": ({"out"}, {"from"}),
    "sppelan": ({"out", "mid"}, {"from"}),
    "upsample": (set(), {"from", "scale"}),
    "concat": ({"from"}, set()),
    "cblinear": ({"outs"}, {"from"}),
    "cbfuse": ({"from", "pick"}, set()),
    "detect": ({"from"}, set()),
    "dual_detect": ({"aux", "main"}, set()),
}


class ConfigError(Y9Error, ValueError):
    """A model configuration file is malformed (a ValueError too: callers that check arguments catch it)."""


def unknown_model_message(name: str) -> str:
    return f"unknown model {name!r}: expected one of {', '.join(MODEL_NAMES)} or a path to a model .yaml file"


def _sources(layer: dict[str, Any], index: int) -> list[int]:
    """Absolute indices of the layers feeding ``layer``."""
    if layer["op"] == "input":
        return []
    if layer["op"] == "dual_detect":
        raw = list(layer["aux"]) + list(layer["main"])
    else:
        raw = layer.get("from", -1)
        raw = raw if isinstance(raw, list) else [raw]
    return [index + f if f < 0 else f for f in raw]


def validate(cfg: dict[str, Any], origin: str) -> dict[str, Any]:
    """Check ops, keys and routing; add ``sources`` (absolute input indices) to every layer."""
    if not isinstance(cfg, dict) or not isinstance(cfg.get("layers"), list) or not cfg["layers"]:
        raise ConfigError(f"{origin}: expected a mapping with a non-empty 'layers' list")
    cfg = copy.deepcopy(cfg)
    cfg.setdefault("name", Path(origin).stem)
    cfg.setdefault("strides", [8, 16, 32])
    n = len(cfg["layers"])
    if n > MAX_LAYERS:
        raise ConfigError(f"{origin}: has {n} layers; expected at most {MAX_LAYERS}")
    check_strides(cfg["strides"], origin, ConfigError)
    for i, layer in enumerate(cfg["layers"]):
        if not isinstance(layer, dict) or layer.get("op") not in OPS:
            raise ConfigError(
                f"{origin}: layer {i} has op {layer.get('op') if isinstance(layer, dict) else layer!r}; "
                f"expected one of {', '.join(OPS)}"
            )
        required, optional = OPS[layer["op"]]
        keys = set(layer) - {"op"}
        if missing := required - keys:
            raise ConfigError(f"{origin}: layer {i} ({layer['op']}) lacks {', '.join(sorted(missing))}")
        if extra := keys - required - optional:
            raise ConfigError(
                f"{origin}: layer {i} ({layer['op']}) has unknown keys {', '.join(sorted(extra))}"
            )
        check_layer(layer, i, n, origin, ConfigError)  # numbers and types, before any arithmetic on them
        layer["sources"] = _sources(layer, i)
        if i == 0 and layer["op"] != "input" and layer["sources"] != [-1]:
            raise ConfigError(f"{origin}: layer 0 must read the input (from: -1)")
        for s in layer["sources"]:
            if (s >= i or s < 0) and not (i == 0 and s == -1):
                raise ConfigError(
                    f"{origin}: layer {i} reads layer {s}; expected an earlier layer (0..{i - 1})"
                )
    if cfg["layers"][-1]["op"] not in ("detect", "dual_detect"):
        raise ConfigError(
            f"{origin}: the last layer must be detect or dual_detect, not {cfg['layers'][-1]['op']}"
        )
    if any(layer["op"] in ("detect", "dual_detect") for layer in cfg["layers"][:-1]):
        raise ConfigError(f"{origin}: only the last layer may be a detection head")
    check_size(cfg["layers"], origin, ConfigError)
    if "deploy" in cfg:
        dep = cfg["deploy"]
        if (cfg["layers"][-1]["op"] != "dual_detect" or not isinstance(dep, dict)
                or not {"model", "layers", "head"} <= set(dep)):  # fmt: skip
            raise ConfigError(f"{origin}: 'deploy' needs model, layers and head, and a dual_detect head")
        ranges = dep["layers"]
        if not isinstance(ranges, list) or not all(
            isinstance(r, list) and len(r) == 3 and all(type(v) is int for v in r) for r in ranges
        ):
            raise ConfigError(f"{origin}: deploy layers is {str(ranges)[:40]}; expected [[first, last, shift], ...] "
                              "of integers")  # fmt: skip
        for first, last, _ in ranges:
            if not 0 <= first <= last < n:
                raise ConfigError(f"{origin}: deploy range {first}..{last} is outside 0..{n - 1}")
    return cfg


@lru_cache(maxsize=32)
def _load_file(path: str) -> dict[str, Any]:
    raw = load_yaml_file(path, what="model config", error=ConfigError)  # bounded: y9core.files.yaml_load
    return validate(raw, path)


def load_config(name_or_path: str | Path) -> dict[str, Any]:
    """A validated config (a fresh copy) by model name (``gelan-c``) or by path to a ``.yaml`` file."""
    key = str(name_or_path)
    if key in MODEL_NAMES:
        return copy.deepcopy(_load_file(str(CONFIG_DIR / f"{key}.yaml")))
    if key.endswith((".yaml", ".yml")):
        return copy.deepcopy(_load_file(key))
    raise ValueError(unknown_model_message(key))
