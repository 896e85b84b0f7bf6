"""Reading frames from a video file, a camera or a stream URL, with frame skipping.

    for index, frame in VideoReader("line.mp4", stride=2):   # every second frame
        dets = detector.predict(frame)

Skipped frames are grabbed but not decoded (``cv2.VideoCapture.grab``), so skipping is cheap.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np

VIDEO_SUFFIXES = (".mp4", ".avi", ".mov", ".mkv", ".m4v", ".webm", ".mpg", ".mpeg", ".wmv", ".ts")


def is_stream_url(source: str) -> bool:
    return str(source).lower().startswith(("rtsp://", "rtmp://", "http://", "https://", "udp://", "tcp://"))


class VideoReader:
    """Iterate ``(frame_index, frame)`` over a video.

    Args:
        source: a video file, a camera index (int or "0"), or a stream URL (rtsp://...).
        stride: decode every ``stride``-th frame (1: all); the index is the frame's position in the video.
        max_frames: stop after this many decoded frames (None: until the end).
    Raises:
        FileNotFoundError: a file source does not exist. ValueError: OpenCV cannot open it, or stride < 1.
    """

    def __init__(self, source: str | Path | int, *, stride: int = 1, max_frames: int | None = None) -> None:
        if int(stride) < 1:
            raise ValueError(f"stride={stride!r}; expected 1 (every frame) or more.")
        self.stride = int(stride)
        self.max_frames = max_frames
        if isinstance(source, int) or (isinstance(source, str) and source.isdigit()):
            target: str | int = int(source)
        elif isinstance(source, str) and is_stream_url(source):
            target = source
        else:
            path = Path(source)
            if not path.is_file():
                raise FileNotFoundError(f"video {path} does not exist.")
            target = str(path)
        self.source = source
        self._cap = cv2.VideoCapture(target)
        if not self._cap.isOpened():
            raise ValueError(f"OpenCV could not open {source!r} as a video (unsupported codec or bad file).")
        self.fps = float(self._cap.get(cv2.CAP_PROP_FPS) or 0.0) or 30.0
        self.width = int(self._cap.get(cv2.CAP_PROP_FRAME_WIDTH))
        self.height = int(self._cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
        count = int(self._cap.get(cv2.CAP_PROP_FRAME_COUNT))
        self.frame_count = count if count > 0 else None

    @property
    def expected_frames(self) -> int | None:
        """How many frames iteration will yield (None for live sources)."""
        if self.frame_count is None:
            return self.max_frames
        n = (self.frame_count + self.stride - 1) // self.stride
        return min(n, self.max_frames) if self.max_frames is not None else n

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        index, yielded = 0, 0
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

    def close(self) -> None:
        if self._cap is not None:
            self._cap.release()

    def __enter__(self) -> VideoReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
