"""Write a file so that a failure at any point leaves the old file or the new one, never a part of one.

The bytes go to a hidden temporary file beside the target (``.<name>.<pid>.tmp``), are flushed to disk, and
the temporary file is renamed over the target. On any failure (a read-only folder, a full disk, a kill of the
write, a target that is a folder) the temporary file is removed and the ``OSError`` re-raised naming the
target, so that the CLI can say in one sentence which file could not be written and why.

A target claimed new (``y9core.files.output_file.claim_output_file`` without ``exist_ok``) is never replaced: the
temporary file is hard-linked to the target's name, which fails when a file of that name appeared meanwhile (another
program wrote it), instead of ``os.replace``; then an ``OutputError`` naming the target is raised and the file that
appeared is kept.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from y9core.errors import OutputError

CHUNK = 1 << 22  # bytes per os.write call
_NEW_ONLY: set[str] = set()  # absolute targets this process claimed new: never replaced (module docstring)


def keep_new(path: str | os.PathLike, on: bool = True) -> None:
    """Mark ``path`` (``on``) as a target :func:`atomic_write` must create, never replace; ``on=False`` unmarks it."""
    key = os.path.abspath(path)
    if on:
        _NEW_ONLY.add(key)
    else:
        _NEW_ONLY.discard(key)


def _appeared(path: Path) -> OutputError:
    return OutputError(
        f"{path} appeared while this process was writing it (another program wrote it); it was kept and nothing was "
        "replaced: expected a new name; choose another, or add --exist-ok to replace it."
    )


def publish(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` to ``path``; a target marked new is linked instead, refused if it exists (OutputError)."""
    if os.path.abspath(path) not in _NEW_ONLY:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise _appeared(path) from None
    except OSError as exc:  # a file system without hard links: check, then rename (a narrow race is left)
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        if path.exists():
            raise _appeared(path) from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def temporary_path(path: Path) -> Path:
    """The temporary file :func:`atomic_write` writes before renaming it to ``path``."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _renamed(exc: OSError, path: Path) -> OSError:
    """``exc`` as the same OSError subclass, naming ``path`` (the file the user asked for, not the temporary)."""
    if exc.errno is None or exc.filename == str(path):
        return exc
    return type(exc)(exc.errno, exc.strerror, str(path))


def atomic_write(
    path: str | os.PathLike, data: bytes | bytearray | memoryview | str, *, durable: bool = True
) -> Path:
    """Write ``data`` (text is UTF-8) to ``path`` atomically; creates missing parent folders.

    ``durable=False`` skips the fsync (many small outputs, e.g. annotated copies: a crash may then lose the newest
    file, but never leaves a part of one under its name).

    Raises:
        OSError (its subclass kept) naming ``path``; nothing is left behind but the old file, if any. OutputError:
        ``path`` was claimed new and a file of that name appeared meanwhile (module docstring).
    """
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    view = memoryview(data).cast("B")
    tmp = temporary_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)  # its error names the folder
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
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
        publish(tmp, path)
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
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644))
        tmp.unlink()
    except OSError as exc:
        raise _renamed(exc, path) from exc
    return path
