"""Read an image file, bounded and checked: the one decode every y9 command uses (predict, inspect, data check,
the training scan and the image cache).

Before any pixel is decoded, the file's header is read (``y9core.images.header``) and the image is refused when:

- it cannot be read, is empty, or is not a JPEG, PNG, BMP, WebP or TIFF file (whatever its name says);
- it has more pixels than ``max_image_pixels()``: by default ``DEFAULT_MAX_PIXELS`` = 178,956,970, Pillow's
  decompression-bomb threshold (2 x 89,478,485), which lets through every camera and most aerial tiles (a 150 MP
  frame takes 450 MB decoded) and refuses a 600-byte JPEG whose header claims 60000 x 60000 pixels before it takes
  10 GB. Raise it with ``y9 --max-image-pixels N ...`` or the environment variable ``Y9_MAX_IMAGE_PIXELS`` (above
  1,073,741,824 pixels OpenCV's own limit applies too: set ``OPENCV_IO_MAX_IMAGE_PIXELS`` as well);
- it is cut short: a JPEG without its end-of-image marker, a PNG without its IEND chunk;
- the file holds far more bytes than its pixels can need (``MAX_BYTES_PER_PIXEL`` a pixel plus ``EXTRA_BYTES``),
  so that reading it cannot take more memory than decoding it would.

The bytes decoded are the bytes checked: the header is read again from them (a file swapped in between is refused).

Then it is decoded by OpenCV, which applies the EXIF orientation (the picture as viewers show it; labels must
follow that picture, see docs/training.md "EXIF orientation"), and refused when OpenCV reads nothing or libjpeg
reports corrupt compressed data. libjpeg only prints that (``Corrupt JPEG data: ...``, ``Premature end of JPEG
file``) on stderr and OpenCV returns a partly decoded picture, so the decode of a JPEG runs with file descriptor 2
captured (``captured_stderr``); other lines written meanwhile are passed on to stderr.

Every refusal is an ``ImageFileError`` (a ``ValueError``) naming the file and the reason.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from y9core.errors import ImageFileError
from y9core.images.header import FORMATS, HeaderError, ImageHeader, read_header

DEFAULT_MAX_PIXELS = 178_956_970
MAX_PIXELS_ENV = "Y9_MAX_IMAGE_PIXELS"
TAIL_BYTES = 4096  # the end of a file searched for a JPEG's end-of-image marker or a PNG's IEND chunk
# the most bytes a file may hold for its pixels: 16-bit RGBA stored raw (8 bytes a pixel), plus metadata (EXIF, ICC
# profiles, thumbnails, a phone's appended clip): a file far larger is not that image, and is not read into memory
MAX_BYTES_PER_PIXEL, EXTRA_BYTES = 8, 64 << 20

# libjpeg's warnings of corrupt compressed data (jerror.h: JWRN_HIT_MARKER, JWRN_JPEG_EOF, JWRN_EXTRANEOUS_DATA ...)
CORRUPT_JPEG = re.compile(
    r"^.*(Corrupt JPEG data|Premature end of JPEG file|Invalid SOS parameters).*$", re.M
)

_capture_lock = threading.RLock()


def max_image_pixels() -> int:
    """The pixel limit: ``$Y9_MAX_IMAGE_PIXELS`` when set (an integer such as ``400000000`` or ``4e8``), else
    ``DEFAULT_MAX_PIXELS``.

    Raises:
        ValueError: the variable is set to something that is not a positive whole number.
    """
    text = os.environ.get(MAX_PIXELS_ENV, "").strip().replace("_", "")
    if not text:
        return DEFAULT_MAX_PIXELS
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 1 or value != int(value):
        raise ValueError(
            f"{MAX_PIXELS_ENV}={os.environ[MAX_PIXELS_ENV]!r}; expected a positive whole number of pixels "
            f"(the default is {DEFAULT_MAX_PIXELS:,})."
        )
    return int(value)


@contextlib.contextmanager
def captured_stderr() -> Iterator[Callable[[], str]]:
    """Send what this process writes to file descriptor 2 into a temporary file; yields a function returning
    what was written since its previous call. One thread captures at a time (others wait); a capture inside a
    capture of the same thread works (its text goes to the outer one when passed on)."""
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


def pass_on(text: str) -> None:
    """Write captured text that is not libjpeg's corrupt-data warning back to stderr."""
    text = CORRUPT_JPEG.sub("", text).strip("\n")
    if text.strip():
        sys.stderr.write(text + "\n")


def check_image_file(path: str | os.PathLike, *, max_pixels: int | None = None) -> ImageHeader:
    """Everything that can be known about an image file without decoding it (module docstring): its header,
    within the pixel limit, not cut short.

    Raises:
        ImageFileError: naming the file and the reason.
    """
    limit = max_image_pixels() if max_pixels is None else int(max_pixels)
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            if size == 0:
                raise ImageFileError(path, "is an empty (0-byte) file")
            try:
                header = read_header(f)
            except HeaderError as exc:
                raise ImageFileError(path, f"cannot be decoded as an image (it {exc})") from None
            f.seek(max(0, size - TAIL_BYTES))
            tail = f.read()
    except OSError as exc:
        raise ImageFileError(path, f"cannot be read ({exc.strerror or exc})") from None
    if header is None:
        raise ImageFileError(
            path,
            f"cannot be decoded as an image (its content is not {', '.join(FORMATS[:-1])} or {FORMATS[-1]})",
        )
    if header.pixels > limit:
        raise ImageFileError(
            path,
            f"has {header.width}x{header.height} = {header.pixels:,} pixels, more than the limit of {limit:,} "
            f"(a decompression bomb, or an image larger than expected: raise the limit with "
            f"'y9 --max-image-pixels N ...' or {MAX_PIXELS_ENV}=N)",
        )
    most = MAX_BYTES_PER_PIXEL * header.pixels + EXTRA_BYTES
    if size > most:
        raise ImageFileError(
            path, f"has {size:,} bytes for a {header.width}x{header.height} {header.format} image, more than "
            f"the {most:,} such an image can need (data appended to it?); expected an image file",
        )  # fmt: skip
    if header.format == "JPEG" and b"\xff\xd9" not in tail:
        raise ImageFileError(path, "is a JPEG cut short (no end-of-image marker)")
    if header.format == "PNG" and b"IEND" not in tail:
        raise ImageFileError(path, "is a PNG cut short (no IEND chunk)")
    return header


@dataclass(frozen=True)
class LoadedImage:
    """A decoded image (ndarray[H, W, C] uint8, as ``flags`` asked) and its file's header."""

    image: np.ndarray
    header: ImageHeader


def load_image(
    path: str | os.PathLike,
    flags: int = cv2.IMREAD_COLOR,
    *,
    max_pixels: int | None = None,
    corrupt_check: bool = True,
) -> LoadedImage:
    """Check (``check_image_file``) and decode an image file.

    Args:
        flags: OpenCV imread flags (``IMREAD_COLOR``: HxWx3 BGR; ``IMREAD_REDUCED_COLOR_2/4/8``: decoded smaller).
        max_pixels: the pixel limit (default ``max_image_pixels()``).
        corrupt_check: capture stderr during a JPEG's decode to see libjpeg's corrupt-data warnings (off where the
            caller captures around many decodes itself, as ``y9core.data.image_check.verify_images`` does).
    Raises:
        ImageFileError: naming the file and the reason.
    """
    header = check_image_file(path, max_pixels=max_pixels)
    try:
        data = np.fromfile(os.fspath(path), dtype=np.uint8)
        again = read_header(
            io.BytesIO(memoryview(data)[: 1 << 20])
        )  # the bytes decoded are the bytes checked
    except (OSError, HeaderError) as exc:
        again = exc
    if again != header:  # the file changed between the check and the read
        raise ImageFileError(
            path, "changed while it was being read; expected an image file that stays as it is"
        )
    watch = corrupt_check and header.format == "JPEG"
    error = None
    with captured_stderr() if watch else contextlib.nullcontext(lambda: "") as new_text:
        try:
            img = cv2.imdecode(data, flags)
        except cv2.error as exc:
            first = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            error = f"cannot be decoded as an image (OpenCV: {first.strip()[:200]})"
        text = new_text()
    if error is not None:
        pass_on(text)
        raise ImageFileError(path, error)
    if watch:
        match = CORRUPT_JPEG.search(text)
        pass_on(text)
        if match:
            raise ImageFileError(path, f"has corrupt JPEG data (libjpeg: {match.group(0).strip()!r})")
    if img is None:
        raise ImageFileError(path, "cannot be decoded as an image (OpenCV read nothing)")
    if header.format == "TIFF":
        _warn_pages(path)
    return LoadedImage(img, header)


def _warn_pages(path: str | os.PathLike) -> None:
    """A TIFF of several pages: say that its first page is the one read (not silently one of many)."""
    try:
        pages = int(cv2.imcount(os.fspath(path)))
    except (cv2.error, OSError, ValueError):
        return
    if pages > 1:
        import warnings

        from y9core.errors import Y9Notice

        warnings.warn(f"{path} is a TIFF of {pages} pages; y9 read page 1 only (save each page as its own file to "
                      "use them all).", Y9Notice, stacklevel=2)  # fmt: skip


def decode_image(path: str | os.PathLike, flags: int = cv2.IMREAD_COLOR, **kwargs) -> np.ndarray:
    """``load_image(path, flags, **kwargs).image``: the decoded pixels only."""
    return load_image(path, flags, **kwargs).image


def is_jpeg(path: Path) -> bool:
    """The file starts with a JPEG's start-of-image marker."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"\xff\xd8"
    except OSError:
        return False
