"""Where every second of a training run goes, from the process's start to its end: ``timing.json`` in the run folder,
written by the trainer itself (``Trainer.timing``) after every epoch and when ``fit`` ends, so a run accounts for its
wall clock without a profiler and a slow part shows by name.

The record is one chain of laps: each lap closes a phase that began where the previous one ended, so the phases add
up to the time since the process started (the operating system's record, ``psutil``: 10 ms resolution) at the moment
the record is written. Parts, in the order they run:
- ``start``: ``process`` (interpreter, imports, command line: ``y9train.timing.startup``) and the setup phases that
  ``startup.json`` details (imports, device, data, model, loaders, optimiser), then ``run_folder`` (the rest of setup:
  the run folder or the resumed state, the kernel choice, the run's first log lines);
- ``epochs``: one row per epoch: ``train`` (the training loop; epoch 1's holds the first batch and the first step:
  autotuning and the CUDA-graph capture, shown beside it), ``validate``, ``end`` (checks, checkpoint hand-off,
  results.csv, callbacks);
- ``end``: what ``fit`` does after the last epoch, each part by name (``y9train.loop.end``): waiting for the last
  shutting the loader workers down, the validation report, the last checkpoint write, the previews, results.png;
- ``after_fit``: from ``fit``'s return to the start of the interpreter's exit (the caller's own work: ``y9 train``
  prints its summary), recorded by ``record_exit`` where a command line registered it.
What no record written from inside the process can hold is the interpreter's own teardown after that: a test runs a
whole command and holds the record's sum to the wall clock measured from outside (``tests/train/test_run_timing.py``).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import time
from pathlib import Path
from typing import Any

from y9core.files.atomic_write import atomic_write
from y9train.timing.startup import SETUP_PHASES, StartupClock, process_age

#: the parts of a run's end, in the order ``y9train.loop.end.finish_run`` runs them
END_PHASES = ("loaders", "val_report", "checkpoint_writer", "previews", "plots", "run_lock")
EPOCH_PHASES = ("train", "validate", "end")

#: the start's phases that ``timing.json`` adds up (``startup.json``'s setup, before the first epoch)
START_KEYS = ("process", *SETUP_PHASES)
#: ``startup.json``'s figures that lie inside the first epoch's ``train`` (shown, not added)
INSIDE_FIRST_EPOCH = ("first_batch", "first_step", "graph_capture", "first_validation")


class RunTiming:
    """The laps of a whole run after its setup, continuing ``startup``'s chain (``StartupClock``).

    ``lap(name)`` closes a phase of the current epoch (``EPOCH_PHASES``, after ``start_epoch``) or of the end
    (``END_PHASES``); ``write(folder)`` writes ``timing.json``. Host time: the device's queued work lands in the
    phase that waits for it (the epoch's loss read-back, validation)."""

    def __init__(self, startup: StartupClock):
        self.startup = startup
        self._last = time.perf_counter()
        self.run_folder = 0.0
        self.epochs: list[dict[str, Any]] = []
        self.end: dict[str, float] = {}
        self.after_fit: float | None = None
        self.exit_at: float | None = None  # process age when the interpreter's exit began (record_exit)
        self._fit_returned: float | None = None

    def _take(self) -> float:
        now = time.perf_counter()
        seconds, self._last = now - self._last, now
        return seconds

    def setup_done(self) -> None:
        """Close ``run_folder``: the setup after ``startup``'s last phase (the chain continues from there)."""
        self._last = self.startup.last_mark
        self.run_folder += self._take()

    def start_epoch(self, epoch: int) -> None:
        """Open the row of ``epoch`` (0-based); what ran since the last lap goes to the previous row's ``end``."""
        gap = self._take()
        if self.epochs:
            self.epochs[-1]["end"] += gap
        else:
            self.run_folder += gap
        self.epochs.append({"epoch": epoch + 1, **{k: 0.0 for k in EPOCH_PHASES}})

    def lap(self, name: str) -> float:
        """Close phase ``name`` of the current epoch or of the run's end; returns its seconds."""
        seconds = self._take()
        if name in EPOCH_PHASES and self.epochs and not self.end:
            self.epochs[-1][name] += seconds
        elif name in END_PHASES:
            self.end[name] = self.end.get(name, 0.0) + seconds
        else:
            raise ValueError(f"timing phase {name!r} is unknown; expected one of {EPOCH_PHASES + END_PHASES}.")
        return seconds

    def fit_returned(self) -> None:
        """What ``fit`` did after its last named phase (returning the result) goes to ``end['return']``."""
        self.end["return"] = self._take()
        self._fit_returned = self._last

    def total(self) -> float:
        """The seconds the record accounts for: the sum of every phase."""
        start = self.startup.phases
        epochs = sum(row[k] for row in self.epochs for k in EPOCH_PHASES)
        return (sum(v for k, v in start.items() if k in START_KEYS) + self.run_folder + epochs
                + sum(self.end.values()) + (self.after_fit or 0.0))  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The record ``timing.json`` holds (seconds rounded to 0.1 ms)."""
        start = {k: round(v, 4) for k, v in self.startup.phases.items() if k in START_KEYS}
        start["run_folder"] = round(self.run_folder, 4)
        first = {k: round(self.startup.phases[k], 4) for k in INSIDE_FIRST_EPOCH if k in self.startup.phases}
        epochs = [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()} for row in self.epochs]
        sums = {k: round(sum(row[k] for row in self.epochs), 4) for k in EPOCH_PHASES}
        age = process_age()
        total = self.total()
        return {
            "start": start,
            "first_epoch_parts": first,
            "epochs": epochs,
            "epoch_totals": sums,
            "end": {k: round(v, 4) for k, v in self.end.items()},
            "after_fit": None if self.after_fit is None else round(self.after_fit, 4),
            "totals": {
                "start": round(sum(start.values()), 4),
                "epochs": round(sum(sums.values()), 4),
                "end": round(sum(self.end.values()), 4),
                "accounted": round(total, 4),
                "process_age": None if age is None else round(age, 4),
                # the record's own check: what the chain of laps leaves of the process's age when it was written
                "unaccounted": None if age is None else round(age - total, 4),
            },
            "exit_started": None if self.exit_at is None else round(self.exit_at, 4),
        }

    def summary(self) -> str:
        """One line for the run's log: start, epochs (train, validation), end, and the end's largest parts."""
        rec = self.to_dict()
        t, sums = rec["totals"], rec["epoch_totals"]
        parts = ", ".join(f"{k} {v:.2f}s" for k, v in sorted(rec["end"].items(), key=lambda kv: -kv[1]) if v >= 0.05)
        return (f"timing: {t['accounted']:.1f}s accounted: start {t['start']:.1f}s, {len(self.epochs)} epochs "
                f"{t['epochs']:.1f}s (train {sums['train']:.1f}s, validation {sums['validate']:.1f}s, between "
                f"{sums['end']:.1f}s), end {t['end']:.1f}s" + (f" ({parts})" if parts else ""))  # fmt: skip

    def write(self, folder: Path | None) -> Path | None:
        """``folder/timing.json``, written atomically (None when the run has no folder)."""
        if folder is None:
            return None
        return atomic_write(Path(folder) / "timing.json", json.dumps(self.to_dict(), indent=2) + "\n")

    def record_exit(self, folder: Path | None) -> None:
        """At the interpreter's exit (``atexit``; for command lines, whose process ends with the run), close
        ``after_fit`` and write the record again: everything but the interpreter's own teardown is then in it."""

        def at_exit() -> None:
            if self._fit_returned is None:
                return
            self.after_fit = time.perf_counter() - self._fit_returned
            self.exit_at = process_age()
            with contextlib.suppress(OSError):  # the run's files are written; a record not rewritten is no error
                self.write(folder)

        atexit.register(at_exit)

