"""Exponential moving average of a model's weights (the weights that get validated and saved).

``ema = d * ema + (1 - d) * model`` over every floating-point parameter and buffer (BatchNorm running stats
included), with the ramped decay ``d = decay * (1 - exp(-updates / tau))`` so that early updates follow the
model closely. The update is one ``torch._foreach_lerp_`` over all tensors (a few fused kernels, no host sync);
integer buffers (``num_batches_tracked``) are copied.

``fp16_from_validation`` reproduces what train_dual.py's validation does to its EMA on a GPU with AMP
(``val_dual.run(half=amp, model=ema.ema)`` calls ``model.half()`` in place, never undone): after the first
``validated()`` the averaged copy is fp16 and each update is ``ema *= d; ema += (1 - d) * model`` into fp16
tensors (the model's fp32 weights scaled in fp32, the sum rounded to fp16), the official's own arithmetic.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch
from torch import nn


class ModelEMA:
    """EMA of ``model`` (an unwrapped module: pass the plain model, not a compiled or DDP wrapper).

    Attributes:
        module: the averaged copy (eval mode, no gradients).
        updates: number of updates so far (sets the ramp).
    """

    def __init__(
        self,
        model: nn.Module,
        decay: float = 0.9999,
        tau: float = 2000.0,
        updates: int = 0,
        fp16_from_validation: bool = False,
    ):
        self.module = copy.deepcopy(model).eval().requires_grad_(False)
        self.decay = float(decay)
        self.tau = float(tau)
        self.updates = int(updates)
        self.fp16_from_validation = bool(fp16_from_validation)
        self._pairs: tuple[nn.Module, list, list, list, list] | None = None

    def validated(self) -> None:
        """Call after each validation of ``module``: with ``fp16_from_validation`` it turns (stays) fp16."""
        if self.fp16_from_validation and next(self.module.parameters()).dtype != torch.float16:
            self.module.half()
            self._pairs = None

    def current_decay(self) -> float:
        """The decay the next update uses."""
        return self.decay * (1.0 - math.exp(-(self.updates + 1) / self.tau))

    def _tensors(self, model: nn.Module) -> tuple[list, list, list, list]:
        if self._pairs is None or self._pairs[0] is not model:
            own = self.module.state_dict(keep_vars=True)
            src = model.state_dict(keep_vars=True)
            if own.keys() != src.keys():
                raise ValueError(
                    "the model given to ModelEMA.update does not match the averaged model's keys."
                )
            floats = [k for k, v in own.items() if v.is_floating_point()]
            others = [k for k, v in own.items() if not v.is_floating_point()]
            self._pairs = (
                model,
                [own[k].data for k in floats],
                [src[k].data for k in floats],
                [own[k].data for k in others],
                [src[k].data for k in others],
            )
        return self._pairs[1:]

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        """One EMA step towards ``model``'s current weights."""
        d = self.current_decay()
        self.updates += 1
        ema_f, model_f, ema_o, model_o = self._tensors(model)
        if ema_f and ema_f[0].dtype == model_f[0].dtype:
            torch._foreach_lerp_(ema_f, model_f, 1.0 - d)
        else:  # an fp16 EMA of an fp32 model (fp16_from_validation); per tensor, as ``_foreach_mul_`` on fp16
            for v in ema_f:  # tensors rounds differently from ``v *= d`` (measured on a CPU)
                v.mul_(d)
            torch._foreach_add_(ema_f, torch._foreach_mul(model_f, 1.0 - d))
        if ema_o:
            torch._foreach_copy_(ema_o, model_o)

    def state_dict(self) -> dict[str, Any]:
        return {"updates": self.updates, "decay": self.decay, "tau": self.tau}

    def load(self, weights: dict[str, torch.Tensor], updates: int) -> None:
        """Restore averaged weights (e.g. from a checkpoint) and the update count."""
        self.module.load_state_dict(weights, strict=True)
        self.updates = int(updates)
        self._pairs = None
