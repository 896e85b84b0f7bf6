"""Seams of the trainer: ``TrainHooks`` (how the model, loader and collectives are set up: a distributed wrapper
replaces these from outside, the single-device defaults below are plain) and callbacks (user code at events).

A distributed launcher subclasses ``TrainHooks`` (rank, device, ``wrap_model`` with DDP, a loader with a
distributed sampler, all-reduce of the logged sums, rank-0-only saving/validation through ``is_main``) and passes
it to ``Trainer(config, hooks=...)``. Nothing on the single-device path imports or calls torch.distributed.

Callback events (``Trainer.add_callback(event, fn)``, ``fn(trainer)``): ``on_pretrain_routine_start`` (``fit``
begins, before the set-up: ``trainer.save_dir`` is None until the run folder is taken), ``on_train_start`` (the set-up
done), ``on_epoch_start``,
``on_before_optimizer_step`` (gradients unscaled and clipped, before ``optimizer.step``), ``on_step_end`` (after
each batch), ``on_epoch_end`` (the epoch's checkpoint is written in the background: the previous epoch's files are complete,
``trainer.writer.wait()`` waits for this one's), ``on_train_end``. A callback may raise
``StopTraining`` to end the run cleanly (the current epoch is not saved unless it had finished).
"""

from __future__ import annotations

import torch
from torch import nn

EVENTS = (
    "on_pretrain_routine_start",
    "on_train_start",
    "on_epoch_start",
    "on_before_optimizer_step",
    "on_step_end",
    "on_epoch_end",
    "on_train_end",
)


class StopTraining(Exception):
    """Raised by a callback to stop the run without an error."""


class TrainHooks:
    """Single-process defaults."""

    rank: int = 0
    world_size: int = 1

    def attach(self, trainer) -> None:
        """Called once by ``Trainer.__init__`` (e.g. to add callbacks); nothing on one process."""

    @property
    def is_main(self) -> bool:
        """Whether this process validates, saves checkpoints and writes logs."""
        return self.rank == 0

    def select_device(self, device: torch.device) -> torch.device:
        """The device this process trains on (the trainer resolved ``config.device`` to ``device``)."""
        return device

    def wrap_model(self, model: nn.Module) -> nn.Module:
        """Wrap the (device-placed, possibly compiled) model for the forward/backward pass."""
        return model

    def build_train_loader(self, dataset, batch_size: int, *, workers: int, multi_scale: bool, seed: int):
        """The training DataLoader (batch size per process); ``seed``: the seed of its order."""
        from y9train.data import build_dataloader

        return build_dataloader(dataset, batch_size, workers=workers, multi_scale=multi_scale, order_seed=seed)

    def all_reduce_mean(self, tensor: torch.Tensor) -> torch.Tensor:
        """Mean over processes of a logged statistic (identity on one process)."""
        return tensor

    def broadcast_stop(self, stop: bool) -> bool:
        """Agree on early stopping across processes."""
        return stop

    def barrier(self) -> None:
        """Wait for every process (no-op on one)."""
