"""Where images, labels and caches live: image listing from folders / list files, the label path rule,
and the default cache directory.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from y9core.errors import DataError
from y9core.shorten import shorten

log = logging.getLogger("y9train.data")

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"})
REPORTED_SUFFIXES = frozenset({".gif"})
PATH_MAX = 4096  # a longer list-file entry cannot name a file (it counts as missing)  # images of a kind not trained on: reported when found in a folder


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


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def read_list_file(list_file: Path, *, urls: bool = False) -> list[tuple[int, Path | str]]:
    """``(line number, image path)`` listed one per line; relative entries are relative to the list file's folder
    (blank lines and ``#`` comments skipped; a UTF-8 byte-order mark is dropped). ``urls``: a line such as
    ``http://host/a.jpg`` or ``rtsp://...`` stays a text (a ``Path`` would fold its ``//``). The one reader of list
    files: data.yaml splits and ``y9 predict list.txt``."""
    out: list[tuple[int, Path | str]] = []
    base = list_file.parent
    try:
        text = list_file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(
            f"List file {list_file} cannot be read ({exc}); expected a text file of image paths."
        ) from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        if urls and _URL.match(entry):
            out.append((lineno, entry))
            continue
        p = Path(entry)
        out.append((lineno, p if p.is_absolute() else (base / p)))
    return out


def _not_an_image(path: Path) -> str:
    """Why a listed existing path is not used as an image ("" when it is a supported image file)."""
    if path.is_dir():
        return "is a folder, not an image file"
    suffix = path.suffix.lower()
    if suffix in IMAGE_SUFFIXES:
        return ""
    kind = "a GIF" if suffix == ".gif" else f"a {suffix} file" if suffix else "a file without a suffix"
    return f"is {kind}, not a supported image ({', '.join(sorted(IMAGE_SUFFIXES))})"


def list_images(
    sources: Sequence[Path], *, origin: str, skipped: list[tuple[Path, str]] | None = None
) -> list[Path]:
    """All image files named by ``sources`` (folders, searched recursively, or ``.txt`` list files).

    Args:
        sources: folders or list files (already resolved to absolute paths).
        origin: what named the sources (e.g. ``"data.yaml /d/data.yaml key 'train'"``), for error messages.
        skipped: receives ``(path, reason)`` of entries left out: list-file entries that are not supported
            images (GIFs, other files, folders) and GIFs found in folders; each is also logged as a warning.
    Returns:
        image paths in a stable order (sorted within a folder, file order within a list file); duplicates kept.
    """
    files: list[Path] = []
    left_out: list[tuple[Path, str]] = []
    for src in sources:
        if src.is_dir():
            found = sorted(
                p
                for p in src.rglob("*")
                if p.suffix.lower() in IMAGE_SUFFIXES | REPORTED_SUFFIXES and p.is_file()
            )
            for p in found:
                why = _not_an_image(p)
                if why:
                    left_out.append((p, f"{why} (found in the folder {src})"))
                else:
                    files.append(p)
        elif src.is_file() and src.suffix.lower() == ".txt":
            listed = read_list_file(src)
            missing = [(n, p) for n, p in listed if len(str(p)) >= PATH_MAX or not p.exists()]
            if missing:
                n, first = missing[0]
                raise DataError(
                    f"List file {src} names {len(missing)} image(s) that do not exist, the first being "
                    f"{shorten(str(first))} (line {n}); expected existing image paths, one per line."
                )
            for n, p in listed:
                why = _not_an_image(p)
                if why:
                    left_out.append((p, f"{why} (listed in {src} line {n})"))
                else:
                    files.append(p)
        elif src.is_file() and src.suffix.lower() in IMAGE_SUFFIXES:
            files.append(src)
        else:
            raise DataError(
                f"{origin} points at {src}, which does not exist; expected an image folder or a .txt list "
                "of image paths."
            )
    for p, why in left_out:
        log.warning("skipping %s: it %s", p, why)
    if skipped is not None:
        skipped.extend((Path(os.path.abspath(p)), why) for p, why in left_out)
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
