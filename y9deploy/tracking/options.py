"""The settings of a tracker: ``TrackerKind`` (which algorithm) and ``TrackerOptions`` (its thresholds and times),
shared by ``tracker.make_tracker``, which chooses, and ``bytetrack.ByteTracker``, which runs them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class TrackerKind(str, Enum):
    """The trackers ``make_tracker`` can build."""

    bytetrack = "bytetrack"
    botsort = "botsort"


@dataclass(frozen=True)
class TrackerOptions:
    """Settings of a tracker (the ByteTrack paper's, as supervision and Ultralytics default them, but ``low_conf``).

    Attributes:
        high_conf: detections scoring at least this are matched first (and may start tracks).
        low_conf: detections scoring above this, and below ``high_conf``, are matched in the second round (0.05:
            issue 53's lowscore family, true detections dipping below 0.1; the ByteTrack paper's 0.1 otherwise).
        new_track_conf: an unmatched detection starts a track when it scores at least this.
        match_cost: first round: a pair matches when ``1 - IoU * score`` is at most this (second round 0.5,
            unconfirmed tracks 0.7, as in ByteTrack).
        lost_seconds: a track that has not been seen for longer than this ends (its id is not reused).
        cmc: camera-motion compensation (``botsort`` only; needs ``frame=`` in ``update``).
    """

    high_conf: float = 0.25
    low_conf: float = 0.05
    new_track_conf: float = 0.35
    match_cost: float = 0.8
    lost_seconds: float = 1.0
    cmc: bool = True

    def __post_init__(self) -> None:
        for key in ("high_conf", "low_conf", "new_track_conf", "match_cost"):
            v = getattr(self, key)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"TrackerOptions.{key}={v}; expected a value in [0, 1].")
        if self.low_conf > self.high_conf:
            raise ValueError(f"TrackerOptions.low_conf={self.low_conf} is above high_conf={self.high_conf}; "
                             "expected low_conf <= high_conf.")  # fmt: skip
        if not self.lost_seconds >= 0:
            raise ValueError(f"TrackerOptions.lost_seconds={self.lost_seconds}; expected 0 or more seconds.")
