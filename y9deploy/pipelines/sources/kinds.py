"""What a source, as a user types it, is: a file, a folder, a glob, a camera index, an image or video file behind a
URL, or a live stream.

- ``"imgs/*.jpg"``, ``"data/**/*.png"``: a glob (when no file of that very name exists), expanded and sorted;
- ``http(s)://...``: by the URL path's extension (``.jpg`` ... an image, read once; ``.mp4`` ... a video file, read
  to its end; ``.m3u8``, ``.mjpg`` ... a stream), else by the ``Content-Type`` the server answers (``image/*``,
  ``video/*``, ``multipart/x-mixed-replace`` for MJPEG, the HLS playlist types); a server that cannot be asked is
  taken for a stream, as before;
- ``rtsp://``, ``rtsps://``, ``rtmp://``, ``udp://``, ``tcp://``: streams; ``0``, ``1`` ...: cameras;
- ``list.txt``: a list of sources, one per line (images, videos, folders; relative to the list's folder: the rule of
  data.yaml's list files, ``y9core.data.paths.read_list_file``); a Python list or tuple of sources likewise.
"""

from __future__ import annotations

import glob
import os
import urllib.error
import urllib.request
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import cv2
import numpy as np

from y9core.errors import SourceError

VIDEO_SUFFIXES = (".mp4", ".avi", ".mov", ".mkv", ".m4v", ".webm", ".mpg", ".mpeg", ".wmv", ".ts")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")
STREAM_SCHEMES = ("rtsp", "rtsps", "rtmp", "udp", "tcp")
HTTP_SCHEMES = ("http", "https")
STREAM_SUFFIXES = (".m3u8", ".mjpg", ".mjpeg", ".cgi", ".sdp")
STREAM_TYPES = ("multipart/x-mixed-replace", "application/vnd.apple.mpegurl", "application/x-mpegurl",
                "audio/mpegurl", "audio/x-mpegurl")  # fmt: skip
MAX_URL_IMAGE_BYTES = 64 << 20  # an image behind a URL larger than this is refused (documented in docs/deploy.md)
URL_TIMEOUT_S = 5.0


def _scheme(source: Any) -> str:
    text = str(source)
    return text.split("://", 1)[0].lower() if "://" in text else ""


def is_url(source: Any) -> bool:
    return _scheme(source) in (*HTTP_SCHEMES, *STREAM_SCHEMES)


def content_kind(content_type: str) -> str | None:
    """"image", "video" or "stream" for a ``Content-Type`` header value (None: it does not say)."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind in STREAM_TYPES:
        return "stream"
    if kind.startswith("image/"):
        return "image"
    if kind.startswith("video/"):
        return "video"
    return None


@lru_cache(maxsize=64)
def url_kind(url: str) -> str:
    """"image", "video" or "stream" for a URL (module docstring); asks an http(s) server only when the URL's
    extension does not say."""
    if _scheme(url) in STREAM_SCHEMES:
        return "stream"
    suffix = Path(urlsplit(url).path).suffix.lower()
    if suffix in IMAGE_SUFFIXES:
        return "image"
    if suffix in STREAM_SUFFIXES:
        return "stream"
    if suffix in VIDEO_SUFFIXES:
        return "video"
    try:
        with urllib.request.urlopen(url, timeout=URL_TIMEOUT_S) as answer:  # noqa: S310 - http(s) only here
            return content_kind(answer.headers.get("Content-Type", "")) or "stream"
    except (OSError, ValueError):
        return "stream"  # not asked: FFmpeg opens it as a stream and names the reason when it cannot


def read_url_image(url: str) -> np.ndarray:
    """The image behind an http(s) URL, read once -> ndarray[H, W, 3] uint8 BGR.

    Raises:
        SourceError: it cannot be fetched, is larger than ``MAX_URL_IMAGE_BYTES`` or cannot be decoded.
    """
    try:
        with urllib.request.urlopen(url, timeout=URL_TIMEOUT_S) as answer:  # noqa: S310 - http(s) only here
            data = answer.read(MAX_URL_IMAGE_BYTES + 1)
    except (OSError, ValueError) as exc:
        raise SourceError(f"image URL {url} could not be fetched ({exc}).") from None
    if len(data) > MAX_URL_IMAGE_BYTES:
        raise SourceError(f"image URL {url} is larger than {MAX_URL_IMAGE_BYTES >> 20} MB; expected an image file.")
    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR) if data else None
    if img is None:
        raise SourceError(f"image URL {url} could not be decoded as an image; expected a JPEG/PNG/... file.")
    return img


def has_glob(text: str) -> bool:
    return glob.has_magic(text)


def glob_root(pattern: str) -> Path:
    """The folder a glob reads from: its leading part without wildcards (``imgs/*.jpg`` -> ``imgs``)."""
    parts = Path(pattern).parts
    fixed = [p for p in parts[: next((i for i, p in enumerate(parts) if glob.has_magic(p)), len(parts))]]
    return Path(*fixed) if fixed else Path(".")


def expand_glob(pattern: str) -> list[Path]:
    """The files a glob matches (``**`` recursive), sorted, each file once (however many links lead to it).

    Raises:
        FileNotFoundError: nothing matches.
    """
    files, seen = [], set()
    for p in sorted(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file()):
        real = os.path.realpath(p)  # a folder link that loops back (or two links to one file) yields it once
        if real not in seen:
            seen.add(real)
            files.append(p)
    if not files:
        raise FileNotFoundError(f"no file matches {pattern}; expected a pattern such as 'photos/*.jpg'.")
    return files


def is_list_file(source: Any) -> bool:
    """A ``.txt`` file that lists sources, one per line."""
    return isinstance(source, (str, Path)) and str(source).lower().endswith(".txt") and Path(source).is_file()


def source_entries(source: Any, chain: tuple[Path, ...] = ()) -> list[Any]:
    """``source`` as the single sources it names: a list or tuple, and a ``.txt`` list file, are opened up (in
    order, list files named by list files too); anything else is itself. ``chain``: the list files being opened.

    Raises:
        FileNotFoundError: a list file names a path that does not exist (the line is named). ValueError: an
        empty list or list file, or list files that name each other (the chain is named).
    """
    if isinstance(source, (list, tuple)):
        entries = [e for item in source for e in source_entries(item, chain)]
        if not entries:
            raise ValueError("the list of sources is empty; expected at least one image, video, folder or URL.")
        return entries
    if not is_list_file(source):
        return [source]
    from y9core.data.paths import read_list_file
    from y9core.errors import DataError

    here = Path(source).resolve()
    if here in chain:
        names = " -> ".join(str(p) for p in (*chain[chain.index(here) :], here))
        raise ValueError(f"list file {source} names itself through {names}; expected list files that do not name "
                         "each other in a circle.")  # fmt: skip
    try:
        listed = read_list_file(Path(source), urls=True)
    except DataError as exc:
        raise ValueError(str(exc)) from None
    if not listed:
        raise ValueError(f"list file {source} names no source; expected one image, video or folder path per line.")
    for n, path in listed:
        if not is_url(str(path)) and not Path(path).exists():
            raise FileNotFoundError(f"list file {source} line {n} names {path}, which does not exist; expected an "
                                    "existing image, video or folder (relative paths are relative to the list's "
                                    "folder).")  # fmt: skip
    return [e for _, p in listed for e in source_entries(p, (*chain, here))]


def source_roots(source: Any) -> list[Path]:
    """The local files and folders ``source`` reads (none for URLs and cameras; a glob's fixed folder; the entries
    of a list)."""
    if isinstance(source, (list, tuple)) or is_list_file(source):
        return [root for entry in source_entries(source) for root in source_roots(entry)]
    if not isinstance(source, (str, Path, int)):
        return []  # an in-memory image
    text = str(source)
    if is_url(text) or text.isdigit():
        return []
    if has_glob(text) and not Path(text).exists():
        return [glob_root(text)]
    return [Path(text)]
