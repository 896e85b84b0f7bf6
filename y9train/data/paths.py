"""Where images, labels and caches live: image listing from folders / list files, the label path rule,
and the default cache directory.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from y9deploy.errors import DataError

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"})


def label_path_for(image: str | Path) -> Path:
    """The label file of an image: the last ``images`` path component replaced by ``labels``, suffix ``.txt``.

    ``/d/images/train/a.jpg`` -> ``/d/labels/train/a.txt``. An image without an ``images`` component
    keeps its folder (``/d/x/a.jpg`` -> ``/d/x/a.txt``).
    """
    p = Path(image)
    parts = list(p.parts)
    for i in range(len(parts) - 2, -1, -1):  # the last directory component called "images"
        if parts[i] == "images":
            parts[i] = "labels"
            break
    return Path(*parts).with_suffix(".txt")


def _read_list_file(list_file: Path) -> list[Path]:
    """Image paths listed one per line; relative entries are relative to the list file's folder."""
    out = []
    base = list_file.parent
    for line in list_file.read_text().splitlines():
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        p = Path(entry)
        out.append(p if p.is_absolute() else (base / p))
    return out


def list_images(sources: Sequence[Path], *, origin: str) -> list[Path]:
    """All image files named by ``sources`` (folders, searched recursively, or ``.txt`` list files).

    Args:
        sources: folders or list files (already resolved to absolute paths).
        origin: what named the sources (e.g. ``"data.yaml /d/data.yaml key 'train'"``), for error messages.
    Returns:
        image paths in a stable order (sorted within a folder, file order within a list file); duplicates kept.
    """
    files: list[Path] = []
    for src in sources:
        if src.is_dir():
            found = sorted(p for p in src.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
            files.extend(found)
        elif src.is_file() and src.suffix.lower() == ".txt":
            listed = _read_list_file(src)
            missing = [p for p in listed if not p.is_file()]
            if missing:
                raise DataError(
                    f"List file {src} names {len(missing)} image(s) that do not exist, the first being "
                    f"{missing[0]}; expected existing image paths, one per line."
                )
            files.extend(p for p in listed if p.suffix.lower() in IMAGE_SUFFIXES)
        elif src.is_file() and src.suffix.lower() in IMAGE_SUFFIXES:
            files.append(src)
        else:
            raise DataError(
                f"{origin} points at {src}, which does not exist; expected an image folder or a .txt list "
                "of image paths."
            )
    if not files:
        shown = ", ".join(str(s) for s in sources)
        raise DataError(
            f"{origin} ({shown}) holds no images; expected files ending in {sorted(IMAGE_SUFFIXES)}."
        )
    return [Path(os.path.abspath(p)) for p in files]


def _writable_dir(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".y9-write-probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
        return True
    except OSError:
        return False


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/y9`` or ``~/.cache/y9``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "y9"


def cache_location(beside: Path, name: str, cache_dir: str | Path | None) -> Path:
    """Where a cache called ``name`` for the data in folder ``beside`` goes.

    ``cache_dir`` (else ``$Y9_CACHE_DIR`` when set): ``<that folder> / <beside name>-<hash of beside> / name``.
    Otherwise beside the data, ``beside.parent / name``, when that folder is writable (like the official
    ``labels/train.cache``), else the user cache directory (``~/.cache/y9``), keyed the same way.
    """
    key = hashlib.sha1(str(beside.resolve()).encode()).hexdigest()[:12]
    root = cache_dir if cache_dir is not None else os.environ.get("Y9_CACHE_DIR") or None
    if root is not None:
        return Path(root) / f"{beside.name}-{key}" / name
    if _writable_dir(beside.parent):
        return beside.parent / name
    return user_cache_dir() / f"{beside.name}-{key}" / name


def file_signature(paths: Iterable[Path]) -> str:
    """A hash of the paths with their sizes and mtimes (missing files count as such)."""
    h = hashlib.sha1()
    for p in paths:
        try:
            st = p.stat()
            h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        except FileNotFoundError:
            h.update(f"{p}\0-\n".encode())
    return h.hexdigest()
