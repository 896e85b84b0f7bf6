"""Frames from video files, folders of frames, RTSP/HTTP streams and USB cameras, read in a thread.

    with FrameReader("rtsp://cam/stream") as frames:      # live source: policy "latest"
        for f in frames:                                   # f.index, f.image, f.captured
            dets = detector.predict(f.image)

A ``FrameReader`` decodes in a background thread and hands frames over by one of two policies:

- ``latest`` (default for streams and cameras): only the newest frame waits; when the consumer (the Detector)
  is slower than the source, older frames are dropped (counted in ``stats.dropped``), so results stay current;
- ``queue`` (default for files and folders): every frame is kept, in order; the reader waits when
  ``queue_size`` frames are pending, so nothing is dropped and memory stays bounded.

A live source that stops delivering frames (cut connection, camera unplugged) is reopened with exponential
back-off (``ReconnectPolicy``); every attempt's reason is reported through ``on_event`` (default: the
``y9deploy`` logger) with the URL named, and successful reconnects are counted in ``stats.reconnects``.
Frame indices keep counting across reconnects. ``stop()`` (or leaving the ``with`` block) ends the thread.
Opening sources (and the synchronous ``VideoReader`` for simple loops over a file) is in ``capture``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from y9core.errors import SourceError
from y9deploy.pipelines.sources.capture import (  # noqa: F401 - re-exported: the public names of the video pipeline
    DEFAULT_PORTS,
    IMAGE_SUFFIXES,
    VIDEO_SUFFIXES,
    VideoReader,
    expected_frames,
    is_camera,
    is_live,
    is_stream_url,
    open_capture,
    stream_unreachable_reason,
)
from y9deploy.pipelines.sources.file_frames import FrameTally, file_frames

POLICIES = ("latest", "queue")
log = logging.getLogger("y9deploy")


@dataclass(frozen=True)
class ReconnectPolicy:
    """Back-off for reopening a lost live source: waits ``initial_s``, then ``factor`` times longer each
    attempt up to ``max_s``; gives up after ``attempts`` failed attempts in a row (None: never)."""

    attempts: int | None = 10
    initial_s: float = 0.5
    max_s: float = 10.0
    factor: float = 2.0

    def __post_init__(self) -> None:
        if self.attempts is not None and self.attempts < 0:
            raise ValueError(
                f"ReconnectPolicy.attempts={self.attempts}; expected 0 or more, or None (forever)."
            )
        if not (0 <= self.initial_s <= self.max_s) or self.factor < 1:
            raise ValueError(
                f"ReconnectPolicy(initial_s={self.initial_s}, max_s={self.max_s}, factor={self.factor}); "
                "expected 0 <= initial_s <= max_s and factor >= 1."
            )

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt ``attempt`` (1, 2, ...)."""
        return min(self.max_s, self.initial_s * self.factor ** (attempt - 1))


@dataclass
class Frame:
    """One frame: ``index`` (position in the source; keeps counting across reconnects), ``image``
    (ndarray[H, W, 3] uint8 BGR), ``captured`` (``time.time()`` when decoded), ``decode_ms``, ``name``
    (the source, or the image file for a folder of frames)."""

    index: int
    image: np.ndarray
    captured: float
    decode_ms: float
    name: str


@dataclass
class ReaderStats:
    """Counters of a ``FrameReader``: frames ``read`` (decoded), ``dropped`` (``latest`` policy),
    ``reconnects`` (successful), ``skipped`` (unreadable files of a folder, and a video file of which frames could
    not be decoded: (path, reason)), ``events`` (every reconnect/skip message), ``tally`` (a video file's frames
    decoded out of those it declares, see ``file_frames``)."""

    read: int = 0
    dropped: int = 0
    reconnects: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    tally: FrameTally = field(default_factory=FrameTally)


class _Mailbox:
    """Frames handed from the reader thread to the consumer by ``policy``."""

    def __init__(self, policy: str, size: int) -> None:
        self.policy, self.size = policy, size
        self.items: deque[Frame] = deque()
        self.cond = threading.Condition()
        self.closed = False
        self.dropped = 0

    def put(self, item: Frame, stop: threading.Event) -> None:
        with self.cond:
            if self.policy == "latest":
                while self.items:
                    self.items.popleft()
                    self.dropped += 1
            else:
                while len(self.items) >= self.size and not stop.is_set():
                    self.cond.wait(0.05)
            self.items.append(item)
            self.cond.notify_all()

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def get(self, timeout: float | None = None) -> Frame | None:
        """The next frame; None when the reader has finished (or after ``timeout`` without one)."""
        with self.cond:
            if not self.cond.wait_for(lambda: self.items or self.closed, timeout):
                return None
            item = self.items.popleft() if self.items else None
            self.cond.notify_all()
            return item


class FrameReader:
    """Frames of a video file, a folder of frames, a stream URL or a camera, decoded in a thread.

    Args:
        source: a video file, a folder of images (sorted by name), a stream URL (rtsp://, http://, ...) or a
            camera index (int or "0").
        policy: ``"latest"`` or ``"queue"`` (module docstring); None: latest for live sources, else queue.
        stride: keep every ``stride``-th frame of a file or folder (live sources: every frame is read).
        max_frames: stop after this many frames (None: until the end, or ``stop()``).
        queue_size: frames pending at most with ``queue``.
        reconnect: back-off for a lost live source.
        timeout_s: open/read timeout for streams.
        on_event: called with each reconnect / skip message (default: a warning on the ``y9deploy`` logger).
    Raises (on construction, so a bad source fails before any work): FileNotFoundError, SourceError.
    """

    def __init__(
        self,
        source: str | Path | int,
        *,
        policy: str | None = None,
        stride: int = 1,
        max_frames: int | None = None,
        queue_size: int = 32,
        reconnect: ReconnectPolicy | None = None,
        timeout_s: float = 5.0,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        policy = policy or ("latest" if is_live(source) else "queue")
        if policy not in POLICIES:
            raise ValueError(f"policy={policy!r}; expected one of {', '.join(POLICIES)}.")
        if int(stride) < 1 or queue_size < 1:
            raise ValueError(f"stride={stride!r}, queue_size={queue_size!r}; expected 1 or more.")
        self.source, self.policy, self.stride, self.max_frames = source, policy, int(stride), max_frames
        self.live = is_live(source)
        self.reconnect = reconnect or ReconnectPolicy()
        self.timeout_s = timeout_s
        self.on_event = on_event or (lambda msg: log.warning(msg))
        self.stats = ReaderStats()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._box = _Mailbox(policy, queue_size)
        self._files: list[Path] | None = None
        self._cap: cv2.VideoCapture | None = None
        path = None if self.live else Path(str(source))
        if path is not None and path.is_dir():
            self._files = sorted(
                p for p in path.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES
            )
            if not self._files:
                raise SourceError(f"folder {path} holds no image file ({', '.join(IMAGE_SUFFIXES)}).")
            self.fps, self.frame_count = 30.0, len(self._files)
        else:
            self._cap = open_capture(source, timeout_s=timeout_s)
            self.fps = float(self._cap.get(cv2.CAP_PROP_FPS) or 0.0) or 30.0
            count = int(self._cap.get(cv2.CAP_PROP_FRAME_COUNT))
            self.frame_count = count if count > 0 and not self.live else None
        self._thread = threading.Thread(target=self._run, name=f"y9-reader:{source}", daemon=True)
        self._thread.start()

    @property
    def expected_frames(self) -> int | None:
        """How many frames iteration will yield (None for live sources)."""
        return expected_frames(self.frame_count, self.stride, self.max_frames)

    # ------------------------------------------------------------------ reader thread
    def _event(self, message: str) -> None:
        self.stats.events.append(message)
        self.on_event(message)

    def _deliver(self, index: int, image: np.ndarray, t0: float, name: str) -> bool:
        """Hand one frame over; False when iteration must end (max_frames reached or stop)."""
        self.stats.read += 1
        self._box.put(Frame(index, image, time.time(), (time.perf_counter() - t0) * 1e3, name), self._stop)
        done = self.max_frames is not None and self.stats.read >= self.max_frames
        return not done and not self._stop.is_set()

    def _run(self) -> None:
        try:
            if self._files is not None:
                self._read_folder(self._files)
            else:
                self._read_capture()
        except BaseException as exc:  # handed to the consumer, raised there
            self.error = exc
        finally:
            if self._cap is not None:
                self._cap.release()
            self._box.close()

    def _read_folder(self, files: list[Path]) -> None:
        from y9deploy.runtime.image_file import read_image

        for index in range(0, len(files), self.stride):
            t0 = time.perf_counter()
            try:
                image = read_image(files[index])
            except (OSError, ValueError) as exc:
                self.stats.skipped.append((str(files[index]), str(exc)))
                self._event(f"skipped {files[index]}: {exc}")
                continue
            if not self._deliver(index, image, t0, str(files[index])):
                return

    def _read_capture(self) -> None:
        if not self.live:
            self._read_file()
            return
        index = 0
        while not self._stop.is_set():
            t0 = time.perf_counter()
            assert self._cap is not None
            ok, image = self._cap.read()
            if ok and image is not None:
                if not self._deliver(index, image, t0, str(self.source)):
                    return
                index += 1
                continue
            if not self._reopen():
                return

    def _read_file(self) -> None:
        """Every frame position of a video file (``file_frames``); frames that could not be decoded are reported
        (an event, and an entry of ``stats.skipped``) once the file has been read to its end."""
        assert self._cap is not None
        tally = self.stats.tally
        tally.expected = self.frame_count
        t0 = time.perf_counter()
        for index, image in file_frames(self._cap, tally, stride=self.stride):
            if image is not None and not self._deliver(index, image, t0, str(self.source)):
                return
            if self._stop.is_set():
                return
            t0 = time.perf_counter()
        short = tally.shortfall(self.source)
        if short is not None:
            self.stats.skipped.append((str(self.source), short))
            self._event(short)

    def _reopen(self) -> bool:
        """Reopen a lost live source with back-off; False when stopped or out of attempts."""
        assert self._cap is not None
        self._cap.release()
        self._event(f"lost {self.source}: no frame could be read (connection closed, or nothing within "
                    f"{self.timeout_s:g} s); reconnecting")  # fmt: skip
        attempt = 0
        while self.reconnect.attempts is None or attempt < self.reconnect.attempts:
            attempt += 1
            if self._stop.wait(self.reconnect.delay(attempt)):
                return False
            try:
                self._cap = open_capture(self.source, timeout_s=self.timeout_s)
            except (SourceError, OSError) as exc:
                self._event(f"reconnect attempt {attempt} to {self.source} failed: {exc}")
                continue
            self.stats.reconnects += 1
            self._event(
                f"reconnected to {self.source} (attempt {attempt}; reconnect {self.stats.reconnects})"
            )
            return True
        raise SourceError(f"gave up on {self.source} after {attempt} failed reconnect attempts; see the "
                          "messages above for the reasons.")  # fmt: skip

    # ------------------------------------------------------------------ consumer side
    def get(self, timeout: float | None = None) -> Frame | None:
        """The next frame (blocks); None at the end. Re-raises an error of the reader thread."""
        item = self._box.get(timeout)
        self.stats.dropped = self._box.dropped
        if item is None and self._box.closed:
            self._thread.join(1.0)
            if self.error is not None:
                err, self.error = self.error, None
                raise err
        return item

    @property
    def finished(self) -> bool:
        """The reader thread has ended and every frame has been taken."""
        return self._box.closed and not self._box.items

    @property
    def reading(self) -> bool:
        """The reader thread is still running."""
        return self._thread.is_alive()

    def ready(self) -> int:
        """Frames waiting now."""
        return len(self._box.items)

    def __iter__(self) -> Iterator[Frame]:
        while True:
            item = self.get()
            if item is None:
                if self._box.closed:
                    return
                continue
            yield item

    def stop(self) -> None:
        """Ask the thread to finish; returns once it has (at most the stream's read timeout)."""
        self._stop.set()
        self._box.close()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(self.timeout_s + 1)

    close = stop

    def __enter__(self) -> FrameReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
