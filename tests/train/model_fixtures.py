"""Weights of the official parity fixtures, rebuilt by the rule in ../shared/fixtures/official/README.md."""

from __future__ import annotations

import json
import zlib
from functools import lru_cache

import numpy as np
import torch

from tests.conftest import shared_path

FIXTURES = ("fixtures", "official")


@lru_cache(maxsize=1)
def parity_keys() -> dict:
    return json.loads(shared_path(*FIXTURES, "official_parity_keys.json").read_text())


@lru_cache(maxsize=1)
def parity_outputs() -> dict[str, np.ndarray]:
    with np.load(shared_path(*FIXTURES, "official_parity_outputs.npz")) as z:
        return {k: z[k] for k in z.files}


@lru_cache(maxsize=1)
def _bn_stats() -> dict[str, np.ndarray]:
    with np.load(shared_path(*FIXTURES, "official_bn_stats.npz")) as z:
        return {k: z[k] for k in z.files}


def _draw(key: str, shape: list[int], kind: str, name: str) -> np.ndarray:
    rng = np.random.Generator(np.random.PCG64(zlib.crc32(key.encode())))
    if kind == "conv_weight":
        return rng.standard_normal(shape) * np.sqrt(2 / np.prod(shape[1:]))
    if kind == "conv_bias":
        return rng.normal(0, 0.1, shape)
    if kind == "bn_weight":
        return rng.uniform(0.2, 0.5, shape)
    if kind == "bn_bias":
        return rng.normal(0, 0.1, shape)
    if kind in ("bn_mean", "bn_var"):
        return _bn_stats()[f"{name}/{key}"]
    if kind == "dfl_fixed":
        return np.arange(16, dtype=np.float64).reshape(shape)
    if kind == "bn_count":
        return np.zeros(shape, dtype=np.int64)
    raise ValueError(f"unknown kind {kind}")


def official_state_dict(name: str) -> dict[str, torch.Tensor]:
    """The official-keyed float32 state dict of fixture model ``name`` (nc=80)."""
    out = {}
    for key, shape, kind in parity_keys()["models"][name]["state_dict"]:
        value = _draw(key, shape, kind, name)
        if kind == "bn_count":
            out[key] = torch.zeros(shape, dtype=torch.long)
        else:
            out[key] = torch.from_numpy(np.asarray(value, dtype=np.float64).astype(np.float32)).reshape(shape)
    return out


def official_weights_model(name: str):
    """Model ``name`` (nc=80) holding the fixture weights, in eval mode, float32."""
    from y9train.models import from_official_state_dict

    return from_official_state_dict(name, official_state_dict(name)).eval()


def fixture_input() -> torch.Tensor:
    return torch.from_numpy(parity_outputs()["input"])
