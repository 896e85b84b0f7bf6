"""Which images can be trained on: each is decoded once at the label scan; an unusable one is skipped, and
listed with its reason by path (``LabelSet.skipped``, ``y9 data check``, the trainer's warnings).

Skipped as unusable:
- a file that cannot be read, or cannot be decoded as an image (a 0-byte file, text named ``.jpg``);
- a JPEG cut short (no end-of-image marker);
- a JPEG whose compressed data is corrupt: OpenCV returns a partly decoded picture and libjpeg only prints
  ``Corrupt JPEG data: ...`` or ``Premature end of JPEG file`` on stderr. The scan captures stderr (file
  descriptor 2) while it decodes, in chunks, and decodes again one by one the JPEGs of a chunk that produced such
  a line, so the line is attributed to its file; other output of the scan is passed on to stderr;
- a degenerate size: a side under ``MIN_SIDE`` pixels, or a long side more than ``MAX_ASPECT`` times the short
  side (resized to a long side of 32 pixels, the smallest image size, it would have a side of 0 pixels).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cv2

MIN_SIDE = 2  # pixels
MAX_ASPECT = 50  # long side / short side
CHUNK = 64  # images decoded together between two looks at the captured stderr

# libjpeg's warnings of corrupt compressed data (jerror.h: JWRN_HIT_MARKER, JWRN_JPEG_EOF, JWRN_EXTRANEOUS_DATA ...)
_CORRUPT = re.compile(r"^.*(Corrupt JPEG data|Premature end of JPEG file|Invalid SOS parameters).*$", re.M)

Verdict = tuple[tuple[int, int] | None, str]  # ((h, w), "") when usable, (None, reason) otherwise

_capture_lock = threading.Lock()


def verify_image(path: Path) -> Verdict:
    """Decode an image once to prove it is usable (see the module docstring; libjpeg's warnings are not seen
    here, ``verify_images`` attributes them).

    Returns:
        ``((h, w), "")`` when usable, ``(None, reason)`` otherwise; ``reason`` reads after "it".
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
    if size == 0:
        return None, "is an empty (0-byte) file"
    if head[:2] == b"\xff\xd8" and b"\xff\xd9" not in tail:
        return None, "is a JPEG cut short (no end-of-image marker)"
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if img is None:
        return None, "cannot be decoded as an image"
    h, w = int(img.shape[0]), int(img.shape[1])
    if min(h, w) < MIN_SIDE or max(h, w) > MAX_ASPECT * min(h, w):
        return None, (
            f"has a degenerate size of {w}x{h} pixels; expected sides of at least {MIN_SIDE} pixels and a long "
            f"side at most {MAX_ASPECT} times the short one"
        )
    return (h, w), ""


def _is_jpeg(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"\xff\xd8"
    except OSError:
        return False


@contextlib.contextmanager
def captured_stderr() -> Iterator[Callable[[], str]]:
    """Send what this process writes to file descriptor 2 into a temporary file; yields a function returning
    what was written since the previous call. One capture at a time (others wait)."""
    with _capture_lock, tempfile.TemporaryFile() as tmp:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        try:
            saved = os.dup(2)
        except OSError:  # no stderr at all: nothing to capture (nor to see)
            yield lambda: ""
            return
        os.dup2(tmp.fileno(), 2)
        pos = 0

        def new_text() -> str:
            nonlocal pos
            tmp.seek(pos)
            data = tmp.read()
            pos += len(data)
            return data.decode(errors="replace")

        try:
            yield new_text
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def verify_images(paths: list[Path], workers: int = 8) -> list[Verdict]:
    """``verify_image`` of every path (threads), with libjpeg's corrupt-data warnings attributed to their file
    (such a JPEG gets ``(None, reason)``)."""
    results: list[Verdict] = []
    passed_on: list[str] = []
    n_workers = max(1, min(workers, os.cpu_count() or 1, len(paths)))
    with ThreadPoolExecutor(n_workers) as pool, captured_stderr() as new_text:
        for start in range(0, len(paths), CHUNK):
            part = paths[start : start + CHUNK]
            verdicts = list(pool.map(verify_image, part))
            text = new_text()
            if _CORRUPT.search(text):
                for k, p in enumerate(part):
                    if verdicts[k][0] is None or not _is_jpeg(p):
                        continue
                    cv2.imread(str(p), cv2.IMREAD_COLOR)
                    m = _CORRUPT.search(new_text())
                    if m:
                        verdicts[k] = (None, f"has corrupt JPEG data (libjpeg: {m.group(0).strip()!r})")
                text = _CORRUPT.sub("", text)
            if text.strip():
                passed_on.append(text)
            results.extend(verdicts)
    for text in passed_on:
        sys.stderr.write(text.strip("\n") + "\n")
    return results
