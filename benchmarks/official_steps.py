"""What train_dual.py's epoch checkpoints say about its optimiser steps, and how far y9's figures lie from them.

Used by ``benchmarks/official_lockstep.py``. An official epoch checkpoint holds the raw weights and the EMA in fp16
and the SGD state (momentum buffers keyed by position in the optimiser's parameter list); these functions name
those buffers from the model's ``state_dict`` order, sum them per (layer, parameter group) and compare. The files
are read with y9's restricted unpickler (nothing in them is executed).
"""

from __future__ import annotations

import math
from pathlib import Path

STATS = ("running_mean", "running_var", "num_batches_tracked")  # BatchNorm buffers
# smart_optimizer's groups in order: SGD(biases), then decayed weights, then BatchNorm weights
OFFICIAL_GROUPS = ("bias", "weights", "bn")


def layer_group_norms(tensors: dict, groups: dict) -> dict[str, float]:
    """{"N/group": L2 norm} over the tensors of layer ``model.N`` in each parameter group."""
    sq: dict[str, float] = {}
    for key, t in tensors.items():
        k = f"{key.split('.')[1]}/{groups[key]}"
        sq[k] = sq.get(k, 0.0) + float((t.double() ** 2).sum())
    return {k: math.sqrt(v) for k, v in sorted(sq.items())}


def official_param_names(state_dict: dict) -> tuple[list[str], dict[str, str]]:
    """The official optimiser's parameter order and each parameter's group, from its model's state_dict order:
    smart_optimizer walks the modules in order and puts ``bias`` in group 0, a BatchNorm ``weight`` (a module with
    running statistics) in group 2, any other parameter in group 1."""
    modules = {k.rsplit(".", 1)[0] for k in state_dict if k.endswith("running_mean")}
    params = [k for k in state_dict if not k.endswith(STATS)]
    group = {}
    for k in params:
        module, leaf = k.rsplit(".", 1)
        group[k] = "bias" if leaf == "bias" else "bn" if module in modules else "weights"
    order = [k for g in OFFICIAL_GROUPS for k in params if group[k] == g]
    return order, group


def official_state(path: Path) -> dict:
    """Raw weights (fp32 from the fp16 file), momentum buffers by name and group names of an official
    epoch checkpoint."""
    from y9train.official_pickle import load_official, placeholder_state_dict

    ckpt = load_official(path)
    model = {k: v.float() for k, v in placeholder_state_dict(ckpt["model"]).items()}
    order, group = official_param_names(model)
    opt = ckpt["optimizer"]
    flat = [i for g in opt["param_groups"] for i in g["params"]]
    if len(flat) != len(order):
        raise ValueError(f"{path}: {len(flat)} optimiser parameters; expected {len(order)} from its model")
    name = dict(zip(flat, order, strict=True))
    bufs = {name[i]: s["momentum_buffer"].float() for i, s in opt["state"].items() if "momentum_buffer" in s}
    return {"model": model, "bufs": bufs, "group": group}


def relative_l2(ours: dict, ref: dict, keys) -> float:
    """``||ours - ref|| / ||ref||`` over the tensors ``keys`` taken together."""
    num = sum(float(((ours[k].detach().cpu().double() - ref[k].cpu().double()) ** 2).sum()) for k in keys)
    return math.sqrt(num / sum(float((ref[k].cpu().double() ** 2).sum()) for k in keys))


def ema_difference(ours: dict, run: Path, iteration: int) -> dict[str, float]:
    """Relative L2 difference of y9's EMA state from the official's after ``iteration``: weights and BatchNorm
    running statistics (``num_batches_tracked`` is left out: the official EMA keeps integer buffers as loaded)."""
    from y9train.official_pickle import load_official, placeholder_state_dict

    ref = placeholder_state_dict(load_official(run / "weights" / f"epoch{iteration}.pt")["ema"])
    return {
        "weights": relative_l2(ours, ref, [k for k in ref if not k.endswith(STATS)]),
        "bn_stats": relative_l2(ours, ref, [k for k in ref if k.endswith(STATS[:2])]),
    }


def max_relative(ours: dict[str, float], ref: dict[str, float]) -> float:
    if set(ours) != set(ref):
        raise ValueError(f"layer/group sets differ: {sorted(set(ours) ^ set(ref))[:6]}")
    return max(abs(ours[k] - ref[k]) / max(ref[k], 1e-12) for k in ref)
