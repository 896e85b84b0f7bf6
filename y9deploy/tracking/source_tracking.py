"""Tracking and counting over one video or stream: the tracker, the counting rules, the trails drawn.

    opts = TrackOptions("bytetrack", lines=(CountLine.parse("0,120,320,120"),))
    run = SourceTracking(opts, fps=reader.fps)
    for f in reader:                                  # video.FrameReader frames
        tracked = run.step(detector.predict(f.image), frame_time(f, reader.fps, reader.live), f.image)
        annotated = run.draw(f.image, tracked)        # boxes with "#id class", trails, lines, zones, counts
    run.summary()                                     # counting.CountSummary

Time of a frame (``frame_time``): a file's frames (and a folder's) are at ``index / fps``, the video's own clock,
whatever the reader kept or dropped; a live source's frames at their capture time (``Frame.captured``). The
tracker is told these times, so frames dropped by the ``latest`` policy become a longer prediction step, not
lost tracks.

Reconnects (live sources): tracks are kept across a reconnect and the tracker sees the real gap in the capture
times: objects seen again within ``TrackerOptions.lost_seconds`` (1 s by default) of their last sighting keep
their ids and their counting state; after a longer outage their tracks have ended and they get new ids (a line
they had not finished crossing is not counted twice: a new track has no side until it is seen).
"""

from __future__ import annotations

import warnings
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from y9core.model_facts import FactsWarning
from y9deploy.detections import Detections
from y9deploy.tracking.counting import Counting, CountLine, CountSummary, Zone, anchors
from y9deploy.tracking.options import TrackerKind, TrackerOptions
from y9deploy.tracking.tracker import TrackedDetections, make_tracker


@dataclass(frozen=True)
class TrackOptions:
    """What to do on tracks: the ``tracker`` kind, counting ``lines`` and ``zones``, tracker ``options``, and
    ``trail`` (how many past positions of each track the annotated video shows)."""

    tracker: TrackerKind = TrackerKind.bytetrack
    lines: tuple[CountLine, ...] = ()
    zones: tuple[Zone, ...] = ()
    options: TrackerOptions = field(default_factory=TrackerOptions)
    trail: int = 30

    def __post_init__(self) -> None:
        object.__setattr__(self, "tracker", TrackerKind(self.tracker))
        object.__setattr__(self, "lines", tuple(self.lines))
        object.__setattr__(self, "zones", tuple(self.zones))


def track_stream(results: Any, tracker: str, fps: float) -> Any:
    """``Detector.predict_stream(..., track=)``: the ``list[Detections]`` of consecutive batches of one video
    -> one ``list[TrackedDetections]`` per batch, frame k at time ``k / fps``. (Camera-motion compensation needs
    the frames, which the stream does not keep: use ``Detector.track`` for ``botsort`` with it.)"""
    run = SourceTracking(TrackOptions(tracker), fps=fps)
    k = 0
    for batch in results:
        out = []
        for dets in batch:
            out.append(run.step(dets, k / fps))
            k += 1
        yield out


def frame_time(frame: Any, fps: float, live: bool) -> float:
    """The time (seconds) a ``frame_reader.Frame`` stands for: capture time for a live source, else ``index / fps``."""
    return float(frame.captured) if live else frame.index / float(fps)


class SourceTracking:
    """Tracker, counting rules and trails of one source (module docstring)."""

    def __init__(self, options: TrackOptions, *, fps: float) -> None:
        self.options = options
        self.tracker = make_tracker(options.tracker, fps=fps, options=options.options)
        self.counting = Counting(list(options.lines), list(options.zones))
        self.trails: dict[int, deque[tuple[int, int]]] = {}
        self.seen: dict[int, int] = {}  # track id -> the frame it was last seen on
        self.frames = 0

    def step(self, dets: Detections, t: float | None = None, frame: np.ndarray | None = None) -> TrackedDetections:
        """Track one frame's detections and count them."""
        if self.frames == 0 and frame is not None and self.counting:
            for text in self.counting.outside(*frame.shape[:2]):
                warnings.warn(text, FactsWarning, stacklevel=2)  # once, on the first frame
        ids = self.tracker.update(dets, t, frame)
        counts = self.counting.update(dets, ids, t) if self.counting else None
        self.frames += 1
        for (x, y), tid in zip(anchors(dets), ids.tolist()):
            if tid >= 0:
                self.trails.setdefault(tid, deque(maxlen=max(1, self.options.trail))).append((int(x), int(y)))
                self.seen[tid] = self.frames
        for tid in [k for k, n in self.seen.items() if self.frames - n > self.options.trail]:
            del self.trails[tid], self.seen[tid]  # bounded memory on long streams
        return TrackedDetections(dets, ids, t, counts)

    def summary(self) -> CountSummary:
        return self.counting.summary()

    def draw(self, frame: np.ndarray, tracked: TrackedDetections) -> np.ndarray:
        """An annotated copy: boxes labelled ``#id class score``, trails, the lines with their in/out totals and
        the zones with how many are inside."""
        from y9deploy.draw import class_color, draw_detections

        dets, ids = tracked.detections, tracked.track_id
        out = draw_detections(frame, dets, show_labels=False, show_scores=False)
        font = cv2.FONT_HERSHEY_SIMPLEX
        for box, tid, name, score in zip(dets.xyxy, ids.tolist(), dets.class_names, dets.confidence.tolist()):
            label = f"#{tid} {name} {score:.2f}" if tid >= 0 else f"{name} {score:.2f}"
            x1, y1 = int(box[0]), max(10, int(box[1]) - 3)
            cv2.putText(out, label, (x1, y1), font, 0.4, (255, 255, 255), 1, cv2.LINE_AA)
        for tid in set(ids.tolist()) - {-1}:
            pts = self.trails.get(tid)
            if pts and len(pts) > 1:
                cv2.polylines(out, [np.asarray(pts, np.int32)], False, class_color(tid), 2, cv2.LINE_AA)
        counts = tracked.counts
        for line in self.options.lines:
            a, b = tuple(int(v) for v in line.start), tuple(int(v) for v in line.end)
            cv2.line(out, a, b, (0, 255, 255), 2, cv2.LINE_AA)
            if counts is not None:
                c = counts.lines[line.name]
                text = f"in {sum(c['in'].values())} out {sum(c['out'].values())}"
                cv2.putText(out, text, (a[0] + 3, max(12, a[1] - 4)), font, 0.45, (0, 255, 255), 1, cv2.LINE_AA)
        for zone in self.options.zones:
            poly = np.asarray(zone.polygon, np.int32)
            cv2.polylines(out, [poly], True, (255, 128, 0), 2, cv2.LINE_AA)
            if counts is not None:
                n = counts.zones[zone.name]["count"]
                x, y = poly[:, 0].min(), poly[:, 1].min()
                cv2.putText(out, f"{n} inside", (int(x) + 3, int(y) + 14), font, 0.45, (255, 128, 0), 1, cv2.LINE_AA)
        return out
