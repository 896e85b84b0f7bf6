"""``CheckpointWriter``: an epoch's checkpoint files written in one background thread while the next epoch trains.

The trainer takes a cheap snapshot at an epoch's end (``y9train.loop.state.snapshot_run``: every tensor copied to
the CPU) and hands the slow part (digest, ``torch.save``, fsync, rename: ``write_run``) to ``submit``. At most one
job is in flight: ``submit`` first waits for the previous one, so the files are written in the order they were
submitted (``last.pt`` before ``best.pt`` before ``results.csv``, epoch after epoch), exactly as a synchronous run
writes them. A job that failed re-raises its exception, unchanged, from the next ``submit``, ``wait``, ``check`` or
``close``: a full disk ends the run with the same error, naming the same file, as a synchronous write; the
temporary file is removed by the write itself (``y9train.checkpoints.load.atomic_torch_save``).

With ``background=False`` (``TrainConfig.async_save=False``) ``submit`` runs the job in the calling thread.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class CheckpointWriter:
    """One worker thread, one job at a time; errors come back to the thread that submits or waits."""

    def __init__(self, background: bool = True) -> None:
        self.background = background
        self._executor: ThreadPoolExecutor | None = None
        self._pending: Future | None = None

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` after the previous job has finished (in the background, or now when not
        ``background``); a failure of the previous job is raised here instead, and ``fn`` does not run."""
        self.wait()
        if not self.background:
            fn(*args)
            return
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="y9-checkpoint")
        self._pending = self._executor.submit(fn, *args)

    @property
    def busy(self) -> bool:
        """Whether a job is still running."""
        return self._pending is not None and not self._pending.done()

    def check(self) -> None:
        """Without waiting: raise the exception of a job that has already failed (nothing while it runs)."""
        if self._pending is not None and self._pending.done():
            self.wait()

    def wait(self) -> None:
        """Block until the job in flight (if any) is done; re-raise its exception (once)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def close_reporting(self, report: Callable[[str], None]) -> None:
        """``close`` while another error is on its way out of the trainer: a failed job's exception is reported as
        one line instead of raised, so that it does not replace that error."""
        try:
            self.close()
        except Exception as exc:
            report(f"the background checkpoint write failed too: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        """``wait``, then stop the thread (a later ``submit`` starts a new one)."""
        try:
            self.wait()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
                self._executor = None
