"""Per-step phase timing for profiling (``TrainConfig.profile``): loader wait, forward, assigner + loss,
backward, optimiser step, EMA.

On CUDA each phase boundary records a ``torch.cuda.Event`` (no host sync); the elapsed times are read once, when
``collect()`` is called (after the epoch). The loader wait is host time (``perf_counter``) around ``next()``.
On CPU everything is host time (CPU ops run synchronously).
"""

from __future__ import annotations

import time

import torch

PHASES = ("data", "forward", "loss", "backward", "optimizer", "ema")


class StepTimer:
    """``start_step()``, ``data_ready(seconds)``, ``mark(phase)`` after each phase, ``collect()`` -> per-step ms."""

    def __init__(self, device: torch.device, enabled: bool = True):
        self.enabled = enabled
        self.cuda = device.type == "cuda"
        self._pending: list[tuple[float, list[tuple[str, object]]]] = []
        self._current: list[tuple[str, object]] = []
        self._data_s = 0.0
        self.steps: list[dict[str, float]] = []

    def _stamp(self):
        if self.cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def start_step(self, data_seconds: float) -> None:
        if not self.enabled:
            return
        self._data_s = data_seconds
        self._current = [("start", self._stamp())]

    def mark(self, phase: str) -> None:
        if self.enabled and self._current:
            self._current.append((phase, self._stamp()))

    def end_step(self) -> None:
        if self.enabled and self._current:
            self._pending.append((self._data_s, self._current))
            self._current = []

    def collect(self) -> list[dict[str, float]]:
        """Resolve pending steps (one device sync on CUDA); returns every step's ``{phase: ms}`` so far."""
        if not self._pending:
            return self.steps
        if self.cuda:
            torch.cuda.synchronize()
        for data_s, marks in self._pending:
            row = dict.fromkeys(PHASES, 0.0)
            row["data"] = 1000.0 * data_s
            for (_, a), (phase, b) in zip(marks, marks[1:]):
                row[phase] = row.get(phase, 0.0) + (a.elapsed_time(b) if self.cuda else 1000.0 * (b - a))
            self.steps.append(row)
        self._pending = []
        return self.steps
