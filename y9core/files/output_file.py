"""One writer per output file, decided here for every command that writes a named file (export, reparam,
build-engine, benchmark --json ...).

``with claim_output_file(path, inputs=..., exist_ok=..., what=...):`` around the whole command:

1. ``path`` is checked as ``y9core.files.run_dir.check_output_file`` does (never over an input, never a folder);
2. it is locked: ``RunLock`` on ``.<name>.y9.lock`` beside it (``fcntl.flock``, released by the kernel however the
   holder ends; a lock file left by a dead holder is taken over). A second writer of the same file, started while
   the first one works, is refused at once with one sentence naming the file and the holder;
3. under the lock, a file that exists is refused unless ``exist_ok`` (a writer that finished just before this one
   started left its file: it is not replaced);
4. without ``exist_ok`` the target is claimed new (``y9core.files.atomic_write.keep_new``): the final rename of
   ``atomic_write`` refuses when a file of that name appeared meanwhile (a program that does not take the lock),
   and keeps that file.

So of two writers of one file started at once, exactly one writes and the other exits with an ``OutputError``;
nothing written by the first is lost. The lock file is removed when the claim ends.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from y9core.files.atomic_write import keep_new
from y9core.files.run_dir import RunLock, check_output_file


def lock_path(path: str | os.PathLike) -> Path:
    """The lock file beside ``path`` that its writer holds."""
    path = Path(path)
    return path.with_name(f".{path.name}.y9.lock")


@contextmanager
def claim_output_file(
    path: str | os.PathLike,
    *,
    inputs: Iterable[str | os.PathLike] = (),
    exist_ok: bool = False,
    what: str = "output",
    warn: Callable[[str], None] | None = None,
) -> Iterator[Path]:
    """Hold ``path`` for this process while the body writes it (module docstring). Yields ``path``.

    Raises:
        OutputError: ``path`` is an input or a folder, another y9 process is writing it, or it exists (without
        ``exist_ok``); one sentence naming it.
    """
    inputs = list(inputs)
    out = check_output_file(path, inputs=inputs, exist_ok=True, what=what)
    out.parent.mkdir(parents=True, exist_ok=True)  # its error names the folder
    lock = RunLock(out.parent, lock_file=lock_path(out), subject=f"{what} {out}", warn=warn).acquire()
    try:
        check_output_file(out, inputs=inputs, exist_ok=exist_ok, what=what)
        keep_new(out, not exist_ok)
        try:
            yield out
        finally:
            keep_new(out, False)
    finally:
        lock.release()
