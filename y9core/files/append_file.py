"""Append whole lines to a file, so that a full disk or a file-size limit never leaves half a line behind.

    with AppendFile("out/predictions.jsonl", fresh=True) as f:
        f.append(json.dumps(record) + "\\n")      # one write call; on failure the file is cut back

Each ``append`` encodes its text once and hands it to the operating system in one ``os.write`` (a write the system
cuts short is continued); when a write fails (ENOSPC, EFBIG under ``ulimit -f``, EIO ...), the file is truncated
back to its length before the call, so it holds only whole appends, and the ``OSError`` is raised again naming the
file (its errno and subclass kept), for the one-sentence report of the CLI. ``durable=True`` also fsyncs after
every append (an audit log that must survive a power cut).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from y9core.files.own_file import open_own


def named(exc: OSError, path: str | os.PathLike) -> OSError:
    """``exc`` as the same OSError subclass naming ``path`` (a failed ``write`` names no file by itself)."""
    if exc.errno is None or exc.filename is not None:
        return exc
    return type(exc)(exc.errno, exc.strerror or os.strerror(exc.errno), str(path))


class AppendFile:
    """A file opened for appending whole texts (module docstring).

    Args:
        path: the file (its folder must exist).
        fresh: start it empty (a new run's results); False appends to what is there (an audit log).
        durable: fsync after every append.
    Raises:
        OSError naming ``path`` when it cannot be opened; OutputError when it is a link or not a plain file.
    """

    def __init__(self, path: str | os.PathLike, *, fresh: bool = False, durable: bool = False) -> None:
        self.path = Path(path)
        self.durable = durable
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (os.O_TRUNC if fresh else 0)
        try:  # a symbolic link, hard link or FIFO planted under the log's name is refused (y9core.files.own_file)
            self._fd: int | None = open_own(self.path, flags, what="log")
        except OSError as exc:
            raise named(exc, self.path) from exc

    @property
    def closed(self) -> bool:
        return self._fd is None

    def append(self, text: str | bytes) -> None:
        """Write ``text`` whole at the end of the file, or leave the file as it was and raise (module docstring)."""
        if self._fd is None:
            raise ValueError(f"{self.path} is closed; expected an open AppendFile.")
        data = memoryview(text.encode("utf-8") if isinstance(text, str) else text)
        start = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            done = 0
            while done < len(data):
                done += os.write(self._fd, data[done:])
            if self.durable:
                os.fsync(self._fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, start)
            raise named(exc, self.path) from exc

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __enter__(self) -> AppendFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
