"""Stop a run whose weights have gone non-finite, before its checkpoint is overwritten.

A NaN or inf loss alone is not divergence: under fp16 a GradScaler discards the steps whose gradients overflow and
the weights stay finite. Weights or BatchNorm statistics that hold NaN or inf never recover, and every later epoch
would only spend time and write unusable checkpoints. So after each epoch whose mean training loss is not finite,
``check_finite_weights`` scans every floating-point tensor of the model (``checkpoint_integrity.first_non_finite``,
the scan the checkpoint loader uses; one device sync; epochs with a finite loss cost nothing) and raises
``TrainingDivergedError`` naming the first bad tensor. The trainer checks before it writes the epoch's checkpoint,
so ``last.pt`` keeps the last epoch that ended with finite weights.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from y9core.errors import Y9Error
from y9train.checkpoints.integrity import first_non_finite


class TrainingDivergedError(Y9Error, RuntimeError):
    """The weights of a training run hold NaN or inf values (the run cannot recover)."""


def check_finite_weights(model: torch.nn.Module, losses: Mapping[str, float], *, epoch: int, run: str) -> None:
    """Raise ``TrainingDivergedError`` when ``losses`` (the epoch's mean training losses) hold a non-finite value
    and the model's parameters or buffers do too. ``epoch`` counts from 1; ``run`` names the run directory."""
    if all(math.isfinite(v) for v in losses.values()):
        return
    name = first_non_finite(model.state_dict())
    if name is None:
        return
    kept = f"last.pt still holds epoch {epoch - 1}" if epoch > 1 else "no checkpoint was written"
    shown = ", ".join(f"{k} {v:.4g}" for k, v in losses.items())
    raise TrainingDivergedError(
        f"{run}: training diverged in epoch {epoch}: {name} holds NaN or inf values (mean loss {shown}); {kept}. "
        "Expected finite weights: lower lr0, raise warmup_epochs, or train with amp=bf16 or amp=off."
    )
