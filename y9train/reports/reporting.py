"""Training output: a rich progress bar on a terminal (plain log lines otherwise), ``results.csv`` (one row per
finished epoch) and ``steps.csv`` (one row per batch: lr, grad norm, loss terms).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from y9core.files.append_file import AppendFile
from y9core.files.atomic_write import atomic_write

STEP_COLUMNS = ("iteration", "epoch", "batch", "step", "lr", "grad_norm", "box", "cls", "dfl")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.8g}"
    return str(v)


def write_results_csv(path: Path, history: list[dict[str, Any]]) -> None:
    """Rewrite ``results.csv`` from the per-epoch records (columns in order of first appearance)."""
    columns: list[str] = []
    for row in history:
        columns.extend(k for k in row if k not in columns)
    header = [columns]
    rows = ([_fmt(row.get(c, "")) for c in columns] for row in history)
    # a temporary opened without following links, renamed over results.csv (a link planted there is replaced, its
    # target never written); an OSError names results.csv
    atomic_write(path, _csv_text([*header, *rows]), durable=False)


def _csv_text(rows: Iterable[Iterable[Any]]) -> str:
    buf = io.StringIO(newline="")
    csv.writer(buf).writerows(rows)
    return buf.getvalue()


def read_csv(path: Path) -> list[dict[str, float]]:
    """Rows of a results/steps CSV as floats (empty cells -> nan)."""
    with Path(path).open(newline="") as f:
        return [
            {k: float(v) if v not in ("", None) else float("nan") for k, v in row.items()}
            for row in csv.DictReader(f)
        ]


class StepLog:
    """``steps.csv``: appended at every log flush; ``truncate(iteration)`` drops rows of an unfinished epoch.

    ``fresh``: start a new file (a new run, also into an existing folder); False keeps the rows (a resume).
    """

    def __init__(self, path: Path, *, fresh: bool = True):
        self.path = path
        if fresh or not path.exists():
            atomic_write(path, _csv_text([STEP_COLUMNS]))

    def truncate(self, iterations: int) -> None:
        """Keep only rows with ``iteration < iterations`` (after a resume)."""
        with self.path.open(newline="") as f:
            reader = csv.reader(f)
            header = next(reader, list(STEP_COLUMNS))
            rows = [r for r in reader if r and r[0].isdigit() and int(r[0]) < iterations]
        atomic_write(self.path, _csv_text([header, *rows]))

    def append(self, rows: Iterable[Iterable[Any]]) -> None:
        """Append rows in one write (``y9core.files.append_file``): a failed write leaves whole rows only and raises an
        OSError naming ``steps.csv``."""
        with AppendFile(self.path) as f:
            f.append(_csv_text([[_fmt(v) for v in r] for r in rows]))


class Reporter:
    """Progress for humans. ``verbose=False`` prints nothing; not a terminal -> plain lines, no progress bar."""

    def __init__(self, verbose: bool = True, console=None):
        self.verbose = verbose
        self._progress = None
        self._task = None
        self.console = console
        if verbose and console is None:
            from rich.console import Console

            self.console = Console(highlight=False)
        self.live = bool(verbose and self.console.is_terminal and not self.console.is_dumb_terminal)

    def info(self, msg: str) -> None:
        if self.verbose:
            self.console.print(msg, markup=False, soft_wrap=True)

    def warn(self, msg: str) -> None:
        if self.verbose:
            self.console.print(f"warning: {msg}", markup=False, style="yellow", soft_wrap=True)

    def epoch_start(self, epoch: int, epochs: int, batches: int) -> None:
        self._label = f"epoch {epoch + 1}/{epochs}"
        self._batches = batches
        if not self.live:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[stats]}"),
            console=self.console,
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(self._label, total=batches, stats="")

    def advance(self) -> None:
        if self._progress is not None:
            self._progress.advance(self._task)

    def stats(self, batch: int, values: dict[str, float]) -> None:
        """Running means at a log flush (after ``batch`` batches of the epoch)."""
        text = "  ".join(f"{k} {v:.4g}" for k, v in values.items())
        if self._progress is not None:
            self._progress.update(self._task, stats=text)
        elif self.verbose:
            self.console.print(f"{self._label} {batch}/{self._batches}  {text}", markup=False, soft_wrap=True)

    def epoch_end(self, record: dict[str, Any]) -> None:
        self.close()
        if not self.verbose:
            return
        keys = ("train/box", "train/cls", "train/dfl", "train/grad_norm", "metrics/map50", "metrics/map50_95")
        text = "  ".join(f"{k.split('/')[1]} {record[k]:.4g}" for k in keys if k in record)
        self.console.print(
            f"{self._label} done in {record.get('time_s', 0):.1f}s  {text}", markup=False, soft_wrap=True
        )

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
