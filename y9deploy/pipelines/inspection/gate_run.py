"""The counting gate over a video file, a stream or a camera (``y9 inspect`` on a video source).

    result = run_gate("rtsp://cam/gate", detector, load_rules("gate.yaml"), emit=audit.write)
    result.windows, result.counts.lines["gate"]

Frames come through ``frame_reader.FrameReader`` with its policies: ``latest`` for streams and cameras (only the newest
frame waits for the model; older ones are dropped and counted), ``queue`` for files (every frame, in order). The
detections of each frame that meet the file's thresholds are tracked and counted on the file's lines and regions
(``source_tracking.SourceTracking``; the tracker is told each frame's time, a file's ``index / fps`` or a live source's
capture time, so frames dropped behind a slow model are a longer prediction step, not lost tracks), and
``gate.Gate`` judges each window as soon as a frame of a later one arrives: ``emit`` gets its verdict at
once. The window in progress when the source ends, the run is stopped (``stop``) or fails is judged too (partial).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from y9deploy.pipelines.inspection.gate import Gate, WindowVerdict, gate_rules, region_zone, seconds_text
from y9deploy.pipelines.inspection.ruleset import RuleSet
from y9deploy.pipelines.sources.frame_reader import VIDEO_SUFFIXES, FrameReader, ReconnectPolicy, is_live
from y9deploy.pipelines.sources.kinds import is_url, url_kind
from y9deploy.tracking.counting import CountSummary
from y9deploy.tracking.source_tracking import SourceTracking, TrackOptions, frame_time
from y9deploy.tracking.tracker import TrackerKind


@dataclass
class GateResult:
    """What ``run_gate`` did: ``windows`` judged (audit items), ``frames`` judged, ``dropped`` by the ``latest``
    policy, ``reconnects`` of a live source, and ``counts``: the line totals and zone visits of the whole run."""

    windows: int
    frames: int
    dropped: int
    reconnects: int
    counts: CountSummary


def is_video_source(source: str | Path | int) -> bool:
    """A video file (by suffix), a video or stream URL, or a camera index: what the gate judges by windows."""
    text = str(source)
    if is_live(text):
        return True
    if is_url(text):
        return url_kind(text) != "image"
    return Path(text).suffix.lower() in VIDEO_SUFFIXES


def run_gate(
    source: str | Path | int,
    detector: Any,
    ruleset: RuleSet,
    *,
    emit: Callable[[WindowVerdict], None],
    tracker: str | TrackerKind = TrackerKind.bytetrack,
    policy: str | None = None,
    reconnect: ReconnectPolicy | None = None,
    max_frames: int | None = None,
    stop: threading.Event | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> GateResult:
    """Judge ``source`` window by window with the rules of ``ruleset`` (module docstring).

    Args:
        detector: a ``Detector`` whose score threshold admits the file's lowest ``min_conf``.
        emit: called with each window's verdict as soon as it is judged (e.g. ``AuditLog.write``).
        tracker: ``bytetrack`` or ``botsort`` (``tracking.make_tracker``).
        policy, reconnect, max_frames: as ``FrameReader`` (policy None: latest for live sources, queue for files).
        stop: set it to end the run after the current frame (the window in progress is judged, partial).
        on_warning: reconnect and skip messages of the reader.
    Raises:
        FileNotFoundError, SourceError: the source cannot be opened (or a live one is lost for good);
        ValueError: a window shorter than one frame of a video file.
    """
    rules, thresholds = gate_rules(ruleset, list(detector.names))
    stop = stop or threading.Event()
    reader = FrameReader(source, policy=policy, reconnect=reconnect, max_frames=max_frames, on_event=on_warning)
    try:
        if not reader.live and ruleset.window_s < 1.0 / reader.fps:
            raise ValueError(f"window_s {seconds_text(ruleset.window_s)} of {ruleset.path} is shorter than one frame "
                             f"of {source} ({reader.fps:g} frames/s); expected at least "
                             f"{seconds_text(1.0 / reader.fps)} s.")  # fmt: skip
        options = TrackOptions(tracker, tuple(ruleset.lines.values()),
                               tuple(region_zone(r) for r in ruleset.regions.values()))  # fmt: skip
        tracking = SourceTracking(options, fps=reader.fps)
        gate = Gate(rules, ruleset.window_s, str(source), live=reader.live, frame_s=1.0 / reader.fps)
        frames = 0
        try:
            while not stop.is_set():
                f = reader.get(timeout=0.2)
                if f is None:
                    if reader.finished:
                        break
                    continue
                t0 = time.perf_counter()
                dets = detector.predict(f.image)
                kept = dets[thresholds.keep(dets)]
                t = frame_time(f, reader.fps, reader.live)
                tracked = tracking.step(kept, t, f.image)
                frames += 1
                for verdict in gate.add(tracked, t, time.perf_counter() - t0):
                    emit(verdict)
        finally:
            last = gate.finish()
            if last is not None:
                emit(last)
    finally:
        reader.stop()
    return GateResult(gate.windows, frames, reader.stats.dropped, reader.stats.reconnects, tracking.summary())
