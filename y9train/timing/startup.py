"""Where a run's time goes before its steps settle, by part, recorded by the trainer itself: ``startup.json`` in the
run folder (rewritten atomically after epochs 1 and 2) and one log line after epoch 1, so a GPU run reports its fixed
costs without a profiler (``Trainer.startup``).

Phases (seconds, host time, in the order they run; on CUDA each phase that queued device work ends with one
synchronisation, once per run, so the device's share lands in its own phase):
- ``process``: from the process's start (the operating system's record, ``psutil``) to the trainer's setup: the
  interpreter, importing y9 and torch, parsing the command line;
- ``imports``: the modules setup imports on first use (data pipeline, loss, the metrics backend);
- ``device``: choosing the device and the AMP mode (the first CUDA call creates the context);
- ``data_yaml``: reading and checking data.yaml;
- ``model``: building or loading the model, moving it to the device; ``loss``: the loss;
- ``train_labels`` / ``val_labels``: the label scan, or reading the label cache (``facts["train_label_cache"]``:
  ``hit``, ``miss`` or ``off``; a miss decodes every image once to verify it);
- ``train_images`` / ``val_images``: filling the image cache (``ram``: every image decoded and resized, in
  ``workers`` threads; ``disk``: only entries not yet on disk; none: nothing);
- ``loaders``: building the DataLoaders (their worker processes start at the first batch);
- ``optimizer_imports``: waiting for ``torch._dynamo``, which the first ``torch.optim`` optimiser imports (seconds
  of Python: docs/benchmarks.md), imported in a thread from the ``device`` phase on (``BackgroundImports``): what those phases did not
  cover;
- ``optimizer``: the ``auto`` decisions, EMA, optimiser, schedule, CUDA-graph wrapper, run folder, kernel choice;
- ``first_batch``: waiting for the first training batch (loader workers start, first samples);
- ``first_step``: the first batch's forward, loss, backward (and optimiser step when it takes one): cuDNN autotuning
  of the training shape and, with CUDA graphs, their capture (``graph_capture``, a part of it).
Epoch figures: ``first_epoch`` and ``second_epoch`` (``time_s`` of results.csv; the first includes ``first_batch``
and ``first_step``), ``first_validation`` (``val_s`` of epoch 1: the first evaluation autotunes its own shapes).
Totals: ``to_first_step`` (process start to the first step's forward: ``process`` + setup + ``first_batch``) and
``through_first_step`` (to the end of the first step).
"""

from __future__ import annotations

import importlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import torch

from y9core.files.atomic_write import atomic_write

SETUP_PHASES = (
    "imports", "device", "data_yaml", "model", "loss", "train_labels", "train_images", "val_labels",
    "val_images", "loaders", "optimizer_imports", "optimizer",
)  # fmt: skip
FIRST_STEP_PHASES = ("first_batch", "first_step")
EPOCH_FIGURES = ("first_epoch", "second_epoch", "first_validation")


def process_age() -> float | None:
    """Seconds since this process started (the kernel's record, 10 ms resolution), None when it cannot be known.

    On Linux from ``/proc`` (the start and the uptime both counted from boot); elsewhere from ``psutil``, whose start
    time adds the boot time rounded to the second (so an age off by up to a second)."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime, in clock ticks
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil
    except ImportError:
        return None
    try:
        return max(0.0, time.time() - psutil.Process().create_time())
    except (psutil.Error, OSError):
        return None


#: imported by the first ``torch.optim`` optimiser (its ``__init__`` and ``step`` are wrapped by
#: ``torch._disable_dynamo``, which imports ``torch._dynamo`` on its first call: seconds of pure Python)
OPTIMIZER_IMPORTS = ("torch._dynamo",)


class BackgroundImports:
    """Import ``modules`` in a thread from ``start()`` to ``join()``: for setup phases whose work leaves the
    interpreter free much of the time (creating the CUDA context, decoding images in threads, reading files), so
    that the imports cost little where they would otherwise run alone later.

    The main thread's imports in between are y9's own modules, which the listed ones never import, and ``join``
    waits until the thread is done, so no import is still running when setup goes on. A module that fails to
    import here is left to fail, with its own error, where the run imports it."""

    def __init__(self, modules: tuple[str, ...] = OPTIMIZER_IMPORTS):
        self.modules = modules
        self._thread = threading.Thread(target=self._run, name="y9-imports", daemon=True)

    def _run(self) -> None:
        for name in self.modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the real import, later, raises it
                return

    def start(self) -> BackgroundImports:
        self._thread.start()
        return self

    def join(self) -> None:
        if self._thread.is_alive() or self._thread.ident is not None:
            self._thread.join()


class StartupClock:
    """Laps of a run's start: ``lap(name)`` closes phase ``name`` (the time since the previous lap), ``fact(k, v)``
    notes what a phase found (cache hits, the image cache mode), ``epoch(...)`` adds the epoch figures.

    Args:
        device: the run's device (on CUDA, ``lap(..., sync=True)`` waits for its queued work first).
        process_seconds: the time before this clock started (default: ``process_age()``).
    """

    def __init__(self, device: torch.device | None = None, *, process_seconds: float | None = -1.0):
        self.device = device
        self.phases: dict[str, float] = {}
        self.facts: dict[str, Any] = {}
        seconds = process_age() if process_seconds is not None and process_seconds < 0 else process_seconds
        if seconds is not None:
            self.phases["process"] = float(seconds)
        self._last = time.perf_counter()
        self.started_first_step: float | None = None  # seconds from process start to the first step's forward

    @property
    def last_mark(self) -> float:
        """``time.perf_counter()`` at the last lap: where the next phase (or ``y9train.timing.run_timing``'s chain) begins."""
        return self._last

    def set_device(self, device: torch.device) -> None:
        self.device = device

    def _sync(self) -> None:
        if self.device is not None and self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def lap(self, name: str, *, sync: bool = False) -> float:
        """Close phase ``name``: the seconds since the previous lap (added to it when it was lapped before)."""
        if sync:
            self._sync()
        now = time.perf_counter()
        seconds = now - self._last
        self._last = now
        self.phases[name] = self.phases.get(name, 0.0) + seconds
        return seconds

    def lap_split(self, parts: dict[str, float]) -> None:
        """Close a lap made of named parts whose seconds the caller measured (e.g. a dataset's label scan and image
        cache); what the parts leave of the lap is added to the last one."""
        total = self.lap("_split")
        del self.phases["_split"]
        names = list(parts)
        for name in names:
            self.phases[name] = self.phases.get(name, 0.0) + parts[name]
        self.phases[names[-1]] += max(0.0, total - sum(parts.values()))

    def skip(self) -> None:
        """Start the next phase now (the time since the previous lap belongs to no phase)."""
        self._last = time.perf_counter()

    def fact(self, key: str, value: Any) -> None:
        self.facts[key] = value

    def epoch(self, index: int, record: dict[str, Any]) -> bool:
        """Take the figures of this run's ``index``-th epoch (0, 1; a resumed run counts from its first); True when
        the record changed (then write it again)."""
        if index == 0:
            self.phases["first_epoch"] = float(record.get("time_s", 0.0))
            if "val_s" in record:
                self.phases["first_validation"] = float(record["val_s"])
            return True
        if index == 1:
            self.phases["second_epoch"] = float(record.get("time_s", 0.0))
            return True
        return False

    def end_epoch(
        self, index: int, record: dict[str, Any], *, graph_capture: float | None, folder: Path | None, report
    ) -> None:
        """After this run's ``index``-th epoch: its figures (and the CUDA-graph capture's time) taken, ``startup.json``
        written to ``folder`` after the first two epochs, and ``report(summary)`` after the first."""
        if graph_capture is not None:
            self.phases["graph_capture"] = float(graph_capture)
        if self.epoch(index, record):
            self.write(folder)
            if index == 0:
                report(self.summary())

    def total(self, *names: str) -> float:
        return sum(self.phases.get(n, 0.0) for n in names)

    def to_dict(self) -> dict[str, Any]:
        """The record ``startup.json`` holds: phases, totals, facts (seconds rounded to 0.1 ms)."""
        before = ("process", *SETUP_PHASES, "first_batch")
        totals = {}
        if "first_batch" in self.phases:
            totals["to_first_step"] = self.total(*before)
        if "first_step" in self.phases:
            totals["through_first_step"] = self.total(*before, "first_step")
        first, second = self.phases.get("first_epoch"), self.phases.get("second_epoch")
        if first is not None and second:
            totals["first_over_second_epoch"] = first / second
        rounded = {k: round(v, 4) for k, v in self.phases.items()}
        return {
            "phases": rounded,
            "totals": {k: round(v, 4) for k, v in totals.items()},
            "facts": dict(self.facts),
        }

    def summary(self) -> str:
        """One line for the run's log: the totals, then every phase of at least 0.05 s, largest first."""
        rec = self.to_dict()
        parts = [
            f"{k} {v:.2f}s" for k, v in sorted(rec["phases"].items(), key=lambda kv: -kv[1]) if v >= 0.05
        ]
        head = "startup:"
        if "to_first_step" in rec["totals"]:
            head += f" {rec['totals']['to_first_step']:.1f}s to the first step"
        if "through_first_step" in rec["totals"]:
            head += f", {rec['totals']['through_first_step']:.1f}s through it"
        cache = self.facts.get("train_label_cache")
        tail = f" (label cache {cache}, image cache {self.facts.get('image_cache', 'none')})" if cache else ""
        return f"{head}: {', '.join(parts)}{tail}"

    def write(self, folder: Path | None) -> Path | None:
        """``folder/startup.json``, written atomically (None when the run has no folder)."""
        if folder is None:
            return None
        return atomic_write(Path(folder) / "startup.json", json.dumps(self.to_dict(), indent=2) + "\n")
