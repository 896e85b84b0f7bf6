"""SIGINT (Ctrl-C) and SIGTERM in every ``y9`` command: one line saying what was kept and how to go on.

``y9cli.app.main`` installs ``install()`` before it runs a command: both signals raise ``Interrupted`` (a
``KeyboardInterrupt``, so the library's clean-up paths run: a training run waits for its checkpoint write, a
predict run closes its files) in the main thread. ``main`` itself runs the command (not typer's runner, which turns
a KeyboardInterrupt into a silent exit 130 before y9 could say anything) and prints ``interrupted_line``.

A command says what it would keep if stopped now with ``on_interrupt(kept, go_on)`` (both callables, asked only
when a signal arrives): e.g. training keeps ``weights/last.pt`` of the last finished epoch and goes on with
``y9 train --resume RUN``. Without it the line says that nothing was written (y9 writes files whole or not at all)
and how to repeat the command.

After the command has finished, ``finished(code)`` makes a late signal (Ctrl-C while the interpreter shuts down:
torch's atexit handlers) end the process quietly with the command's exit status instead of a traceback.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived while a command ran (``signum`` says which)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class _Plan:
    argv: tuple[str, ...] = ()
    kept: Callable[[], str] | None = None
    go_on: Callable[[], str] | None = None


_plan = _Plan()


def exit_code(signum: int) -> int:
    """The shell's convention: 128 + the signal number (130 for Ctrl-C, 143 for SIGTERM)."""
    return 128 + int(signum)


def _raise(signum: int, frame: object) -> None:
    raise Interrupted(signum)


def install(argv: list[str]) -> None:
    """For the command ``y9 ARGV``: SIGINT and SIGTERM raise ``Interrupted`` in the main thread (no-op elsewhere);
    an earlier command's plan is forgotten."""
    global _plan
    _plan = _Plan(argv=tuple(str(a) for a in argv))
    if not _main_thread():
        return
    for s in SIGNALS:
        signal.signal(s, _raise)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def on_interrupt(kept: Callable[[], str], go_on: Callable[[], str] | None = None) -> None:
    """What the running command keeps if a signal stops it now (``kept()``: e.g. "kept runs/train/exp/weights/
    last.pt (epoch 3 of 10)") and the command that goes on (``go_on()``: e.g. "to resume: y9 train --resume ...")."""
    _plan.kept, _plan.go_on = kept, go_on


def signal_name(signum: int) -> str:
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


def interrupted_line(signum: int) -> str:
    """The one line printed when a signal stopped the command."""
    kept = nothing = "nothing was written (y9 writes each output file whole or not at all)"
    go_on = f"to run it again: {command_line()}"
    try:
        if _plan.kept is not None:
            kept = _plan.kept() or nothing
        if _plan.go_on is not None:
            go_on = _plan.go_on() or go_on
    except Exception as exc:  # a report that fails must not hide the interruption
        kept = f"what was kept could not be listed ({type(exc).__name__}: {exc})"
    return f"interrupted ({signal_name(signum)}): {kept}; {go_on}."


def command_line_args() -> tuple[str, ...]:
    """The running command's arguments (after ``y9``)."""
    return _plan.argv


def command_line(argv: list[str] | None = None) -> str:
    """``y9 ARGV`` as a shell would need it typed (default: the running command's)."""
    return shlex.join(["y9", *(_plan.argv if argv is None else argv)])


def finished(code: int) -> None:
    """The command is done: a signal from now on ends the process at once with ``code`` (no traceback from the
    interpreter's shutdown, nothing left to lose)."""
    if not _main_thread():
        return

    def leave(signum: int, frame: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)

    for s in SIGNALS:
        signal.signal(s, leave)


@contextlib.contextmanager
def graceful_stop(stop: threading.Event, say, stopped_by: list[int]):
    """For commands that work frame by frame (predict, inspect on a video): a first SIGINT (Ctrl-C) or SIGTERM
    sets ``stop`` (the command finishes the current frame, writes its results and summary, and stops;
    ``stopped_by`` records the signal, ``say`` tells the user); a second one stops at once (``Interrupted``: the
    files are closed all the same)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        if stop.is_set():
            raise Interrupted(signum)
        stopped_by.append(signum)
        stop.set()
        say(f"stopping after the current frame ({signal_name(signum)} again to stop at once); the results so far "
            "are on disk")  # fmt: skip

    old = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
