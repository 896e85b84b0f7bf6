"""YOLO label files: parsing with ``file:line`` errors, image verification, and the label cache.

A label file holds one ``class cx cy w h`` line per box, normalised to [0, 1]. An image without a label
file (or with an empty one) is a background image. An image that cannot be decoded (or a JPEG cut short)
is reported by path and skipped: the run continues without it (``LabelSet.skipped`` lists them and a
warning is logged). A label line that is wrong (column count, class >= nc, coordinates outside [0, 1]
beyond ``LABEL_TOLERANCE``) stops the run with a ``DataError`` naming ``file:line``.

The cache (``<labels folder>.y9cache.npz`` beside the labels, or under ``cache_dir`` / ``$Y9_CACHE_DIR``) stores the parsed
labels and image shapes keyed by a hash of every image's and label file's path, size and mtime, so a second
run skips decoding and parsing; any change to a file rebuilds it. It is an ``.npz`` without pickles.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from y9deploy.errors import DataError

from .paths import cache_location, file_signature, label_path_for

log = logging.getLogger("y9train.data")

LABEL_TOLERANCE = 0.01  # coordinates up to this far outside [0, 1] are clipped, beyond it they are an error
CACHE_VERSION = "y9-labels-1"


@dataclass
class LabelSet:
    """The labels of a list of images.

    Attributes:
        files: usable images, input order (skipped ones removed, duplicates kept).
        labels: per image, ndarray[n, 5] float32 rows ``(class, cx, cy, w, h)`` normalised to [0, 1].
        shapes: ndarray[N, 2] int32, ``(h, w)`` of each source image as decoded by OpenCV.
        skipped: ``(image path, reason)`` of images that could not be used.
        cache_path: the label cache file (None when caching was off or could not be written);
        from_cache: True when this set was read from the cache without parsing.
    """

    files: list[Path]
    labels: list[np.ndarray]
    shapes: np.ndarray
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    cache_path: Path | None = None
    from_cache: bool = False

    @property
    def backgrounds(self) -> int:
        """Images with no box (no label file or an empty one)."""
        return sum(1 for lb in self.labels if len(lb) == 0)

    @property
    def boxes(self) -> int:
        return sum(len(lb) for lb in self.labels)


def parse_label_file(path: Path, nc: int, *, tol: float = LABEL_TOLERANCE) -> np.ndarray:
    """Parse one YOLO label file.

    Returns:
        ndarray[n, 5] float32 ``(class, cx, cy, w, h)``; boxes reaching up to ``tol`` outside the image are clipped.
    Raises:
        DataError: ``"Label file F:L has ...; expected ..."`` for the first bad line.
    """
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise DataError(f"Label file {path} is not a text file; expected lines 'class cx cy w h'.") from None
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        where = f"Label file {path}:{lineno}"
        if len(parts) != 5:
            raise DataError(
                f"{where} has {len(parts)} columns ({line.strip()!r}); expected 5: class cx cy w h."
            )
        try:
            values = [float(v) for v in parts]
        except ValueError:
            raise DataError(f"{where} has a non-number in {line.strip()!r}; expected 5 numbers.") from None
        cls = values[0]
        if not np.isfinite(values).all():
            raise DataError(f"{where} has a non-finite value in {line.strip()!r}; expected finite numbers.")
        if cls != int(cls) or not 0 <= cls < nc:
            raise DataError(f"{where} has class {parts[0]}; expected an integer in 0..{nc - 1} (nc={nc}).")
        cx, cy, w, h = values[1:]
        x1, y1, x2, y2 = cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2
        if min(cx, cy, w, h, x1, y1) < -tol or max(cx, cy, w, h, x2, y2) > 1 + tol:
            raise DataError(
                f"{where} has box {cx:g} {cy:g} {w:g} {h:g} reaching outside [0, 1] by more than {tol:g}; "
                "expected normalised cx cy w h."
            )
        x1, y1, x2, y2 = max(x1, 0.0), max(y1, 0.0), min(x2, 1.0), min(y2, 1.0)
        rows.append((cls, (x1 + x2) / 2, (y1 + y2) / 2, max(x2 - x1, 0.0), max(y2 - y1, 0.0)))
    return np.array(rows, dtype=np.float32).reshape(-1, 5)


def verify_image(path: Path) -> tuple[tuple[int, int] | None, str]:
    """Decode an image once to prove it is usable.

    Returns:
        ``((h, w), "")`` when usable, ``(None, reason)`` otherwise (unreadable, not an image, JPEG cut short).
    """
    try:
        with open(path, "rb") as f:
            head = f.read(3)
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 4096))
            tail = f.read()
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    if head[:2] == b"\xff\xd8" and b"\xff\xd9" not in tail:
        return None, "is a JPEG cut short (no end-of-image marker)"
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if img is None:
        return None, "cannot be decoded as an image"
    return (int(img.shape[0]), int(img.shape[1])), ""


def _scan_one(image: Path, nc: int) -> tuple[tuple[int, int] | None, str, np.ndarray]:
    shape, reason = verify_image(image)
    label_file = label_path_for(image)
    labels = parse_label_file(label_file, nc) if label_file.is_file() else np.zeros((0, 5), np.float32)
    return shape, reason, labels


def _signature(unique: list[Path], nc: int) -> str:
    paths = [p for img in unique for p in (img, label_path_for(img))]
    return f"{CACHE_VERSION}:{nc}:{LABEL_TOLERANCE}:{file_signature(paths)}"


def _read_cache(path: Path, signature: str):
    try:
        with np.load(path, allow_pickle=False) as z:
            if str(z["signature"]) != signature:
                return None
            counts = z["counts"]
            splits = np.split(z["labels"], np.cumsum(counts)[:-1]) if len(counts) else []
            return z["shapes"], [str(r) for r in z["reasons"]], splits
    except (OSError, KeyError, ValueError):
        return None


def _write_cache(path: Path, signature: str, shapes, reasons, labels) -> bool:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}.npz")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(
            tmp,
            signature=np.array(signature),
            shapes=np.asarray(shapes, np.int32).reshape(-1, 2),
            reasons=np.array(reasons, dtype=str),
            counts=np.array([len(x) for x in labels], np.int64),
            labels=np.concatenate(labels).astype(np.float32) if labels else np.zeros((0, 5), np.float32),
        )
        os.replace(tmp, path)
        return True
    except OSError as exc:
        log.warning("could not write the label cache %s (%s); continuing without it", path, exc)
        tmp.unlink(missing_ok=True)
        return False


def load_labels(
    images: list[Path], nc: int, *, cache: bool = True, cache_dir: str | Path | None = None, workers: int = 8
) -> LabelSet:
    """Labels and shapes of ``images``, through the label cache.

    Args:
        images: image paths (duplicates allowed: each unique file is scanned once).
        nc: number of classes (class ids must be < nc).
        cache: read/write the cache; cache_dir: where (default beside the labels folder, see ``paths``).
        workers: threads decoding images on a cache miss.
    """
    if not images:
        raise DataError("No images were given to load labels for; expected at least one image path.")
    unique = list(dict.fromkeys(images))
    signature = _signature(unique, nc)
    label_dir = label_path_for(unique[0]).parent
    cache_path = cache_location(label_dir, f"{label_dir.name}.y9cache.npz", cache_dir) if cache else None
    cached = _read_cache(cache_path, signature) if cache_path is not None and cache_path.is_file() else None
    from_cache = cached is not None
    if cached is not None:
        shapes, reasons, labels = cached
    else:
        n_workers = max(1, min(workers, os.cpu_count() or 1, len(unique)))
        with ThreadPoolExecutor(n_workers) as pool:
            results = list(pool.map(lambda p: _scan_one(p, nc), unique))
        shapes = [r[0] or (-1, -1) for r in results]
        reasons = [r[1] for r in results]
        labels = [r[2] for r in results]
        if cache_path is not None and not _write_cache(cache_path, signature, shapes, reasons, labels):
            cache_path = None
    index = {p: i for i, p in enumerate(unique)}
    skipped = [(p, reasons[i]) for p, i in index.items() if reasons[i]]
    for p, why in skipped:
        log.warning("skipping image %s: it %s", p, why)
    keep = [p for p in images if not reasons[index[p]]]
    if not keep:
        raise DataError(
            f"None of the {len(unique)} images could be used (the first, {unique[0]}, {reasons[0]}); "
            "expected readable images."
        )
    return LabelSet(
        files=keep,
        labels=[labels[index[p]] for p in keep],
        shapes=np.array([shapes[index[p]] for p in keep], np.int32).reshape(-1, 2),
        skipped=skipped,
        cache_path=cache_path,
        from_cache=from_cache,
    )
