"""Open a file y9 keeps for its own bookkeeping (a lock, a run folder's log) without following anything planted there.

``open_own(path, flags, what="lock file")`` is ``os.open`` with ``O_NOFOLLOW`` (a symbolic link at ``path`` is
refused, never followed), then ``fstat`` of what was opened: anything but a plain file with a single name (a FIFO,
a device, a hard link to a file elsewhere) is refused before one byte is read, written or truncated: ``O_TRUNC``
is applied only after that check. The refusal is an ``OutputError`` in one sentence naming the path and what was
expected; it never quotes the file's content.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from y9core.errors import OutputError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted under our name must not block the open


def _refusal(path: Path, found: str, what: str) -> OutputError:
    return OutputError(
        f"{path} is {found}; expected y9's own {what}, a plain file: y9 neither follows nor writes it (remove it if "
        "it is not yours, or write somewhere else)."
    )


def open_own(path: str | os.PathLike, flags: int, *, what: str = "lock file", mode: int = 0o644) -> int:
    """A file descriptor of ``path`` opened with ``flags`` (module docstring).

    Raises:
        OutputError: ``path`` is a symbolic link, not a plain file, or a file with more than one name.
        OSError: any other failure of ``os.open`` (a missing folder, no permission, a full disk).
    """
    path = Path(path)
    truncate = bool(flags & os.O_TRUNC)
    try:
        fd = os.open(path, (flags & ~os.O_TRUNC) | _NOFOLLOW | _NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) or (exc.errno == errno.ENXIO and path.is_fifo()):
            kind = "a symbolic link" if path.is_symlink() else "not a plain file"
            raise _refusal(path, kind, what) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refusal(path, "not a plain file", what)
        if info.st_nlink > 1:
            raise _refusal(path, f"a file with {info.st_nlink} names (a hard link)", what)
        if _NONBLOCK:
            os.set_blocking(fd, True)
        if truncate:
            os.ftruncate(fd, 0)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    return fd


def foreign_lock(path: str | os.PathLike) -> OutputError:
    """The refusal of a lock file that holds something y9 did not write (its content is not quoted)."""
    return OutputError(
        f"{path} holds something that is not a y9 lock (pid, host, start, command); expected y9's own lock file: y9 "
        "neither shows nor replaces it (remove it if it is not yours, or write somewhere else)."
    )
