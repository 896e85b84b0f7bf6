"""Optimiser, learning-rate schedules and warmup.

Parameter groups (``param_groups``): ``weights`` (conv / linear weights, with weight decay), ``bn`` (BatchNorm
weights, no decay) and ``bias`` (every bias, no decay; warms up from ``warmup_bias_lr`` down to the schedule).
SGD is nesterov; AdamW uses ``(momentum, 0.999)`` as betas. The torch implementation (fused or foreach) is chosen
by ``optimizer_implementation``.

Schedules are pure functions of the fractional epoch ``t = epoch + batch / batches_per_epoch`` giving a factor
of ``lr0``; the trainer evaluates them every step, so resuming needs no scheduler state beyond the step counters:
- ``linear``: ``(1 - t / E) * (1 - lrf) + lrf``;
- ``cosine``: ``lrf + (1 - lrf) * (1 + cos(pi * t / E)) / 2`` (torch's CosineAnnealingLR with eta_min = lrf * lr0);
- ``cosine_restarts``: cosine from 1 to ``eta_min`` over cycles of ``t0``, ``t0 * t_mult``, ... epochs
  (torch's CosineAnnealingWarmRestarts, with eta_min as a fraction of lr0).
With ``lr_step: epoch`` (the official trainer) the schedule is a LambdaLR stepped at each epoch's end: constant
within an epoch, and one epoch behind once warmup is over (``lr_epoch``): warmup aims at ``schedule(epoch)``, the
epoch where warmup ends keeps it, and every later epoch ``e`` runs at ``schedule(e - 1)``, the value the scheduler
set when epoch ``e - 1`` ended (the official sets ``scheduler.last_epoch = -1`` after the constructor's step).
Warmup (batch ``ni < nw``): each group's lr goes linearly from its start (0, or ``warmup_bias_lr`` for biases) to
``lr0 * schedule(t)``, and momentum from ``warmup_momentum`` to ``momentum``.

What depends on the schedule's length is resolved once, before the optimiser and the EMA are built
(``resolve_auto``), from the planned optimiser steps ``epochs * ceil(train_images / max(batch, nbs))``:
- ``optimizer: auto`` (``resolve_optimizer``): below ``AUTO_SGD_STEPS`` AdamW with lr0 0.001, beta1 0.9 and
  warmup_bias_lr 0, otherwise SGD with the recipe's lr0 / momentum / warmup_bias_lr;
- ``ema_tau: 0`` (``resolve_ema_tau``): the EMA's ramp ``decay * (1 - exp(-updates / tau))`` gets
  ``tau = S / ln(max(2, W * S))`` for S planned steps and ``W = ema_window`` (0.1; at most ``AUTO_EMA_TAU_MAX``, the
  official 2000): the decay at the last step is then ``1 - 1 / (W * S)``, an average over about the last
  ``W`` of the run's steps (with 0.1 they carry about 70% of its weight, the first half of the run nearly none),
  whatever the run's length; ``ema_window`` is a steadiness lever (docs/training.md). With the official tau of 2000
  a 520-step run ends at a decay of 0.23, i.e. its EMA is the latest weights (docs/training.md, "Reading the
  outputs").

Accumulation (``AccumulationRule``): an optimiser step happens when the batches since the last step
(``ni - last_opt_step``, counted across epochs) reach ``accumulate(ni)``: ``round(nbs / batch)`` (at least 1), or
with ``warmup_accumulate_ramp`` during warmup ``max(1, round(interp(ni, [0, nw], [1, nbs / batch])))``. At an
epoch's end ``epoch_end: step`` takes a step over the pending batches, ``drop`` zeroes their gradients (the
counter keeps running, as the official trainer's ``last_opt_step`` does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch import nn

from y9train.optimisation.hyp import Hyp

GROUP_NAMES = ("weights", "bn", "bias")


def param_groups(model: nn.Module) -> dict[str, list[nn.Parameter]]:
    """Trainable parameters split into ``weights`` (decayed), ``bn`` (BatchNorm weights) and ``bias``."""
    groups: dict[str, list[nn.Parameter]] = {name: [] for name in GROUP_NAMES}
    seen: set[int] = set()
    for module in model.modules():
        for pname, p in module.named_parameters(recurse=False):
            if not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            if pname == "bias":
                groups["bias"].append(p)
            elif isinstance(module, (nn.modules.batchnorm._BatchNorm, nn.GroupNorm, nn.LayerNorm)):
                groups["bn"].append(p)
            else:
                groups["weights"].append(p)
    return groups


def accumulation_steps(hyp: Hyp, batch: int) -> int:
    """Batches per optimiser step so that a step sees about ``nbs`` images."""
    return max(round(hyp.nbs / batch), 1)


#: ``optimizer: auto`` picks SGD from this many planned optimiser steps on, AdamW below
AUTO_SGD_STEPS = 10_000
#: what ``optimizer: auto`` sets when it picks AdamW (short schedules)
AUTO_ADAMW = {"lr0": 0.001, "momentum": 0.9, "warmup_bias_lr": 0.0}


#: ... and tau is at most this (the official recipe's)
AUTO_EMA_TAU_MAX = 2000.0


def planned_steps(epochs: int, train_images: int, batch: int, nbs: int) -> int:
    """Optimiser steps a run plans: ``epochs * ceil(train_images / max(batch, nbs))``."""
    return int(epochs) * math.ceil(int(train_images) / max(int(batch), int(nbs)))


def resolve_optimizer(hyp: Hyp, *, epochs: int, train_images: int, batch: int) -> tuple[Hyp, str | None]:
    """``(hyp with a concrete optimizer, the one-line report or None)``: ``optimizer: auto`` decided from the
    schedule length (module docstring); an explicit sgd / adamw is returned unchanged (no report)."""
    if hyp.optimizer != "auto":
        return hyp, None
    steps = planned_steps(epochs, train_images, batch, hyp.nbs)
    if steps < AUTO_SGD_STEPS:
        chosen = replace(hyp, optimizer="adamw", **AUTO_ADAMW)
        why = f"{steps} planned steps < {AUTO_SGD_STEPS}"
    else:
        chosen = replace(hyp, optimizer="sgd")
        why = f"{steps} planned steps >= {AUTO_SGD_STEPS}"
    return chosen, (
        f"optimizer auto -> {chosen.optimizer} lr0={chosen.lr0:g} momentum={chosen.momentum:g} "
        f"warmup_bias_lr={chosen.warmup_bias_lr:g} ({why})"
    )


def resolve_ema_tau(hyp: Hyp, *, steps: int) -> tuple[Hyp, str | None]:
    """``(hyp with a concrete ema_tau, the one-line report or None)``: ``ema_tau: 0`` becomes
    ``min(AUTO_EMA_TAU_MAX, S / ln(max(2, W * S)))`` for ``S = max(steps, 1)`` planned optimiser
    steps (module docstring), rounded to 0.1; a positive ema_tau is returned unchanged."""
    if hyp.ema_tau > 0:
        return hyp, None
    s = max(int(steps), 1)
    tau = round(min(AUTO_EMA_TAU_MAX, s / math.log(max(2.0, hyp.ema_window * s))), 1)
    last = hyp.ema_decay * (1.0 - math.exp(-s / tau))
    return replace(hyp, ema_tau=tau), (
        f"ema_tau auto -> {tau:g} (the EMA averages about the last {hyp.ema_window:.0%} of {s} planned steps; "
        f"decay {last:.3f} at the last step)"
    )


def resolve_auto(hyp: Hyp, *, epochs: int, train_images: int, batch: int) -> tuple[Hyp, list[str]]:
    """Every ``auto`` of ``hyp`` that depends on the schedule's length, decided once (module docstring):
    ``(hyp with concrete values, one report line per decision taken)``."""
    hyp, opt_note = resolve_optimizer(hyp, epochs=epochs, train_images=train_images, batch=batch)
    hyp, ema_note = resolve_ema_tau(hyp, steps=planned_steps(epochs, train_images, batch, hyp.nbs))
    return hyp, [n for n in (opt_note, ema_note) if n]


def optimizer_implementation(kind: str, device_type: str) -> dict[str, bool]:
    """The torch implementation flag of the ``kind`` optimiser (sgd | adamw) on ``device_type``: fused for AdamW
    on CUDA and on the CPU (one kernel over every parameter: 4x faster than foreach on the CPU, docs/benchmarks.md),
    foreach otherwise. SGD is never fused: torch's fused SGD makes its momentum buffers with ``empty_like`` and skips
    its kernel on a step GradScaler discards, so a discarded first step (routine under fp16) leaves uninitialised
    momentum and the weights diverge (torch 2.11 and 2.13; tests/train/test_optim_amp_skip.py). Fused AdamW leaves a
    discarded step untouched."""
    return {"fused": True} if kind == "adamw" and device_type in ("cuda", "cpu") else {"foreach": True}


def build_optimizer(model: nn.Module, hyp: Hyp, *, batch: int, device: torch.device) -> torch.optim.Optimizer:
    """SGD or AdamW over the three groups; weight decay scaled by ``batch * accumulate / nbs``."""
    if hyp.optimizer == "auto":
        raise ValueError(
            "optimizer=auto reached build_optimizer; expected sgd or adamw (resolve it first with "
            "y9train.optimisation.optim.resolve_optimizer, which needs the schedule length)."
        )
    groups = param_groups(model)
    decay = hyp.weight_decay * batch * accumulation_steps(hyp, batch) / hyp.nbs
    impl = optimizer_implementation(hyp.optimizer, device.type)
    spec = [
        {"params": groups["weights"], "weight_decay": decay, "name": "weights"},
        {"params": groups["bn"], "weight_decay": 0.0, "name": "bn"},
        {"params": groups["bias"], "weight_decay": 0.0, "name": "bias"},
    ]
    for g in spec:
        g["initial_lr"] = hyp.lr0
    if hyp.optimizer == "sgd":
        return torch.optim.SGD(spec, lr=hyp.lr0, momentum=hyp.momentum, nesterov=True, **impl)
    return torch.optim.AdamW(spec, lr=hyp.lr0, betas=(hyp.momentum, 0.999), **impl)


def set_implementation(optimizer: torch.optim.Optimizer, device: torch.device) -> None:
    """Put back ``optimizer_implementation``'s choice after loading a state dict (saved on another device, or by an
    older y9 that fused SGD), and lay each per-parameter state tensor (moments, momentum buffers) out as its
    parameter: a state saved by a channels_last run (CUDA) resumed in a contiguous one (the CPU), or the reverse,
    would otherwise feed a fused step tensors of two layouts, which it reads element by element of storage, not of
    index (a wrong update; tests/train/test_optim_amp_skip.py)."""
    kind = "adamw" if isinstance(optimizer, torch.optim.AdamW) else "sgd"
    impl = optimizer_implementation(kind, device.type)
    for g in optimizer.param_groups:
        g["fused"] = impl.get("fused", False)
        g["foreach"] = impl.get("foreach", False)
        for p in g["params"]:
            state = optimizer.state.get(p, {})
            for name, value in state.items():
                if isinstance(value, torch.Tensor) and value.shape == p.shape and value.stride() != p.stride():
                    state[name] = torch.empty_like(p, dtype=value.dtype).copy_(value)


@dataclass(frozen=True)
class LRSchedule:
    """``factor(t)``: learning rate as a fraction of lr0 at fractional epoch ``t`` (see the module docstring)."""

    kind: str
    epochs: int
    lrf: float = 0.01
    t0: float = 10.0
    t_mult: float = 2.0
    eta_min: float = 0.01

    @classmethod
    def from_hyp(cls, hyp: Hyp, epochs: int) -> LRSchedule:
        return cls(hyp.schedule, epochs, hyp.lrf, hyp.t0, hyp.t_mult, hyp.eta_min)

    def factor(self, t: float) -> float:
        if self.kind == "linear":
            return (1.0 - t / self.epochs) * (1.0 - self.lrf) + self.lrf
        if self.kind == "cosine":
            return self.lrf + (1.0 - self.lrf) * (1.0 + math.cos(math.pi * t / self.epochs)) / 2.0
        if self.kind == "cosine_restarts":
            t_cur, t_i = restart_position(t, self.t0, self.t_mult)
            return self.eta_min + (1.0 - self.eta_min) * (1.0 + math.cos(math.pi * t_cur / t_i)) / 2.0
        raise ValueError(f"schedule={self.kind!r}; expected linear, cosine or cosine_restarts.")


def restart_position(t: float, t0: float, t_mult: float) -> tuple[float, float]:
    """``(t_cur, t_i)``: the position inside the current warm-restart cycle and that cycle's length."""
    if t_mult == 1.0:
        return t % t0, t0
    n = int(math.log(t / t0 * (t_mult - 1.0) + 1.0, t_mult)) if t >= t0 else 0
    start = t0 * (t_mult**n - 1.0) / (t_mult - 1.0)
    length = t0 * t_mult**n
    if t - start >= length:  # float rounding at a cycle boundary
        start, length = start + length, length * t_mult
    elif t < start:
        length /= t_mult
        start -= length
    return t - start, length


def warmup_iters(hyp: Hyp, batches_per_epoch: int) -> int:
    """Batches of warmup: ``max(round(warmup_epochs * batches_per_epoch), warmup_min_iters)`` (0 when off)."""
    if hyp.warmup_epochs <= 0:
        return 0
    return max(round(hyp.warmup_epochs * batches_per_epoch), hyp.warmup_min_iters)


class LRController:
    """Sets every group's lr (and momentum during warmup) for batch ``ni`` at fractional epoch ``t``."""

    def __init__(self, optimizer: torch.optim.Optimizer, hyp: Hyp, epochs: int, batches_per_epoch: int):
        self.optimizer = optimizer
        self.hyp = hyp
        self.schedule = LRSchedule.from_hyp(hyp, epochs)
        self.nw = warmup_iters(hyp, batches_per_epoch)
        self.nb = max(1, batches_per_epoch)
        self.adam = isinstance(optimizer, torch.optim.AdamW)
        self.per_epoch = hyp.lr_step == "epoch"

    def lr_epoch(self, ni: int, t: float) -> float:
        """Where the schedule is evaluated for batch ``ni`` at fractional epoch ``t``: ``t`` itself (``lr_step:
        batch``); with ``lr_step: epoch``, ``floor(t)`` during warmup and in the epoch where it ends, then
        ``floor(t) - 1`` (module docstring)."""
        if not self.per_epoch:
            return t
        epoch = math.floor(t)
        return epoch if ni < self.nw else max(epoch - 1, self.nw // self.nb)

    def lrs(self, ni: int, t: float) -> dict[str, float]:
        """Learning rate of each group (by name) at batch ``ni``, fractional epoch ``t`` (no side effects)."""
        out = {}
        f = self.schedule.factor(self.lr_epoch(ni, t))
        for g in self.optimizer.param_groups:
            target = g["initial_lr"] * f
            if ni < self.nw:
                start = self.hyp.warmup_bias_lr if g.get("name") == "bias" else 0.0
                target = start + (target - start) * ni / self.nw
            out[g.get("name", str(len(out)))] = target
        return out

    def momentum(self, ni: int) -> float:
        h = self.hyp
        if ni >= self.nw:
            return h.momentum
        return h.warmup_momentum + (h.momentum - h.warmup_momentum) * ni / self.nw

    def step(self, ni: int, t: float) -> float:
        """Apply the learning rates and momentum of batch ``ni``; returns the ``weights`` group's lr."""
        lrs = self.lrs(ni, t)
        m = self.momentum(ni)
        for g in self.optimizer.param_groups:
            g["lr"] = lrs[g.get("name")]
            if self.adam:
                g["betas"] = (m, g["betas"][1])
            else:
                g["momentum"] = m
        return lrs.get("weights", next(iter(lrs.values())))


@dataclass(frozen=True)
class AccumulationRule:
    """When the trainer takes an optimiser step (module docstring): ``steps(ni, last_opt_step, last_of_epoch)``.

    Attributes:
        full: batches per step after warmup, ``round(nbs / batch)`` (at least 1).
        ratio: ``nbs / batch``, the end of the warmup ramp.
        ramp: ``warmup_accumulate_ramp``; nw: warmup batches.
        epoch_end: "step" or "drop".
    """

    full: int
    ratio: float
    ramp: bool
    nw: int
    epoch_end: str

    @classmethod
    def from_hyp(cls, hyp: Hyp, batch: int, nw: int) -> AccumulationRule:
        return cls(
            accumulation_steps(hyp, batch), hyp.nbs / batch, hyp.warmup_accumulate_ramp, nw, hyp.epoch_end
        )

    def accumulate(self, ni: int) -> int:
        """Batches per step at batch ``ni`` (the ramp as np.interp computes it, rounded half to even)."""
        if self.ramp and self.nw > 0 and ni <= self.nw:
            slope = (self.ratio - 1.0) / self.nw
            return max(1, round(slope * ni + 1.0))
        return self.full

    def steps(self, ni: int, last_opt_step: int, last_of_epoch: bool) -> bool:
        """Whether batch ``ni`` (after its backward) ends with an optimiser step."""
        if ni - last_opt_step >= self.accumulate(ni):
            return True
        return last_of_epoch and self.epoch_end == "step"

    def replay(self, batches_per_epoch: int, iterations: int) -> tuple[int, int]:
        """``(last_opt_step, steps)`` after ``iterations`` batches of whole epochs (what a resume continues from)."""
        last, steps = -1, 0
        for ni in range(iterations):
            if self.steps(ni, last, ni % batches_per_epoch == batches_per_epoch - 1):
                last, steps = ni, steps + 1
        return last, steps
