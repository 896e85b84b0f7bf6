"""The mean of the last epochs' EMA weights (``Hyp.average_epochs``, a steadiness lever; off by default).

With ``average_epochs: N`` the EMA weights at the end of each of a run's last N epochs (before that epoch's
validation) are summed in float64; at the end of the last epoch their mean replaces the EMA weights, so that the last
validation, ``last.pt`` and ``best.pt`` (when it scores best) hold the averaged weights. Every floating-point tensor
of the state (BatchNorm running statistics included, as the EMA itself averages them) is averaged; integer buffers
(``num_batches_tracked``) keep the latest value. Where the EMA follows the last ~50 optimiser steps (the default
``ema_window`` on a short run), this averages over whole epochs; the epoch-to-epoch swings of the validated mAP it
aims at are in docs/benchmarks.md. A run stopped early (``patience``) never reaches its last epoch and keeps its
EMA weights. The running sum is part of ``last.pt``'s training state (``state_dict``), so a resumed run averages the
same epochs; a finished run resumed for more epochs continues from the averaged weights, as ``last.pt`` holds them.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class EpochAverage:
    """``take(epoch, module)`` after each epoch (0-based) of an ``epochs``-epoch run: the last ``count`` epochs'
    weights of ``module`` are summed; at the last epoch their mean is copied into ``module`` (returns True then).
    ``count`` 0: never does anything."""

    def __init__(self, count: int, epochs: int):
        self.count = max(0, int(count))
        self.epochs = int(epochs)
        self.first = max(0, self.epochs - self.count)
        self.taken = 0
        self.sums: dict[str, torch.Tensor] = {}

    @property
    def active(self) -> bool:
        return self.count > 0

    @torch.no_grad()
    def take(self, epoch: int, module: nn.Module) -> bool:
        if not self.active or not self.first <= epoch < self.epochs:
            return False
        state = module.state_dict()
        for k, v in state.items():
            if not v.is_floating_point():
                continue
            total = self.sums.get(k)
            if total is None:
                self.sums[k] = v.detach().to(torch.float64, copy=True)
            else:
                if total.device != v.device:  # restored from a checkpoint on the host
                    total = self.sums[k] = total.to(v.device)
                total += v.to(torch.float64)
        self.taken += 1
        if epoch != self.epochs - 1:
            return False
        for k, v in state.items():
            if k in self.sums:
                v.copy_(self.sums[k] / self.taken)
        return True

    def state_dict(self) -> dict[str, Any] | None:
        """What ``last.pt`` stores for a resume (None when off or nothing was taken yet)."""
        if not self.active or not self.taken:
            return None
        return {"first": self.first, "taken": self.taken, "sums": self.sums}

    def load(self, state: dict[str, Any] | None) -> bool:
        """Continue the sum ``state`` holds; False (nothing loaded) when there is none or it covers other epochs
        (a run resumed with another ``epochs`` or ``average_epochs``: the window starts afresh)."""
        if not state or not self.active or int(state["first"]) != self.first:
            return False
        self.taken = int(state["taken"])
        self.sums = {k: v.to(torch.float64, copy=True) for k, v in state["sums"].items()}
        return True
