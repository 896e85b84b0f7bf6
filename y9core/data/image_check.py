"""Which images can be trained on: each is decoded once at the label scan; an unusable one is skipped, and
listed with its reason by path (``LabelSet.skipped``, ``y9 data check``, the trainer's warnings).

Skipped as unusable: every image ``y9core.images.read.load_image`` refuses (unreadable, not an image, more pixels
than the limit, cut short, corrupt compressed data), and a degenerate size: a side under ``MIN_SIDE`` pixels, or a
long side more than ``MAX_ASPECT`` times the short side (resized to a long side of 32 pixels, the smallest image
size, it would have a side of 0 pixels).

libjpeg reports corrupt data only on stderr, so ``verify_images`` captures stderr (file descriptor 2) around a
chunk of decodes in threads, and decodes again one by one, through the same ``load_image``, the JPEGs of a chunk
that produced such a line, so the line is attributed to its file; other output of the scan is passed on to stderr.
A verdict also carries the EXIF orientation the header declares (see ``exif_note``).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from y9core.errors import ImageFileError
from y9core.images.read import CORRUPT_JPEG, captured_stderr, is_jpeg, load_image, pass_on

MIN_SIDE = 2  # pixels
MAX_ASPECT = 50  # long side / short side
CHUNK = 64  # images decoded together between two looks at the captured stderr


@dataclass(frozen=True)
class Verdict:
    """Whether an image can be used: ``hw`` its (h, w) as decoded (None when unusable), ``reason`` why not
    (reads after "it"; "" when usable), ``orientation`` the EXIF orientation tag of its header (1: none)."""

    hw: tuple[int, int] | None
    reason: str = ""
    orientation: int = 1


def verify_image(path: Path, *, corrupt_check: bool = True) -> Verdict:
    """Decode an image once to prove it is usable (module docstring); with ``corrupt_check=False`` libjpeg's
    warnings are left to the caller's capture (``verify_images`` attributes them)."""
    try:
        loaded = load_image(path, corrupt_check=corrupt_check)
    except ImageFileError as exc:
        return Verdict(None, exc.reason)
    h, w = int(loaded.image.shape[0]), int(loaded.image.shape[1])
    if min(h, w) < MIN_SIDE or max(h, w) > MAX_ASPECT * min(h, w):
        return Verdict(None, (
            f"has a degenerate size of {w}x{h} pixels; expected sides of at least {MIN_SIDE} pixels and a long "
            f"side at most {MAX_ASPECT} times the short one"
        ))  # fmt: skip
    return Verdict((h, w), "", loaded.header.orientation)


def verify_images(paths: list[Path], workers: int = 8) -> list[Verdict]:
    """``verify_image`` of every path (threads), with libjpeg's corrupt-data warnings attributed to their file
    (such a JPEG gets an unusable verdict)."""
    results: list[Verdict] = []
    passed_on: list[str] = []
    n_workers = max(1, min(workers, os.cpu_count() or 1, len(paths)))
    with ThreadPoolExecutor(n_workers) as pool, captured_stderr() as new_text:
        for start in range(0, len(paths), CHUNK):
            part = paths[start : start + CHUNK]
            verdicts = list(pool.map(lambda p: verify_image(p, corrupt_check=False), part))
            text = new_text()
            if CORRUPT_JPEG.search(text):
                for k, p in enumerate(part):
                    if verdicts[k].hw is not None and is_jpeg(p):
                        verdicts[k] = verify_image(p)  # its own capture: a warning is its own
                text = CORRUPT_JPEG.sub("", text)
            if text.strip():
                passed_on.append(text)
            results.extend(verdicts)
    for text in passed_on:
        pass_on(text)
    return results
