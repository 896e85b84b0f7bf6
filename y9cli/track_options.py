"""The tracking and counting options of ``y9 predict`` (and the parsing of their values).

``--track bytetrack|botsort`` tracks the objects of videos and streams; ``--count-line x1,y1,x2,y2`` and ``--zone
x1,y1,x2,y2,x3,y3,...`` (both repeatable, each optionally ``NAME=...``) count on the tracks and imply ``--track
bytetrack`` when no tracker is named.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer


class Tracker(str, Enum):
    bytetrack = "bytetrack"
    botsort = "botsort"


TrackOption = Annotated[
    Tracker | None,
    typer.Option("--track", help="Track objects across video/stream frames: bytetrack, or botsort (with camera-"
                                 "motion compensation, for moving cameras). Adds track_id to every detection."),
]  # fmt: skip
CountLineOption = Annotated[
    list[str] | None,
    typer.Option("--count-line", help="Count tracks crossing the line x1,y1,x2,y2 (frame pixels; NAME=x1,y1,x2,y2 "
                                      "to name it), in and out per class; repeatable; implies --track bytetrack."),
]  # fmt: skip
ZoneOption = Annotated[
    list[str] | None,
    typer.Option("--zone", help="Count tracks inside the polygon x1,y1,x2,y2,x3,y3,... (NAME=... to name it) per "
                                "frame, with dwell times; repeatable; implies --track bytetrack."),
]  # fmt: skip


def _named(text: str) -> tuple[str | None, str]:
    name, sep, rest = text.partition("=")
    return (name.strip(), rest) if sep else (None, text)


def track_options(track: Tracker | None, lines: list[str] | None, zones: list[str] | None):
    """The options -> ``source_tracking.TrackOptions`` (None: no tracking). Raises ValueError with one sentence
    naming a bad line or zone."""
    if track is None and not lines and not zones:
        return None
    from y9deploy.tracking.counting import CountLine, Zone
    from y9deploy.tracking.source_tracking import TrackOptions

    parsed_lines = tuple(CountLine.parse(v, n) for n, v in (_named(t) for t in lines or []))
    parsed_zones = tuple(Zone.parse(v, n) for n, v in (_named(t) for t in zones or []))
    return TrackOptions((track or Tracker.bytetrack).value, parsed_lines, parsed_zones)


def count_lines(summary) -> list[str]:
    """The counting summary of a ``predict_source`` run, one line of text per source, line and zone."""
    out = []
    for source, counts in summary.counts.items():
        out += [f"{source}: {s}" for s in counts.sentences()]
    return out
