"""The training loader's iterator for each epoch, the next epoch's started before the current one validates.

A DataLoader with persistent workers hands its workers an epoch's first batches only when it is iterated again;
each epoch's first batch then waited for one worker to build a whole batch (mosaic and all) while the GPU idled,
and the workers idled through the validation before it (issue 48; docs/benchmarks.md, "Training: speed").
``EpochBatches.prefetch`` starts the next epoch's iteration as soon as an epoch's last batch is taken, so its first
batches are built while the epoch validates and writes its checkpoint. The batches do not change: the sampler
reads the epoch and the mosaic flag into each sample's key when iteration starts (``y9train.data.sampler``), and a
sample's augmentation depends on its key alone. A prefetched epoch that never runs (early stop, an error) costs
the batches made for it; the run's end shuts the workers down either way (``y9train.loop.end``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any


class EpochBatches:
    """``of(epoch)``: an iterator over ``loader``'s batches of ``epoch``; ``prefetch(epoch)`` starts it early.

    Args:
        loader: the training DataLoader; its dataset (the main process's copy) takes the epoch and the mosaic
            flag, which its batch sampler reads into the keys.
        config: the run's ``TrainConfig``, read when an epoch starts (``epochs``, ``hyp.close_mosaic``: the mosaic
            is off for the last ``close_mosaic`` epochs).
        report: where the one line "mosaic off from epoch N" goes.
    """

    def __init__(self, loader: Any, config: Any, report: Callable[[str], None]):
        self.loader = loader
        self.config = config
        self.report = report
        self.started: tuple[int, Iterator] | None = None  # (epoch, its iterator) started ahead of its epoch

    def prefetch(self, epoch: int) -> None:
        """Start iterating ``epoch`` now (nothing past the run's last epoch)."""
        if epoch < self.config.epochs:
            self.started = (epoch, self._start(epoch))

    def of(self, epoch: int) -> Iterator:
        """The iterator over ``epoch``'s batches: the one ``prefetch`` started for it, else a new one."""
        started, self.started = self.started, None
        if started is not None and started[0] == epoch:
            return started[1]
        return self._start(epoch)

    def _start(self, epoch: int) -> Iterator:
        dataset, close = self.loader.dataset, self.config.hyp.close_mosaic
        if close and epoch >= self.config.epochs - close and dataset.mosaic:
            dataset.close_mosaic()
            self.report(f"mosaic off from epoch {epoch + 1} (close_mosaic={close})")
        dataset.set_epoch(epoch)
        return iter(self.loader)
