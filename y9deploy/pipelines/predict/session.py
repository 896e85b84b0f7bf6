"""The state one ``predict_source`` run shares between its images and videos, and the loops that feed them.

``PredictSession.images`` reads images ``batch`` at a time, ``PredictSession.video`` reads a video file, stream
or camera through a ``frame_reader.FrameReader``; each frame's detections go to the ``ResultsWriter`` (one JSON line),
to the ``PredictionFiles`` (labels, crops, COCO rows) and, with an ``out_dir``, into an annotated copy whose name
never resolves to an input file. An unreadable input is skipped and listed in the ``PredictSummary``.
``run.predict_source`` makes one and fills its summary.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import cv2
import numpy as np

from y9core.images.write import write_image
from y9deploy.pipelines.predict.files import PredictionFiles
from y9deploy.pipelines.predict.results import ResultsWriter
from y9deploy.pipelines.sources.file_frames import check_video_written
from y9deploy.pipelines.sources.frame_reader import IMAGE_SUFFIXES, FrameReader, is_live
from y9deploy.pipelines.sources.kinds import is_url, read_url_image

if TYPE_CHECKING:
    from y9deploy.pipelines.predict.summary import PredictSummary


def _unique(save_dir: Path, name: str, used: set[str], inputs: set[Path]) -> Path:
    stem, suffix = Path(name).stem, Path(name).suffix
    candidate, k = name, 1
    while candidate in used or (save_dir / candidate).resolve() in inputs or (save_dir / candidate).exists():
        candidate = f"{stem}_{k}{suffix}"
        k += 1
    used.add(candidate)
    return save_dir / candidate


def _url_file_name(url: str) -> str:
    """The annotated copy's name for an image URL: the URL path's last part, with an image extension."""
    name = Path(urlsplit(url).path).name or "image"
    return name if Path(name).suffix.lower() in IMAGE_SUFFIXES else f"{name}.jpg"


def _chunks(items: list[Any], n: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


@dataclass
class PredictSession:
    """The state one ``predict_source`` run shares between its images and videos."""

    run: Callable[[list[np.ndarray]], list[Any]]  # frames -> Detections (whole frames or tiled)
    writer: ResultsWriter
    summary: PredictSummary
    out_dir: Path | None  # annotated copies go here (None: none written)
    inputs: set[Path]
    stop: threading.Event
    batch: int
    warn: Callable[[str], None]
    on_frame: Callable[[str, int], None] | None
    track: Any = None  # y9deploy.tracking.source_tracking.TrackOptions
    files: PredictionFiles | None = None  # label files, crops, COCO rows
    # called with each frame's (source, frame index, image, Detections, track ids or None) once its files are written
    on_result: Callable[[str, int | None, np.ndarray, Any, Any], None] | None = None
    last_done: dict[str, int] = field(default_factory=dict)  # video -> last frame a resumed run had done
    used: set[str] = field(default_factory=set)
    draw: dict[str, Any] = field(default_factory=dict)  # draw_detections' options for the annotated copies

    def record(self, name: str, index: int | None, dets: Any, **kw: Any) -> None:
        self.writer.write(name, index, dets, **kw)
        self.summary.frames += 1
        self.summary.detections += len(dets)
        if self.on_frame is not None:
            self.on_frame(name, len(dets))

    def skip(self, source: Any, exc: BaseException) -> None:
        self.summary.skipped.append((str(source), str(exc)))
        self.warn(f"skipped {source}: {exc}")

    def images(self, images: list[Path | str]) -> None:
        """Images ``batch`` at a time (files, or an image URL read once); an unreadable one is skipped."""
        from y9deploy.draw import draw_detections
        from y9deploy.runtime.image_file import read_image

        for chunk in _chunks(images, self.batch):
            if self.stop.is_set():
                return
            frames, paths, read_ms = [], [], []
            for path in chunk:
                t = time.perf_counter()
                try:
                    frames.append(read_url_image(path) if is_url(path) else read_image(path))
                except (OSError, ValueError) as exc:
                    self.skip(path, exc)
                    continue
                paths.append(path)
                read_ms.append((time.perf_counter() - t) * 1e3)
            if not frames:
                continue
            t = time.perf_counter()
            results = self.run(frames)
            infer_ms = (time.perf_counter() - t) * 1e3 / len(frames)
            for path, frame, dets, r_ms in zip(paths, frames, results, read_ms):
                self.record(str(path), None, dets, timing={"read": r_ms, "infer": infer_ms})
                if self.files is not None:
                    self.files.add(str(path), None, frame, dets)
                self.summary.images += 1
                if self.out_dir is not None:
                    name = _url_file_name(path) if is_url(path) else Path(path).name
                    out = _unique(self.out_dir, name, self.used, self.inputs)
                    write_image(out, draw_detections(frame, dets, **self.draw))  # an OSError names the file and stops
                    self.summary.outputs.append(out)
                if self.on_result is not None:
                    self.on_result(str(path), None, frame, dets, None)

    def video(self, video: str | Path, reading: dict[str, Any]) -> None:
        """One video file, stream or camera through a ``FrameReader`` (``reading``: its options): the frames
        ready at each step, up to ``batch``, go through the Detector together; one JSON line per frame."""
        from y9deploy.draw import draw_detections

        live = is_live(video)
        try:
            reader = FrameReader(video, **reading)
        except (OSError, ValueError) as exc:
            if live:
                raise
            self.skip(video, exc)
            return
        writer, out, written = None, None, 0
        if self.out_dir is not None:
            name = f"{Path(str(video)).stem if not live else 'stream'}.mp4"
            out = _unique(self.out_dir, name, self.used, self.inputs)
        tracking = None
        if self.track is not None:
            from y9deploy.tracking.source_tracking import SourceTracking, frame_time

            try:
                tracking = SourceTracking(self.track, fps=reader.fps)
            except BaseException:  # no tracker (scipy missing ...): the reader thread stops before the error leaves
                reader.stop()
                raise
        try:
            while not self.stop.is_set():
                frames = self._next_frames(reader)
                if frames is None:
                    break
                if str(video) in self.last_done:  # resumed: the frames done are decoded, not predicted again
                    kept = [f for f in frames if f.index > self.last_done[str(video)]]
                    self.summary.resumed += len(frames) - len(kept)
                    frames = kept
                if not frames:
                    continue
                t = time.perf_counter()
                results = self.run([f.image for f in frames])
                infer_ms = (time.perf_counter() - t) * 1e3 / len(frames)
                for f, dets in zip(frames, results):
                    latency = (time.time() - f.captured) * 1e3
                    extra, image = {}, None
                    if tracking is not None:
                        tracked = tracking.step(dets, frame_time(f, reader.fps, live), f.image)
                        extra = {"track_id": tracked.track_id, "counts": tracked.counts}
                        image = tracking.draw(f.image, tracked) if out is not None else None
                    self.record(str(video), f.index, dets, captured=f.captured if live else None,
                                timing={"decode": f.decode_ms, "infer": infer_ms, "latency": latency},
                                **extra)  # fmt: skip
                    if self.files is not None:
                        self.files.add(str(video), f.index, f.image, dets)
                    if out is not None:
                        if writer is None:
                            h, w = f.image.shape[:2]
                            fps = reader.fps / (1 if live else reader.stride)
                            writer = cv2.VideoWriter(str(out), cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))
                            if not writer.isOpened():
                                raise OSError(f"cannot write the annotated video {out}: OpenCV's video writer could "
                                              "not open it (an unwritable folder, a full disk, or no mp4v encoder).")
                        writer.write(image if image is not None else draw_detections(f.image, dets, **self.draw))
                        written += 1
                    if self.on_result is not None:
                        self.on_result(str(video), f.index, f.image, dets, extra.get("track_id"))
        finally:
            reader.stop()
            self.summary.dropped += reader.stats.dropped
            self.summary.reconnects += reader.stats.reconnects
            self.summary.skipped += reader.stats.skipped
            if tracking is not None and tracking.counting:
                self.summary.counts[str(video)] = tracking.summary()
            if writer is not None:
                writer.release()
                self.summary.outputs.append(out)  # type: ignore[arg-type]
        if writer is not None:
            check_video_written(out, written)  # type: ignore[arg-type]
        self.summary.videos += 1

    def _next_frames(self, reader: FrameReader) -> list[Any] | None:
        """The frames ready now, up to ``batch`` (waits for the first); [] none yet; None at the end."""
        first = reader.get(timeout=0.2)
        if first is None:
            return None if reader.finished else []  # get() has re-raised a reader error, if any
        frames = [first]
        while len(frames) < self.batch and reader.ready():
            nxt = reader.get(timeout=0)
            if nxt is None:
                break
            frames.append(nxt)
        return frames
