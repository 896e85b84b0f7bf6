"""Distribution focal loss (Li et al. 2020, Generalized Focal Loss) and the matching decode.

Each box side is predicted as ``reg_max`` logits over the integer distances ``0 .. reg_max - 1`` (in stride
units). The decode is the expectation of the softmax; the loss puts the target distance ``t`` between its two
neighbouring bins ``floor(t)`` and ``floor(t) + 1`` with linear weights.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["dfl_decode", "dfl_decode_fp16", "dfl_loss"]


def dfl_decode(logits: torch.Tensor) -> torch.Tensor:
    """Expected distance per side: ``logits (Tensor[..., R])`` -> ``Tensor[...]`` in ``[0, R - 1]``."""
    bins = torch.arange(logits.shape[-1], device=logits.device, dtype=logits.dtype)
    return logits.softmax(-1) @ bins


def dfl_decode_fp16(logits: torch.Tensor) -> torch.Tensor:
    """``dfl_decode`` as an fp16 autocast region computes it: ``logits (Tensor[..., R])`` -> ``Tensor[...]`` float16.

    Under ``torch.autocast(dtype=float16)`` the softmax runs in float32 and the matmul with the bins takes fp16
    operands and returns fp16 (float32 accumulation): the probabilities and the expectation are each rounded to
    fp16, in the forward pass and, through the casts, in the backward pass. Written out with explicit casts so
    that it gives the same numbers with autocast off and on a CPU.
    """
    bins = torch.arange(logits.shape[-1], device=logits.device, dtype=torch.float32)
    prob = logits.float().softmax(-1).half().float()
    return (prob @ bins).half()


def dfl_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-side DFL: ``logits (Tensor[..., R])``, ``target (Tensor[...])`` in ``[0, R - 1)`` -> ``Tensor[...]``.

    ``loss = CE(logits, l) * (l + 1 - t) + CE(logits, l + 1) * (t - l)`` with ``l = floor(t)``. Targets must
    already be clamped below ``R - 1`` (``bbox2dist`` clamps at ``R - 1.01``) so that ``l + 1`` is a bin.
    """
    r = logits.shape[-1]
    left = target.long()
    w_left = left + 1 - target
    logp = F.log_softmax(logits.reshape(-1, r), -1)
    ce_left = -logp.gather(1, left.reshape(-1, 1)).view(target.shape)
    ce_right = -logp.gather(1, (left + 1).reshape(-1, 1)).view(target.shape)
    return ce_left * w_left + ce_right * (1 - w_left)
