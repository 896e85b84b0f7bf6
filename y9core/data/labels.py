"""YOLO label files: parsing with ``file:line`` reports, image verification, the label layout, the label cache.

A label file holds one ``class cx cy w h`` line per box, normalised to [0, 1]. An image without a label
file (or with an empty one) is a background image. Unusable images are skipped and reported by path (see
``image_check``). The policy for label lines (documented in docs/training.md, "Label files"):

- error (``DataError`` naming ``file:line``, the run stops; quoted text cut to a readable length): a line longer
  than ``MAX_LABEL_LINE`` characters, a wrong column count, a non-number or non-finite
  value, a class that is not an integer in ``0..nc-1``, a negative width or height, a box reaching outside
  [0, 1] by more than ``LABEL_TOLERANCE``; also a folder (or an unreadable file) where a label file should be;
- fixed: a box reaching outside [0, 1] by up to ``LABEL_TOLERANCE`` is clipped to the image;
- dropped: a box of zero width or height (after clipping), and a line repeating an earlier line of the same file
  (same class and box).

Each fix and drop is a ``LabelIssue`` (``file:line``, what, what was done), counted in ``LabelSet.issues`` and
logged (a summary with the first few locations); ``y9 data check`` lists them.

Label layout: labels are looked for by ``paths.label_path_for``. When none of the images of a set has a label
file, the set is refused (``require_labels``, the training split) or a warning names the path looked for.

The cache (``<labels folder>.y9cache.npz`` beside the labels, or under ``cache_dir`` / ``$Y9_CACHE_DIR``) stores the
parsed labels, image shapes, skip reasons and label issues keyed by a hash of every image's and label file's path,
size and mtime, so a second run skips decoding and parsing; any change to a file rebuilds it. It is an ``.npz``
without pickles (``npz_cache``): a damaged one (cut short, a flipped bit caught by the zip CRC-32) is rebuilt with a
warning naming it, never an error.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from y9core.errors import DataError
from y9core.shorten import quoted, shorten

from .image_check import verify_images
from .npz_cache import read_npz_cache, write_npz_cache
from .paths import cache_location, file_signature, label_path_for

log = logging.getLogger("y9train.data")

LABEL_TOLERANCE = 0.01  # coordinates up to this far outside [0, 1] are clipped, beyond it they are an error
CLIP_REPORTED = 1e-6  # clips smaller than this (float rounding of converters) are not reported
CACHE_VERSION = "y9-labels-3"
ISSUE_KINDS = ("clipped", "zero-size", "duplicate")
SHOWN_ISSUES = 5  # locations in the logged summary
MAX_LABEL_LINE = 1_000  # characters of one label line (five numbers need far fewer)


@dataclass(frozen=True)
class LabelIssue:
    """A label line that was fixed or dropped: ``kind`` one of ``ISSUE_KINDS``; ``detail`` says what was done."""

    path: Path
    line: int
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.detail}"


@dataclass
class LabelSet:
    """The labels of a list of images.

    Attributes:
        files: usable images, input order (skipped ones removed, duplicates kept).
        labels: per image, ndarray[n, 5] float32 rows ``(class, cx, cy, w, h)`` normalised to [0, 1].
        shapes: ndarray[N, 2] int32, ``(h, w)`` of each source image as decoded by OpenCV.
        skipped: ``(image path, reason)`` of images that could not be used.
        issues: label lines that were fixed or dropped (see the module docstring).
        layout_warning: a sentence when no image has a label file (None otherwise).
        cache_path: the label cache file (None when caching was off or could not be written);
        from_cache: True when this set was read from the cache without parsing.
        oriented: ``(image, EXIF orientation)`` of usable images whose header turns or flips them (tag 2..8).
    """

    files: list[Path]
    labels: list[np.ndarray]
    shapes: np.ndarray
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    issues: list[LabelIssue] = field(default_factory=list)
    layout_warning: str | None = None
    cache_path: Path | None = None
    from_cache: bool = False
    oriented: list[tuple[Path, int]] = field(default_factory=list)

    @property
    def backgrounds(self) -> int:
        """Images with no box (no label file or an empty one)."""
        return sum(1 for lb in self.labels if len(lb) == 0)

    @property
    def boxes(self) -> int:
        return sum(len(lb) for lb in self.labels)

    def issue_counts(self) -> dict[str, int]:
        """Label issues per kind (every kind of ``ISSUE_KINDS``, 0 when none)."""
        return {k: sum(1 for i in self.issues if i.kind == k) for k in ISSUE_KINDS}


def parse_label_file(
    path: Path, nc: int, *, tol: float = LABEL_TOLERANCE, issues: list[LabelIssue] | None = None
) -> np.ndarray:
    """Parse one YOLO label file (policy: see the module docstring).

    Args:
        issues: receives a ``LabelIssue`` for every line clipped or dropped.
    Returns:
        ndarray[n, 5] float32 ``(class, cx, cy, w, h)``; boxes reaching up to ``tol`` outside the image are clipped,
        zero-size boxes and repeated lines dropped.
    Raises:
        DataError: ``"Label file F:L has ...; expected ..."`` for the first bad line.
    """
    if path.is_dir():
        raise DataError(
            f"Label file {path} is a folder; expected a text file of 'class cx cy w h' lines (or none)."
        )
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise DataError(f"Label file {path} is not a text file; expected lines 'class cx cy w h'.") from None
    except OSError as exc:
        raise DataError(
            f"Label file {path} cannot be read ({exc.strerror or exc}); expected a readable file."
        ) from None
    found = [] if issues is None else issues
    rows: list[tuple[float, ...]] = []
    seen: dict[tuple[float, ...], int] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        where = f"Label file {path}:{lineno}"
        if len(line) > MAX_LABEL_LINE:  # not split into millions of words first
            raise DataError(f"{where} has a line of {len(line):,} characters ({quoted(line)}); expected 5 "
                            f"numbers: class cx cy w h (at most {MAX_LABEL_LINE:,} characters).")  # fmt: skip
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 5:
            raise DataError(
                f"{where} has {len(parts)} columns ({quoted(line.strip())}); expected 5: class cx cy w h."
            )
        try:
            values = [float(v) for v in parts]
        except ValueError:
            raise DataError(
                f"{where} has a non-number in {quoted(line.strip())}; expected 5 numbers."
            ) from None
        cls = values[0]
        if not np.isfinite(values).all():
            raise DataError(
                f"{where} has a non-finite value in {quoted(line.strip())}; expected finite numbers."
            )
        if cls != int(cls) or not 0 <= cls < nc:
            raise DataError(
                f"{where} has class {shorten(parts[0])}; expected an integer in 0..{nc - 1} (nc={nc})."
            )
        cx, cy, w, h = values[1:]
        if w < 0 or h < 0:
            raise DataError(
                f"{where} has box {cx:g} {cy:g} {w:g} {h:g} with a negative width or height; expected "
                "normalised cx cy w h with w, h >= 0."
            )
        x1, y1, x2, y2 = cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2
        if min(cx, cy, x1, y1) < -tol or max(cx, cy, w, h, x2, y2) > 1 + tol:
            raise DataError(
                f"{where} has box {cx:g} {cy:g} {w:g} {h:g} reaching outside [0, 1] by more than {tol:g}; "
                "expected normalised cx cy w h."
            )
        overshoot = max(-x1, -y1, x2 - 1.0, y2 - 1.0)
        x1, y1, x2, y2 = max(x1, 0.0), max(y1, 0.0), min(x2, 1.0), min(y2, 1.0)
        row = (cls, (x1 + x2) / 2, (y1 + y2) / 2, max(x2 - x1, 0.0), max(y2 - y1, 0.0))
        if row[3] <= 0 or row[4] <= 0:
            found.append(LabelIssue(path, lineno, "zero-size", f"box {w:g} x {h:g} has zero size; dropped"))
            continue
        if row in seen:
            found.append(LabelIssue(path, lineno, "duplicate", f"repeats line {seen[row]}; dropped"))
            continue
        if overshoot > CLIP_REPORTED:
            found.append(
                LabelIssue(path, lineno, "clipped", f"box reaches {overshoot:.3g} outside the image; clipped")
            )
        seen[row] = lineno
        rows.append(row)
    return np.array(rows, dtype=np.float32).reshape(-1, 5)


def _parse_one(image: Path, nc: int) -> tuple[bool, np.ndarray, list[LabelIssue]]:
    """(has a label file, labels, issues) of one image."""
    label_file = label_path_for(image)
    if not label_file.exists():
        return False, np.zeros((0, 5), np.float32), []
    issues: list[LabelIssue] = []
    return True, parse_label_file(label_file, nc, issues=issues), issues


def layout_message(images: list[Path], labelled: list[Path]) -> str:
    """The sentence for a set of images of which none has a box (``labelled``: those with a label file): where
    labels were looked for, and a hint when a ``labels`` folder exists elsewhere."""
    first = images[0]
    looked = label_path_for(first)
    if labelled:
        return (
            f"{len(labelled)} of the {len(images)} images have label files (e.g. {label_path_for(labelled[0])}) "
            "but not one box is in them; expected 'class cx cy w h' lines."
        )
    if "images" in first.parts[:-1]:
        where = " (the path's last 'images' folder replaced by 'labels')"
    else:
        where = ", beside it, since its path has no 'images' folder"
        for up in first.parents:
            if (up / "labels").is_dir():
                where += f" ({up / 'labels'} exists: move the images to {up / 'images'} to use it)"
                break
    return (
        f"None of the {len(images)} images has a label file: for {first} the label was looked for at {looked}"
        f"{where}; expected YOLO label files there."
    )


def _signature(unique: list[Path], nc: int) -> str:
    paths = [p for img in unique for p in (img, label_path_for(img))]
    return f"{CACHE_VERSION}:{nc}:{LABEL_TOLERANCE}:{file_signature(paths)}"


@dataclass(frozen=True)
class _Scan:
    """What the scan found per unique image (the label cache holds exactly this)."""

    shapes: list[tuple[int, int]]  # (h, w) as decoded; (-1, -1) when unusable
    reasons: list[str]  # why an image is unusable ("" when usable)
    has_label: list[bool]
    labels: list[np.ndarray]
    issues: list[LabelIssue]
    orientations: list[int]  # EXIF orientation tags (1: none)


def _read_cache(path: Path | None, signature: str, unique: list[Path]) -> _Scan | None:
    def build(z) -> _Scan:
        counts = z["counts"]
        if int(counts.sum()) != len(z["labels"]) or len(counts) != len(unique):
            raise ValueError(f"{len(counts)} label counts summing to {int(counts.sum())} for {len(unique)} images "
                             f"and {len(z['labels'])} labels")  # fmt: skip
        return _Scan(
            shapes=[(int(h), int(w)) for h, w in z["shapes"]],
            reasons=[str(r) for r in z["reasons"]],
            has_label=[bool(b) for b in z["has_label"]],
            labels=np.split(z["labels"], np.cumsum(counts)[:-1]) if len(counts) else [],
            issues=[
                LabelIssue(label_path_for(unique[int(i)]), int(n), str(k), str(d))
                for i, n, k, d in zip(z["issue_image"], z["issue_line"], z["issue_kind"], z["issue_detail"])
            ],
            orientations=[int(o) for o in z["orientations"]],
        )

    return read_npz_cache(path, signature, build, what="label cache")


def _write_cache(path: Path, signature: str, scan: _Scan, unique: list[Path]) -> bool:
    index = {label_path_for(p): i for i, p in enumerate(unique)}
    labels = scan.labels
    arrays = dict(
        shapes=np.asarray(scan.shapes, np.int32).reshape(-1, 2),
        reasons=np.array(scan.reasons, dtype=str),
        has_label=np.array(scan.has_label, dtype=bool),
        counts=np.array([len(x) for x in labels], np.int64),
        labels=np.concatenate(labels).astype(np.float32) if labels else np.zeros((0, 5), np.float32),
        issue_image=np.array([index[i.path] for i in scan.issues], np.int64),
        issue_line=np.array([i.line for i in scan.issues], np.int64),
        issue_kind=np.array([i.kind for i in scan.issues], dtype=str),
        issue_detail=np.array([i.detail for i in scan.issues], dtype=str),
        orientations=np.array(scan.orientations, np.int8),
    )
    return write_npz_cache(path, signature, arrays, what="label cache")


def _scan(unique: list[Path], nc: int, workers: int) -> _Scan:
    verdicts = verify_images(unique, workers)
    n_workers = max(1, min(workers, os.cpu_count() or 1, len(unique)))
    with ThreadPoolExecutor(n_workers) as pool:
        parsed = list(pool.map(lambda p: _parse_one(p, nc), unique))
    return _Scan(
        shapes=[v.hw or (-1, -1) for v in verdicts],
        reasons=[v.reason for v in verdicts],
        has_label=[r[0] for r in parsed],
        labels=[r[1] for r in parsed],
        issues=[i for r in parsed for i in r[2]],
        orientations=[v.orientation for v in verdicts],
    )


def log_issues(issues: list[LabelIssue]) -> None:
    """One warning: issue counts per kind, the number of files, and the first locations."""
    if not issues:
        return
    counts = {k: sum(1 for i in issues if i.kind == k) for k in ISSUE_KINDS}
    what = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    files = len({i.path for i in issues})
    shown = "; ".join(str(i) for i in issues[:SHOWN_ISSUES])
    more = (
        f"; and {len(issues) - SHOWN_ISSUES} more (y9 data check lists them all)"
        if len(issues) > SHOWN_ISSUES
        else ""
    )
    log.warning("label lines fixed or dropped in %d file(s) (%s): %s%s", files, what, shown, more)


def load_labels(
    images: list[Path],
    nc: int,
    *,
    cache: bool = True,
    cache_dir: str | Path | None = None,
    workers: int = 8,
    require_labels: bool = False,
    log_skipped: bool = True,
) -> LabelSet:
    """Labels and shapes of ``images``, through the label cache.

    Args:
        images: image paths (duplicates allowed: each unique file is scanned once).
        nc: number of classes (class ids must be < nc).
        cache: read/write the cache; cache_dir: where (default beside the labels folder, see ``paths``).
        workers: threads decoding images on a cache miss.
        require_labels: when no usable image has a box, raise (a training set) instead of warning.
        log_skipped: log a warning per unreadable image (False: the caller reports ``LabelSet.skipped`` itself).
    Raises:
        DataError: a bad label line (``file:line``), no usable image, or (``require_labels``) no box at all.
    """
    if not images:
        raise DataError("No images were given to load labels for; expected at least one image path.")
    unique = list(dict.fromkeys(images))
    signature = _signature(unique, nc)
    label_dir = label_path_for(unique[0]).parent
    cache_path = cache_location(label_dir, f"{label_dir.name}.y9cache.npz", cache_dir) if cache else None
    scan = _read_cache(cache_path, signature, unique)
    from_cache = scan is not None
    if scan is None:
        scan = _scan(unique, nc, workers)
        if cache_path is not None and not _write_cache(cache_path, signature, scan, unique):
            cache_path = None
    shapes, reasons, labels = scan.shapes, scan.reasons, scan.labels
    index = {p: i for i, p in enumerate(unique)}
    skipped = [(p, reasons[i]) for p, i in index.items() if reasons[i]]
    for p, why in skipped if log_skipped else []:
        log.warning("skipping image %s: it %s", p, why)
    keep = [p for p in images if not reasons[index[p]]]
    if not keep:
        raise DataError(
            f"None of the {len(unique)} images could be used (the first, {unique[0]}, {reasons[0]}); "
            "expected readable images."
        )
    usable = [i for i, r in enumerate(reasons) if not r]
    of_label = {label_path_for(p): i for i, p in enumerate(unique)}
    issues = [i for i in scan.issues if not reasons[of_label[i.path]]]  # skipped images' labels do not count
    log_issues(issues)
    layout_warning = None
    if not any(len(labels[i]) for i in usable):
        layout_warning = layout_message(
            [unique[i] for i in usable], [unique[i] for i in usable if scan.has_label[i]]
        )
        if require_labels:
            raise DataError(layout_warning)
        log.warning("%s", layout_warning)
    return LabelSet(
        files=keep,
        labels=[labels[index[p]] for p in keep],
        shapes=np.array([shapes[index[p]] for p in keep], np.int32).reshape(-1, 2),
        skipped=skipped,
        issues=issues,
        layout_warning=layout_warning,
        cache_path=cache_path,
        from_cache=from_cache,
        oriented=[
            (p, scan.orientations[i])
            for p, i in index.items()
            if not reasons[i] and scan.orientations[i] != 1
        ],
    )


def normalised_to_pixels(
    labels: np.ndarray, w: float, h: float, left: float = 0.0, top: float = 0.0
) -> np.ndarray:
    """``(class, cx, cy, bw, bh)`` normalised -> ``(class, x1, y1, x2, y2)`` in pixels of a (w, h) image, shifted."""
    out = np.empty_like(labels, dtype=np.float32)
    out[:, 0] = labels[:, 0]
    out[:, 1] = (labels[:, 1] - labels[:, 3] / 2) * w + left
    out[:, 2] = (labels[:, 2] - labels[:, 4] / 2) * h + top
    out[:, 3] = (labels[:, 1] + labels[:, 3] / 2) * w + left
    out[:, 4] = (labels[:, 2] + labels[:, 4] / 2) * h + top
    return out
