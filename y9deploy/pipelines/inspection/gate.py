"""A counting gate: the rules file judged over time windows of a video or stream, on tracks.

    rules, thresholds = gate_rules(ruleset, det.names)
    gate = Gate(rules, ruleset.window_s, "gate.mp4")
    for each frame at time t:                        # tracked by source_tracking.SourceTracking
        for verdict in gate.add(tracking.step(kept, t), t):
            audit.write(verdict)                     # a window is judged once a frame of a later one arrives
    last = gate.finish()                             # the window in progress (partial), or None

One audit item is one window of ``window_s`` seconds of the source's own time (a file's ``index / fps``, a live
source's capture time), counted from its first frame: window k holds the frames with ``k * window_s <= t - t0 <
(k + 1) * window_s``. Per window and rule:
- a line rule (``line: gate``, optionally ``direction: in|out``) counts the crossings of that line by tracks of its
  classes whose crossing falls in the window (the crossing as ``counting.Counting`` decides it: on the track, once);
- any other rule counts the distinct tracks of its classes seen inside its region (the whole frame without one) on
  some frame of the window, with the image rules' own test (box centre, or ``overlap``). A track that stays inside
  counts in every window it is seen in: ``max: 0`` is "the zone stays empty".
Detections without a track (a flicker, a new object's first frame) are not counted. A window fails when a count is
below ``min`` or above ``max``. A window in which no frame arrived (a live source that stalled) gets the verdict
``error``; the window in progress when the source ends or the run is stopped is judged on what it saw, and marked
``partial`` when its frames did not reach its end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from y9core.wording import plural
from y9deploy.pipelines.inspection.frame_rules import Rule, Thresholds
from y9deploy.pipelines.inspection.ruleset import RuleSet
from y9deploy.tracking.counting import CountLine, Zone
from y9deploy.tracking.regions import Region
from y9deploy.tracking.tracker import TrackedDetections

PASS, FAIL, ERROR = "pass", "fail", "error"
EDGE = 1e-9  # a frame within this fraction of a window of its end belongs to the next window (float rounding)


@dataclass(frozen=True)
class GateRule:
    """A rule of the file over windows: the image ``rule`` (its classes, region and limits) and, for a line rule,
    the ``line`` and the ``direction`` (``"in"``, ``"out"``, None: both) whose crossings it counts."""

    rule: Rule
    line: CountLine | None = None
    direction: str | None = None

    @property
    def name(self) -> str:
        return self.rule.name

    def counted(self, n: int) -> str:
        """``"2 crossings of gate going in"``, ``"1 track in dock"``, ``"0 tracks in the frame"``."""
        if self.line is not None:
            going = f" going {self.direction}" if self.direction else ""
            return f"{plural(n, 'crossing')} of {self.line.name}{going}"
        region = self.rule.region
        return f"{plural(n, 'track')} in {region.name if region is not None else 'the frame'}"


def gate_rules(ruleset: RuleSet, names: list[str]) -> tuple[list[GateRule], Thresholds]:
    """The rules file bound to the model's class ``names`` (``RuleSet.bind``), each rule with its line."""
    rules, thresholds = ruleset.bind(names)
    out = [
        GateRule(rule, ruleset.lines[spec.count_line] if spec.count_line else None, spec.direction)
        for rule, spec in zip(rules, ruleset.rules, strict=True)
    ]
    return out, thresholds


def region_zone(region: Region) -> Zone:
    """A region of the file as a counting ``Zone`` (a rect becomes its four corners)."""
    if region.polygon is not None:
        return Zone(region.name, region.polygon)
    x1, y1, x2, y2 = region.rect  # type: ignore[misc]
    return Zone(region.name, np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]], np.float64))


def seconds_text(t: float) -> str:
    """``0.2``, ``60``, ``12.345`` (milliseconds at most, no trailing zeros)."""
    return f"{t:.3f}".rstrip("0").rstrip(".")


@dataclass
class WindowVerdict:
    """The verdict on one window of a video or stream (an audit item, as ``run.ItemVerdict``).

    ``counts``: rule -> count; ``detections``: what was counted, one dict per crossing (``rule``, ``line``,
    ``direction``, ``track_id``, ``class_name``, ``time_s``) or per track (``rule``, ``region``, ``track_id``,
    ``class_name``, ``time_s`` of its first frame in the window); ``start_s``/``end_s``: the window in seconds from
    the source's first frame; ``started``: its start as a UTC time (live sources; None for files); ``frames``:
    frames judged; ``partial``: the source ended or the run stopped before ``end_s``; ``seconds``: the time spent
    on its frames."""

    item: str
    verdict: str
    reasons: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    detections: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    source: str = ""
    window: int = 0
    start_s: float = 0.0
    end_s: float = 0.0
    started: str | None = None
    frames: int = 0
    partial: bool = False


class _Window:
    """What one window has seen so far."""

    def __init__(self, index: int, rules: list[GateRule]) -> None:
        self.index = index
        self.frames = 0
        self.last = 0.0  # time of its last frame, seconds from the source's first frame
        self.seconds = 0.0
        self.found: dict[str, list[dict[str, Any]]] = {g.name: [] for g in rules}
        self.tracks: dict[str, set[int]] = {g.name: set() for g in rules}


class Gate:
    """The windows of one source (module docstring). ``live``: times are capture times (``started`` is set);
    ``frame_s``: the time one frame stands for (``1 / fps``; a last window whose last frame reaches its end is
    not partial)."""

    def __init__(
        self, rules: list[GateRule], window_s: float, source: str, *, live: bool = False, frame_s: float = 0.0
    ) -> None:
        if not (window_s > 0 and math.isfinite(window_s)):
            raise ValueError(f"window_s={window_s}; expected the seconds of one window, above 0.")
        if not rules:
            raise ValueError("Gate() got no rules; expected at least one GateRule.")
        self.rules, self.window_s, self.source, self.live = list(rules), float(window_s), str(source), live
        self.frame_s = float(frame_s)
        self.t0: float | None = None
        self.current: _Window | None = None
        self.windows = 0  # judged so far

    def add(self, tracked: TrackedDetections, t: float, seconds: float = 0.0) -> list[WindowVerdict]:
        """One tracked frame at time ``t`` (seconds; increasing) -> the windows that ended before it, judged."""
        if self.t0 is None:
            self.t0 = float(t)
        k = max(0, math.floor((float(t) - self.t0) / self.window_s + EDGE))
        out: list[WindowVerdict] = []
        if self.current is not None and k > self.current.index:
            out.append(self._judge(self.current, partial=False))
            out += [self._judge(_Window(j, self.rules), partial=False) for j in range(self.current.index + 1, k)]
            self.current = None
        if self.current is None:
            self.current = _Window(k, self.rules)
        self._count(self.current, tracked, float(t) - self.t0)
        self.current.seconds += seconds
        return out

    def finish(self) -> WindowVerdict | None:
        """The window in progress, judged on what it saw and marked partial (None: no frame since the last)."""
        if self.current is None:
            return None
        window, self.current = self.current, None
        end = (window.index + 1) * self.window_s
        return self._judge(window, partial=window.last + self.frame_s < end - EDGE * self.window_s)

    def _count(self, w: _Window, tracked: TrackedDetections, rel: float) -> None:
        w.frames += 1
        w.last = rel
        dets, ids = tracked.detections, tracked.track_id
        names = dets.class_names
        crossed = tracked.counts.crossed if tracked.counts is not None else {}
        for g in self.rules:
            if g.line is not None:
                allowed = None if g.rule.classes is None else {dets.name_of(c) for c in g.rule.classes}
                for c in crossed.get(g.line.name, []):
                    if (allowed is None or c["class_name"] in allowed) and g.direction in (None, c["direction"]):
                        w.found[g.name].append({"rule": g.name, "line": g.line.name, "direction": c["direction"],
                                                "track_id": c["track_id"], "class_name": c["class_name"],
                                                "time_s": round(rel, 6)})  # fmt: skip
                continue
            region = g.rule.region
            for i in np.flatnonzero(g.rule.select(dets) & (ids >= 0)):
                tid = int(ids[i])
                if tid not in w.tracks[g.name]:
                    w.tracks[g.name].add(tid)
                    w.found[g.name].append({"rule": g.name, "region": region.name if region is not None else None,
                                            "track_id": tid, "class_name": names[i], "time_s": round(rel, 6)})  # fmt: skip

    def _judge(self, w: _Window, *, partial: bool) -> WindowVerdict:
        start, end = w.index * self.window_s, (w.index + 1) * self.window_s
        started = None
        if self.live and self.t0 is not None:
            started = datetime.fromtimestamp(self.t0 + start, timezone.utc).isoformat(timespec="milliseconds")
        v = WindowVerdict(f"{self.source} {seconds_text(start)}-{seconds_text(end)} s", PASS, source=self.source,
                          window=w.index, start_s=round(start, 6), end_s=round(end, 6), started=started,
                          frames=w.frames, partial=partial, seconds=round(w.seconds, 6))  # fmt: skip
        self.windows += 1
        if not w.frames:
            v.verdict = ERROR
            v.reasons.append(f"no frame of {self.source} arrived in this window (the source stalled or was lost); "
                             "nothing was judged.")  # fmt: skip
            return v
        for g in self.rules:
            found = w.found[g.name]
            n = len(found)
            v.counts[g.name] = n
            v.detections += found
            listed = ", ".join(_event(e) for e in found)
            if g.rule.max_count is not None and n > g.rule.max_count:
                v.reasons.append(f"{g.name}: {g.counted(n)} (at most {g.rule.max_count} allowed): {listed}.")
            elif n < g.rule.min_count:
                v.reasons.append(f"{g.name}: {g.counted(n)} (at least {g.rule.min_count} required)"
                                 f"{': ' + listed if listed else ''}.")  # fmt: skip
        v.verdict = FAIL if v.reasons else PASS
        return v


def _event(e: dict[str, Any]) -> str:
    """``#3 zebra in at 0.4 s`` (a crossing) or ``#2 person at 1.2 s`` (a track, first seen then)."""
    going = f" {e['direction']}" if "direction" in e else ""
    return f"#{e['track_id']} {e['class_name']}{going} at {seconds_text(e['time_s'])} s"
