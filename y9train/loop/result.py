"""``TrainResult``: what ``Trainer.fit`` returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TrainResult:
    """Outcome of ``Trainer.fit``.

    Attributes:
        save_dir: the run folder; last / best: checkpoint paths (None when not written).
        best_fitness / best_epoch: best 0.1 mAP50 + 0.9 mAP50-95 and its epoch (1-based; 0 when none).
        epochs_run: finished epochs (including those before a resume); epochs: the planned number.
        steps: optimiser steps; stopped_early: patience ran out.
        history: one dict per finished epoch (the rows of results.csv).
        profile: per-batch phase times in ms (``config.profile``), else empty.
        timing: the run's ``y9train.timing.run_timing.RunTiming`` (``timing.json``); a command line whose process ends with
            the run calls its ``record_exit`` so that the record also holds the time after ``fit``.
    """

    save_dir: Path | None
    last: Path | None
    best: Path | None
    best_fitness: float
    best_epoch: int
    epochs_run: int
    epochs: int
    steps: int
    stopped_early: bool
    history: list[dict[str, Any]] = field(default_factory=list)
    profile: list[dict[str, float]] = field(default_factory=list)
    timing: Any = field(default=None, repr=False)


def result_of(trainer, stopped: bool = False) -> TrainResult:
    """The ``TrainResult`` of a trainer as it stands (``Trainer.result`` waits for its checkpoint writes first)."""
    w = trainer.save_dir / "weights" if trainer.save_dir else None
    return TrainResult(
        save_dir=trainer.save_dir,
        last=w / "last.pt" if w and (w / "last.pt").exists() else None,
        best=w / "best.pt" if w and (w / "best.pt").exists() else None,
        best_fitness=trainer.best_fitness,
        best_epoch=trainer.best_epoch + 1,
        epochs_run=len(trainer.history),
        epochs=trainer.config.epochs,
        steps=trainer.step,
        stopped_early=stopped,
        history=list(trainer.history),
        profile=trainer.timer.collect() if trainer.config.profile else [],
        timing=getattr(trainer, "timing", None),
    )
