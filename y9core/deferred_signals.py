"""``deferred_signals()``: a few lines that must run together (an epoch's history entry and the checkpoint write that
records it) are not split by SIGINT / SIGTERM; a signal that arrives meanwhile is delivered right after the block.

The signals are blocked for the calling thread with ``pthread_sigmask``; the kernel keeps one that arrives pending
and Python runs its handler as soon as the block ends. Outside the main thread (where Python never runs handlers)
and on platforms without ``pthread_sigmask`` it does nothing.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

DEFERRED = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def deferred_signals() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, DEFERRED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
