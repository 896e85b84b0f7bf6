"""The guard that keeps a Detector to one thread at a time.

A Detector reuses its input buffers, CUDA graphs and output buffers from call to call, so two threads inside
one Detector would overwrite each other's data and return wrong detections without any error. The guard
makes that impossible: while one thread is inside (``predict``, ``warmup``, a ``predict_stream`` not yet
exhausted or closed, ``close``), another thread that enters gets :class:`~y9core.errors.DetectorBusyError`
at once instead of waiting (a silent queue would hide a design error and serialise work the caller meant to
run in parallel). The thread that is inside may re-enter (e.g. call ``predict`` between two batches of its own
``predict_stream``), as before.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from y9core.errors import DetectorBusyError


class BusyGuard:
    """Admits one thread at a time; re-entrant for that thread; others get DetectorBusyError."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._depth = 0
        self._entry = ""

    @contextmanager
    def enter(self, call: str) -> Iterator[None]:
        me = threading.get_ident()
        with self._lock:
            if self._owner is not None and self._owner != me:
                raise DetectorBusyError(
                    f"{call}() was called on the Detector for {self.what} while another thread is running its "
                    f"{self._entry}(); a Detector serves one thread at a time: create one Detector per thread, "
                    "or guard the shared one with a threading.Lock."
                )
            if self._owner is None:
                self._owner, self._entry = me, call
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None
