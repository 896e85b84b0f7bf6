"""Where frames come from, the bottom of ``y9deploy.pipelines`` (it imports nothing of the packages beside it).

- ``kinds``: what a source, as a user types it, is (a file, a folder, a glob, a camera index, an image or a video
  behind a URL, a live stream) and the files it stands for;
- ``capture``: opening one with OpenCV, the reason named when it cannot be opened, and the synchronous
  ``VideoReader``;
- ``file_frames``: the frames of a video file read position by position, undecodable ones tallied;
- ``frame_reader``: ``FrameReader``, frames decoded in a thread and handed over by a policy (``latest``, ``queue``),
  with reconnects for streams.

The names below are the public ones (``from y9deploy.pipelines.sources import FrameReader``); the modules of
``y9deploy.pipelines`` import from the module that defines a name, never from here.
"""

from y9deploy.pipelines.sources.capture import VideoReader, is_live
from y9deploy.pipelines.sources.frame_reader import Frame, FrameReader, ReaderStats, ReconnectPolicy
from y9deploy.pipelines.sources.kinds import (
    IMAGE_SUFFIXES,
    MAX_URL_IMAGE_BYTES,
    URL_TIMEOUT_S,
    VIDEO_SUFFIXES,
    content_kind,
    expand_glob,
    glob_root,
    has_glob,
    is_url,
    read_url_image,
    source_roots,
    url_kind,
)

__all__ = [
    "IMAGE_SUFFIXES", "MAX_URL_IMAGE_BYTES", "URL_TIMEOUT_S", "VIDEO_SUFFIXES", "Frame", "FrameReader", "ReaderStats",
    "ReconnectPolicy", "VideoReader", "content_kind", "expand_glob", "glob_root", "has_glob", "is_live", "is_url",
    "read_url_image", "source_roots", "url_kind",
]  # fmt: skip
