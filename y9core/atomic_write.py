"""Write a file so that a failure at any point leaves the old file or the new one, never a part of one.

The bytes go to a hidden temporary file beside the target (``.<name>.<pid>.tmp``), are flushed to disk, and
the temporary file is renamed over the target. On any failure (a read-only folder, a full disk, a kill of the
write, a target that is a folder) the temporary file is removed and the ``OSError`` re-raised naming the
target, so that the CLI can say in one sentence which file could not be written and why.
"""

from __future__ import annotations

import os
from pathlib import Path

CHUNK = 1 << 22  # bytes per os.write call


def temporary_path(path: Path) -> Path:
    """The temporary file :func:`atomic_write` writes before renaming it to ``path``."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _renamed(exc: OSError, path: Path) -> OSError:
    """``exc`` as the same OSError subclass, naming ``path`` (the file the user asked for, not the temporary)."""
    if exc.errno is None:
        return exc
    return type(exc)(exc.errno, exc.strerror, str(path))


def atomic_write(
    path: str | os.PathLike, data: bytes | bytearray | memoryview | str, *, durable: bool = True
) -> Path:
    """Write ``data`` (text is UTF-8) to ``path`` atomically; creates missing parent folders.

    ``durable=False`` skips the fsync (many small outputs, e.g. annotated copies: a crash may then lose the newest
    file, but never leaves a part of one under its name).

    Raises:
        OSError (its subclass kept) naming ``path``; nothing is left behind but the old file, if any.
    """
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    view = memoryview(data).cast("B")
    tmp = temporary_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)  # its error names the folder
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as exc:
        raise _renamed(exc, path) from exc
    try:
        try:
            offset = 0
            while offset < len(view):
                offset += os.write(fd, view[offset : offset + CHUNK])
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _renamed(exc, path) from exc
        raise
    return path


def ensure_writable(path: str | os.PathLike) -> Path:
    """Fail now, before long work, when ``path`` cannot be written (creates missing parent folders).

    Raises:
        IsADirectoryError when ``path`` is a folder; the OSError of creating its temporary file otherwise.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(21, "Is a directory", str(path))
    tmp = temporary_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)  # its error names the folder
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
        tmp.unlink()
    except OSError as exc:
        raise _renamed(exc, path) from exc
    return path
