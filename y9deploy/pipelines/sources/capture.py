"""Opening video sources with OpenCV: files, camera indices and stream URLs, with the reason named when one
cannot be opened (a refused or unreachable stream is told apart from a file OpenCV cannot decode), and the
synchronous ``VideoReader``.

    for index, frame in VideoReader("line.mp4", stride=2):   # every second frame
        dets = detector.predict(frame)

Skipped frames are grabbed but not decoded (``cv2.VideoCapture.grab``), so skipping is cheap.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import cv2
import numpy as np

from y9core.errors import SourceError
from y9deploy.pipelines.sources.file_frames import FrameTally, file_frames
from y9deploy.pipelines.sources.kinds import IMAGE_SUFFIXES, VIDEO_SUFFIXES, is_url, url_kind  # noqa: F401 - re-exported

DEFAULT_PORTS = {"rtsp": 554, "rtsps": 322, "rtmp": 1935, "http": 80, "https": 443}


def is_stream_url(source: Any) -> bool:
    """A URL of a live stream (rtsp, rtmp, MJPEG, HLS ...), not of an image or video file (``sources.url_kind``)."""
    return is_url(source) and url_kind(str(source)) == "stream"


def is_camera(source: Any) -> bool:
    return isinstance(source, int) or (isinstance(source, str) and source.isdigit())


def is_live(source: Any) -> bool:
    """Streams and cameras are live (frames arrive in real time); files and folders are not."""
    return is_stream_url(source) or is_camera(source)


def stream_unreachable_reason(url: str, timeout_s: float = 2.0) -> str | None:
    """Why ``url``'s server cannot be reached over TCP (refused, unknown host, no answer), or None when it
    accepts a connection (then the problem is the path, the credentials or the stream itself)."""
    parts = urlsplit(url)
    host, scheme = parts.hostname, parts.scheme.lower()
    if not host:
        return "the URL names no host"
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        return "the URL's port is not a number"
    if port is None or scheme == "udp":
        return None
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except ConnectionRefusedError:
        return (
            f"connection refused by {host}:{port} (is the camera or server running, and is the port right?)"
        )
    except socket.gaierror:
        return f"the host name {host!r} could not be resolved"
    except TimeoutError:
        return f"no answer from {host}:{port} within {timeout_s:g} s"
    except OSError as exc:
        return f"{host}:{port} could not be reached ({exc.strerror or exc})"


def open_capture(source: str | Path | int, *, timeout_s: float = 5.0) -> cv2.VideoCapture:
    """An opened ``cv2.VideoCapture`` for a file, a camera index or a stream URL.

    Raises:
        FileNotFoundError: a file source does not exist.
        SourceError: it cannot be opened; the sentence names the source and the reason (for a URL: refused,
            unknown host, no answer, or connected but no video read).
    """
    if is_camera(source):
        cap = cv2.VideoCapture(int(source))
        if not cap.isOpened():
            raise SourceError(f"camera {int(source)} could not be opened (no such device, or it is in use).")
        return cap
    text = str(source)
    if is_url(text):  # streams, and video files behind a URL: FFmpeg with timeouts
        ms = int(timeout_s * 1000)
        params = [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, ms, cv2.CAP_PROP_READ_TIMEOUT_MSEC, ms]
        cap = cv2.VideoCapture(text, cv2.CAP_FFMPEG, params)
        if not cap.isOpened():
            reason = stream_unreachable_reason(text, min(timeout_s, 2.0)) or (
                "the server accepted the connection but no video could be read from it "
                "(wrong path or credentials, or a stream format FFmpeg does not support)"
            )
            raise SourceError(f"stream {text} could not be opened: {reason}.")
        return cap
    path = Path(text)
    if not path.is_file():
        raise FileNotFoundError(f"video {path} does not exist.")
    cap = cv2.VideoCapture(str(path))
    if not cap.isOpened():
        raise SourceError(f"OpenCV could not open {path} as a video (unsupported codec or not a video file).")
    return cap


class VideoReader:
    """Iterate ``(frame_index, frame)`` over a video, synchronously (see ``FrameReader`` for a reader thread).

    Args:
        source: a video file, a camera index (int or "0"), or a stream URL (rtsp://...).
        stride: decode every ``stride``-th frame (1: all); the index is the frame's position in the video.
        max_frames: stop after this many decoded frames (None: until the end).
    Raises:
        FileNotFoundError: a file source does not exist. SourceError (a ValueError): it cannot be opened.
        ValueError: stride < 1.
    """

    def __init__(self, source: str | Path | int, *, stride: int = 1, max_frames: int | None = None) -> None:
        if int(stride) < 1:
            raise ValueError(f"stride={stride!r}; expected 1 (every frame) or more.")
        self.stride = int(stride)
        self.max_frames = max_frames
        self.source = source
        self._cap = open_capture(source)
        self.fps = float(self._cap.get(cv2.CAP_PROP_FPS) or 0.0) or 30.0
        self.width = int(self._cap.get(cv2.CAP_PROP_FRAME_WIDTH))
        self.height = int(self._cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
        count = int(self._cap.get(cv2.CAP_PROP_FRAME_COUNT))
        self.frame_count = count if count > 0 and not is_live(source) else None
        self.tally = FrameTally(expected=self.frame_count)  # a file's frames decoded / declared, once read

    @property
    def expected_frames(self) -> int | None:
        """How many frames iteration will yield (None for live sources)."""
        return expected_frames(self.frame_count, self.stride, self.max_frames)

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        """Frames of a file go through ``file_frames``: frames that cannot be decoded are counted in ``tally`` and
        reported (``tally.shortfall``) as a warning on the ``y9deploy`` logger once the file has been read."""
        yielded = 0
        if is_live(self.source):
            index = 0
            while self.max_frames is None or yielded < self.max_frames:
                if index % self.stride:
                    if not self._cap.grab():
                        break
                    index += 1
                    continue
                ok, frame = self._cap.read()
                if not ok or frame is None:
                    break
                yield index, frame
                yielded += 1
                index += 1
            self.close()
            return
        self.tally = FrameTally(expected=self.frame_count)
        for index, frame in file_frames(self._cap, self.tally, stride=self.stride):
            if frame is None:
                continue
            if self.max_frames is not None and yielded >= self.max_frames:
                break
            yield index, frame
            yielded += 1
        self.close()
        short = self.tally.shortfall(self.source)
        if short is not None:
            logging.getLogger("y9deploy").warning("%s", short)

    def close(self) -> None:
        if self._cap is not None:
            self._cap.release()

    def __enter__(self) -> VideoReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def expected_frames(frame_count: int | None, stride: int, max_frames: int | None) -> int | None:
    """Frames a reader yields: every ``stride``-th of ``frame_count`` (None: a live source), at most ``max_frames``."""
    if frame_count is None:
        return max_frames
    n = (frame_count + stride - 1) // stride
    return min(n, max_frames) if max_frames is not None else n
