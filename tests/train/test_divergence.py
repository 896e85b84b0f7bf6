"""A run whose weights go non-finite stops at the end of that epoch with one sentence, and keeps the last
checkpoint that held finite weights (y9train/loop/divergence.py)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from tests.train.trainer_fixtures import coco_pair, one_thread, tiny_config  # noqa: F401
from y9train.checkpoint import load_checkpoint
from y9train.checkpoints.integrity import first_non_finite
from y9train.checkpoints.load import read_checkpoint
from y9train.loop.divergence import TrainingDivergedError, check_finite_weights
from y9train.loop.trainer import Trainer


def test_first_non_finite_names_parameters_and_buffers():
    model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4))
    assert first_non_finite(model.state_dict()) is None
    model[1].running_var[2] = math.inf  # a buffer
    assert first_non_finite(model.state_dict()) == "1.running_var"
    with torch.no_grad():
        model[0].bias[0] = math.nan
    assert first_non_finite(model.state_dict()) == "0.bias"  # the first one, in state-dict order


def test_a_nan_loss_with_finite_weights_is_not_divergence():
    """Under fp16 a GradScaler discards overflowing steps: the epoch's mean loss can be NaN, the weights are fine."""
    model = nn.Conv2d(3, 4, 1)
    check_finite_weights(model, {"box": math.nan, "cls": 1.0, "dfl": 1.0}, epoch=3, run="runs/x")
    with torch.no_grad():
        model.weight[0, 0] = math.nan
    check_finite_weights(model, {"box": 1.0, "cls": 1.0, "dfl": 1.0}, epoch=3, run="runs/x")  # loss finite: unchecked
    with pytest.raises(TrainingDivergedError, match=r"runs/x: training diverged in epoch 3: weight holds NaN"):
        check_finite_weights(model, {"box": math.nan, "cls": 1.0, "dfl": 1.0}, epoch=3, run="runs/x")


def test_a_diverging_run_stops_and_keeps_the_last_finite_checkpoint(tmp_path):
    """Epoch 1 trains normally; in epoch 2 the learning rate is set absurdly high, so the weights overflow. The run
    stops at the end of epoch 2 instead of training on; last.pt still holds epoch 1 (finite, loadable)."""

    def blow_up(trainer):
        if trainer.epoch == 1:
            for g in trainer.optimizer.param_groups:
                g["lr"] = 1e30

    config = tiny_config(coco_pair(tmp_path), tmp_path, name="div", epochs=4, hyp={"clip_grad": 0.0})
    trainer = Trainer(config, callbacks={"on_before_optimizer_step": [blow_up]})
    with pytest.raises(TrainingDivergedError) as err:
        trainer.fit()
    msg = str(err.value)
    assert "training diverged in epoch 2" in msg and "last.pt still holds epoch 1" in msg and str(trainer.save_dir) in msg
    last = trainer.save_dir / "weights" / "last.pt"
    saved = read_checkpoint(last)["train"]
    assert saved["epoch"] == 0 and len(saved["history"]) == 1
    load_checkpoint(last)  # finite weights: the loader refuses NaN ones
    assert first_non_finite(trainer.model.state_dict()) is not None  # the live model did diverge
