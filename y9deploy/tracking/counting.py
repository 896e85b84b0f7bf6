"""Counting on tracks: objects crossing a line (in / out per class) and objects inside a zone (per frame, with
dwell time per track). Pure functions of the tracks: ``tracking`` gives the ids, this module counts.

    counter = Counting(lines=[CountLine.parse("0,120,320,120")], zones=[Zone.parse("40,40,200,40,200,200")])
    for f in frames:
        dets = detector.predict(f.image)
        ids = tracker.update(dets, t)
        frame_counts = counter.update(dets, ids, t)      # FrameCounts: crossings now, totals, zone occupancy
    counter.summary()                                    # CountSummary: per line and zone, JSON-able

Rules (shapes: points ``(x, y)`` in frame pixels):
- An object is a confirmed track (``id >= 0``); a detection without a track (a one-frame flicker, a new object's
  first frame) is not counted. Its position is its box centre (the anchor).
- Line ``(x1, y1) -> (x2, y2)``: a track's side is the sign of the cross product ``(p2 - p1) x (anchor - p1)``,
  taken only while the anchor's projection lies on the segment (between the perpendiculars through its ends:
  objects passing beyond the line's ends do not count). The first side seen is the track's side. A crossing is
  a side change confirmed: the track is seen on the other side ``CountLine.sightings`` times in a row (default
  ``CROSSING_SIGHTINGS`` = 2, as supervision's ``minimum_crossing_threshold=2``); then one crossing is counted, on
  the confirming frame, and the side flips. A sighting back on the old side before that cancels the change, so a
  slow object on the line whose box centre jitters by a pixel across it is not counted out, in and out. ``in``
  when the cross product turns negative (for a line drawn left to right on the image, ``in`` is upwards),
  ``out`` when it turns positive, as supervision's ``LineZone`` names them. A track that vanishes for some frames
  keeps its side and its pending sightings (the decision is on the track's sightings, not on consecutive
  frames), so a detection that flickers is never counted twice. ``sightings=1`` counts on the first sighting on
  the new side (the rule before issue 45's third pass).
- Zone (polygon, even-odd rule, edges inside): per frame, the tracks whose anchor is inside, per class. A visit
  starts on the first frame a track is inside and lasts until it is seen outside; its dwell time is the time
  from the first to the last frame it was seen inside; ``dwell`` of a track adds up its visits.
Classes: the class of the detection at the moment of the crossing (or in the zone).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from y9core.shorten import quoted, shorten
from y9core.wording import plural
from y9deploy.detections import Detections
from y9deploy.tracking.regions import Region, check_coords, outside_frame


def _floats(text: str, what: str) -> list[float]:
    try:
        vals = [float(v) for v in str(text).replace(" ", "").split(",") if v != ""]
    except ValueError:
        raise ValueError(f"{what} {quoted(text, 60)} is not a list of numbers; expected comma-separated pixel "
                         "coordinates such as 0,120,320,120.") from None  # fmt: skip
    check_coords(vals, f"{what} {quoted(text, 60)}")
    return vals


def _label(text: str) -> str:
    """The name of a line or zone given without one: its text, cut to a readable length."""
    return shorten(text, 60)


CROSSING_SIGHTINGS = 2  # sightings in a row on the new side that confirm a crossing (module docstring)


@dataclass(frozen=True)
class CountLine:
    """A counting line from ``start`` (x1, y1) to ``end`` (x2, y2), frame pixels; ``name`` names it in counts;
    ``sightings``: how many sightings in a row of a track on the other side make a crossing (module docstring)."""

    name: str
    start: tuple[float, float]
    end: tuple[float, float]
    sightings: int = CROSSING_SIGHTINGS

    def __post_init__(self) -> None:
        if isinstance(self.sightings, bool) or not isinstance(self.sightings, int) or self.sightings < 1:
            raise ValueError(f"line {quoted(self.name, 60)}: sightings={self.sightings!r}; expected a whole number "
                             "of at least 1 (sightings in a row on the new side that make a crossing).")  # fmt: skip
        check_coords([*self.start, *self.end], f"line {quoted(self.name, 60)}")
        if tuple(self.start) == tuple(self.end):
            raise ValueError(f"line {quoted(self.name, 60)} starts and ends at {tuple(self.start)}; expected two different "
                             "points x1,y1,x2,y2.")  # fmt: skip

    @classmethod
    def parse(cls, text: str, name: str | None = None, sightings: int = CROSSING_SIGHTINGS) -> CountLine:
        """``"x1,y1,x2,y2"`` -> CountLine (name: the text itself unless given)."""
        vals = _floats(text, "count line")
        if len(vals) != 4:
            raise ValueError(f"count line {quoted(text, 60)} has {len(vals)} numbers; expected 4: x1,y1,x2,y2.")
        return cls(name or _label(text), (vals[0], vals[1]), (vals[2], vals[3]), sightings)

    def sides(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Points ndarray[N, 2] -> (cross products ndarray[N], within the segment's extent ndarray[N] bool)."""
        p1, p2 = np.asarray(self.start, np.float64), np.asarray(self.end, np.float64)
        d, rel = p2 - p1, np.asarray(xy, np.float64).reshape(-1, 2) - p1
        cross = d[0] * rel[:, 1] - d[1] * rel[:, 0]
        along = (rel @ d) / float(d @ d)
        return cross, (along >= 0) & (along <= 1)


@dataclass(frozen=True, eq=False)
class Zone:
    """A counting zone: a polygon (ndarray[P, 2], P >= 3) in frame pixels."""

    name: str
    polygon: np.ndarray

    def __post_init__(self) -> None:
        region = Region(self.name, polygon=np.asarray(self.polygon, np.float64), kind="zone")  # points, bounds, area
        object.__setattr__(self, "polygon", region.polygon)
        object.__setattr__(self, "region", region)

    @classmethod
    def parse(cls, text: str, name: str | None = None) -> Zone:
        """``"x1,y1,x2,y2,x3,y3,..."`` (3 or more points) -> Zone (name: the text itself unless given)."""
        vals = _floats(text, "zone")
        if len(vals) < 6 or len(vals) % 2:
            raise ValueError(f"zone {quoted(text, 60)} has {len(vals):,} numbers; expected an even count of at least 6: "
                             "x1,y1,x2,y2,x3,y3,... (3 or more points).")  # fmt: skip
        return cls(name or _label(text), np.asarray(vals, np.float64).reshape(-1, 2))  # Region's sentence if bad

    def contains(self, xy: np.ndarray) -> np.ndarray:
        return self.region.contains_points(xy)  # type: ignore[attr-defined]


def _line_bounds(line: CountLine) -> tuple[float, float, float, float]:
    (x1, y1), (x2, y2) = line.start, line.end
    return min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)


def anchors(dets: Detections) -> np.ndarray:
    """Box centres ndarray[N, 2]: the point of each detection that lines and zones test."""
    b = dets.xyxy.astype(np.float64)
    return np.stack([(b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2], 1)


@dataclass
class FrameCounts:
    """What the counting rules saw on one frame: crossings on it (``crossed``: line -> list of
    ``{"track_id", "direction", "class_name"}``), the running totals per line (``lines``: line -> {"in": {class:
    n}, "out": {...}}) and the tracks inside each zone (``zones``: zone -> {"count", "by_class", "track_ids"})."""

    crossed: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    lines: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    zones: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"lines": self.lines, "crossed": self.crossed, "zones": self.zones}


class _LineState:
    def __init__(self, line: CountLine) -> None:
        self.line = line
        self.side: dict[int, bool] = {}  # track id -> True when its cross product is negative
        self.pending: dict[int, int] = {}  # track id -> sightings in a row on the other side, not yet a crossing
        self.totals: dict[str, dict[str, int]] = {"in": defaultdict(int), "out": defaultdict(int)}
        self.events: list[tuple[float | None, int, str, str]] = []  # (time, track id, direction, class)

    def update(self, ids: np.ndarray, xy: np.ndarray, names: list[str], t: float | None) -> list[dict[str, Any]]:
        cross, within = self.line.sides(xy)
        crossed = []
        for i in np.flatnonzero((ids >= 0) & within & (cross != 0)):
            tid, neg = int(ids[i]), bool(cross[i] < 0)
            before = self.side.setdefault(tid, neg)
            if before == neg:
                self.pending.pop(tid, None)  # back on its side: a change not confirmed is forgotten
                continue
            seen = self.pending.get(tid, 0) + 1
            if seen < self.line.sightings:
                self.pending[tid] = seen
                continue
            self.pending.pop(tid, None)
            self.side[tid] = neg
            direction = "in" if neg else "out"
            self.totals[direction][names[i]] += 1
            self.events.append((t, tid, direction, names[i]))
            crossed.append({"track_id": tid, "direction": direction, "class_name": names[i]})
        return crossed

    def snapshot(self) -> dict[str, dict[str, int]]:
        return {k: dict(sorted(v.items())) for k, v in self.totals.items()}


class _ZoneState:
    def __init__(self, zone: Zone) -> None:
        self.zone = zone
        self.enter: dict[int, float] = {}  # track id -> time its current visit began
        self.last_in: dict[int, float] = {}  # track id -> last time seen inside
        self.dwell: dict[int, float] = defaultdict(float)  # finished visits, seconds
        self.classes: dict[int, str] = {}
        self.peak = 0
        self.visits: list[tuple[float, int]] = []  # (time a visit began, track id)

    def update(self, ids: np.ndarray, xy: np.ndarray, names: list[str], t: float) -> dict[str, Any]:
        inside = self.zone.contains(xy) & (ids >= 0)
        for i in np.flatnonzero((ids >= 0) & ~inside):  # seen outside: the visit ends
            tid = int(ids[i])
            if tid in self.enter:
                self.dwell[tid] += self.last_in[tid] - self.enter.pop(tid)
        by_class: dict[str, int] = defaultdict(int)
        now = []
        for i in np.flatnonzero(inside):
            tid = int(ids[i])
            if tid not in self.enter:
                self.enter[tid] = t
                self.visits.append((t, tid))
            self.last_in[tid] = t
            self.classes[tid] = names[i]
            by_class[names[i]] += 1
            now.append(tid)
        self.peak = max(self.peak, len(now))
        return {"count": len(now), "by_class": dict(sorted(by_class.items())), "track_ids": sorted(now)}

    def dwell_of(self, tid: int) -> float:
        open_visit = self.last_in[tid] - self.enter[tid] if tid in self.enter else 0.0
        return self.dwell.get(tid, 0.0) + open_visit


@dataclass
class CountSummary:
    """Totals of a run: ``lines`` (line -> {"in": {class: n}, "out": {class: n}, "total_in", "total_out"}) and
    ``zones`` (zone -> {"visits" (tracks that entered), "peak" (most inside at once), "dwell_s" (track id ->
    seconds inside), "max_dwell_s", "by_class" (tracks that entered, per class)})."""

    lines: dict[str, dict[str, Any]] = field(default_factory=dict)
    zones: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"lines": self.lines, "zones": self.zones}

    def sentences(self) -> list[str]:
        """One line of text per line and zone, for a terminal."""
        out = []
        for name, c in self.lines.items():
            per = lambda d: ", ".join(f"{k} {v}" for k, v in d.items()) or "none"  # noqa: E731
            out.append(f"line {name}: in {c['total_in']} ({per(c['in'])}), out {c['total_out']} ({per(c['out'])})")
        for name, z in self.zones.items():
            out.append(f"zone {name}: {plural(z['visits'], 'track')} entered, at most {z['peak']} inside at once, "
                       f"longest stay {z['max_dwell_s']:.1f} s")  # fmt: skip
        return out


class Counting:
    """Line and zone counts over the tracked frames of one video or stream (module docstring)."""

    def __init__(self, lines: list[CountLine] = (), zones: list[Zone] = ()) -> None:  # type: ignore[assignment]
        names = [x.name for x in [*lines, *zones]]
        if len(set(names)) != len(names):
            raise ValueError(f"line and zone names {names} repeat; expected one name each.")
        self._lines = [_LineState(x) for x in lines]
        self._zones = [_ZoneState(z) for z in zones]
        self.frames = 0

    def __bool__(self) -> bool:
        return bool(self._lines or self._zones)

    def outside(self, h: int, w: int) -> list[str]:
        """One sentence per line or zone lying wholly outside an ``h`` x ``w`` frame (it can never count)."""
        out = []
        for kind, name, bounds in [*(("line", s.line.name, _line_bounds(s.line)) for s in self._lines),
                                   *(("zone", z.zone.name, z.zone.region.bounds) for z in self._zones)]:  # type: ignore[attr-defined]
            if outside_frame(bounds, h, w):
                out.append(f"{kind} {quoted(name, 60)} lies wholly outside the {w}x{h} frame (its bounds "
                           f"{[round(v, 1) for v in bounds]}): it will count nothing; expected frame pixels, "
                           f"x in [0, {w}] and y in [0, {h}].")  # fmt: skip
        return out

    def update(self, dets: Detections, ids: np.ndarray, t: float | None = None) -> FrameCounts:
        """One frame's detections and track ids (``tracking``) at time ``t`` (seconds; None: the frame number)."""
        t = float(self.frames) if t is None else float(t)
        self.frames += 1
        ids = np.asarray(ids, np.int64).reshape(-1)
        xy, names = anchors(dets), dets.class_names
        out = FrameCounts()
        for s in self._lines:
            out.crossed[s.line.name] = s.update(ids, xy, names, t)
            out.lines[s.line.name] = s.snapshot()
        for z in self._zones:
            out.zones[z.zone.name] = z.update(ids, xy, names, t)
        return out

    def crossings(self, line: str, since: float, direction: str | None = None) -> int:
        """Crossings of ``line`` at times after ``since`` (``direction`` "in"/"out", None: both)."""
        s = next(x for x in self._lines if x.line.name == line)
        return sum(1 for t, _, d, _ in s.events if t is not None and t > since and direction in (None, d))

    def entries(self, zone: str, since: float) -> int:
        """Visits of ``zone`` that began after ``since``."""
        z = next(x for x in self._zones if x.zone.name == zone)
        return sum(1 for t, _ in z.visits if t > since)

    def summary(self) -> CountSummary:
        out = CountSummary()
        for s in self._lines:
            snap = s.snapshot()
            out.lines[s.line.name] = {**snap, "total_in": sum(snap["in"].values()),
                                      "total_out": sum(snap["out"].values())}  # fmt: skip
        for z in self._zones:
            tids = sorted(set(z.dwell) | set(z.enter))
            dwell = {str(t): round(z.dwell_of(t), 3) for t in tids}
            by_class: dict[str, int] = defaultdict(int)
            for tid in tids:
                by_class[z.classes[tid]] += 1
            out.zones[z.zone.name] = {"visits": len(tids), "peak": z.peak, "dwell_s": dwell,
                                      "max_dwell_s": max(dwell.values(), default=0.0),
                                      "by_class": dict(sorted(by_class.items()))}  # fmt: skip
        return out
