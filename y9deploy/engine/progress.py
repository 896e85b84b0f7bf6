"""Progress of a TensorRT build, shown with rich (the CLI uses it; the library only forwards events).

TensorRT reports nested phases ("Building engine" > "Timing tactics" > ...) through ``IProgressMonitor``
(where the installed TensorRT has it); :meth:`y9deploy.engine.flavour.Flavour.make_progress_monitor` wraps
any object with the three methods below. TensorRT may call them from several threads: everything here
takes a lock.
"""

from __future__ import annotations

import threading
from typing import Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)


class BuildProgress(Protocol):
    """What the builder calls; ``step_complete`` returns False to cancel the build."""

    def phase_start(self, name: str, parent: str | None, num_steps: int) -> None: ...

    def step_complete(self, name: str, step: int) -> bool: ...

    def phase_finish(self, name: str) -> None: ...


class RecordingProgress:
    """Keeps the events (for tests and logs): ``events`` is a list of ``(kind, name, value)``."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, object]] = []
        self._lock = threading.Lock()

    def phase_start(self, name: str, parent: str | None, num_steps: int) -> None:
        with self._lock:
            self.events.append(("start", name, (parent, num_steps)))

    def step_complete(self, name: str, step: int) -> bool:
        with self._lock:
            self.events.append(("step", name, step))
        return True

    def phase_finish(self, name: str) -> None:
        with self._lock:
            self.events.append(("finish", name, None))


class RichBuildProgress:
    """A live rich display of the nested build phases; use as a context manager around the build.

    ``cancel()`` (e.g. from a signal handler) makes the next ``step_complete`` ask TensorRT to stop.
    """

    def __init__(self, console: Console | None = None, *, transient: bool = True) -> None:
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console or Console(stderr=True),
            transient=transient,
        )
        self._tasks: dict[str, object] = {}
        self._depth: dict[str, int] = {}
        self._lock = threading.Lock()
        self._cancelled = False

    def __enter__(self) -> RichBuildProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def cancel(self) -> None:
        self._cancelled = True

    def phase_start(self, name: str, parent: str | None, num_steps: int) -> None:
        with self._lock:
            depth = self._depth.get(parent, -1) + 1 if parent else 0
            self._depth[name] = depth
            self._tasks[name] = self._progress.add_task("  " * depth + name, total=max(int(num_steps), 1))

    def step_complete(self, name: str, step: int) -> bool:
        with self._lock:
            task = self._tasks.get(name)
            if task is not None:
                self._progress.update(task, completed=int(step) + 1)
        return not self._cancelled

    def phase_finish(self, name: str) -> None:
        with self._lock:
            task = self._tasks.pop(name, None)
            self._depth.pop(name, None)
            if task is not None:
                self._progress.remove_task(task)
