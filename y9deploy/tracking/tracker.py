"""Multi-object tracking: one identity per object across the frames of a video or stream.

    tracker = make_tracker("bytetrack", fps=reader.fps)          # or "botsort"
    for f in frames:
        dets = detector.predict(f.image)
        ids = tracker.update(dets, t=f.index / fps)              # ndarray[N] int64: -1 = no track (yet)

``make_tracker`` is the one place that chooses a tracker; every caller (``Detector.track``, ``predict_stream(...,
track=...)``, ``y9 predict --track``, ``y9 inspect`` on a video) goes through it. A tracker is any object with the
``Tracker`` protocol: ``update(dets, t=None, frame=None) -> ndarray[N] int64`` (one id per detection of ``dets``,
in its order) and ``reset()``.

The two trackers (``y9deploy.tracking.bytetrack``) are this project's own vectorised implementations of the
published algorithms: the maintained Python ones (supervision's ``ByteTrack``, removed from supervision in 0.31,
and the ``trackers`` package that replaces it, which also needs the non-headless opencv-python) run one Kalman
filter per track in Python, over this project's 1 ms budget a frame at 100 detections (measured:
docs/benchmarks.md, ``benchmarks/bench_tracking.py``); the tests check this one against supervision's on the
same detections:
- ``bytetrack``: ByteTrack (Zhang et al., 2022): Kalman-predicted boxes matched to high-score detections by IoU
  fused with the score, then to low-score ones, then unconfirmed tracks; lost tracks kept ``lost_seconds``. Its
  box state is BoT-SORT's (width and height with their own velocities), not the paper's (aspect ratio and
  height): on the MOT benchmark (docs/benchmarks.md) it makes fewer ID switches (issue 45);
- ``botsort``: the same, with BoT-SORT's camera-motion compensation (sparse optical flow between frames; pass
  ``frame=``), for moving cameras (drones). Re-identification features are not used.
The rules added to ByteTrack's association, and those dropped (issue 53), are in ``bytetrack``'s module docstring.

Time: ``t`` is the frame's time in seconds (video time ``index / fps`` for files, capture time for live
sources). The tracker predicts over the time that really passed, in frames of ``fps``: with the ``latest``
policy dropping frames, a track predicts over the gap instead of one frame. ``t=None`` means one frame of
``fps``. Times must increase.

Ids: 1, 2, 3... in the order tracks are confirmed; -1 for a detection that is not in a confirmed track (a
low-score detection no track took, or the first frame of a new object after the video's first frame).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from y9deploy.detections import Detections
from y9deploy.tracking.bytetrack import ByteTracker
from y9deploy.tracking.options import TrackerKind, TrackerOptions


@runtime_checkable
class Tracker(Protocol):
    """What every tracker offers (module docstring)."""

    def update(self, dets: Detections, t: float | None = None, frame: np.ndarray | None = None) -> np.ndarray:
        """One frame's detections -> ndarray[N] int64 track ids (-1: none), in the order of ``dets``."""
        ...

    def reset(self) -> None:
        """Forget every track; ids start again at 1."""
        ...


def make_tracker(
    kind: str | TrackerKind = TrackerKind.bytetrack, *, fps: float = 30.0, options: TrackerOptions | None = None
) -> Tracker:
    """The tracker ``kind`` (``"bytetrack"`` or ``"botsort"``) for a source of ``fps`` frames per second.

    Raises:
        ValueError: an unknown kind or a non-positive fps.
    """
    try:
        kind = TrackerKind(kind)
    except ValueError:
        raise ValueError(f"tracker {kind!r} is not known; expected one of "
                         f"{', '.join(k.value for k in TrackerKind)}.") from None  # fmt: skip
    if not (fps > 0 and np.isfinite(fps)):
        raise ValueError(f"fps={fps}; expected a positive frame rate.")
    options = options or TrackerOptions()
    return ByteTracker(options, fps=fps, form="xywh", camera_motion=kind is TrackerKind.botsort and options.cmc)


@dataclass(frozen=True, eq=False)
class TrackedDetections:
    """One frame's detections with their track ids.

    Attributes:
        detections: the frame's ``Detections``.
        track_id (ndarray[N] int64): the track of each detection; -1 where none.
        time: the frame's time in seconds (None: not known).
        counts: what the counting rules said on this frame (``counting.FrameCounts``), when any were given.
    """

    detections: Detections
    track_id: np.ndarray
    time: float | None = None
    counts: Any = None

    def __post_init__(self) -> None:
        ids = np.asarray(self.track_id, np.int64).reshape(-1)
        if len(ids) != len(self.detections):
            raise ValueError(f"track_id has {len(ids)} ids for {len(self.detections)} detections; expected one each.")
        object.__setattr__(self, "track_id", ids)

    def __len__(self) -> int:
        return len(self.detections)

    @property
    def tracked(self) -> Detections:
        """The detections that are in a confirmed track."""
        return self.detections[self.track_id >= 0]

    def to_dict(self) -> dict[str, Any]:
        """``{"detections": [{..., "track_id"}], ...}``: ``Detections.to_dict`` with each detection's
        ``track_id`` (None where none) and the frame's ``counts`` when there are any."""
        out = self.detections.to_dict()
        for d, tid in zip(out["detections"], self.track_id.tolist()):
            d["track_id"] = tid if tid >= 0 else None
        if self.counts is not None:
            out["counts"] = self.counts.to_dict()
        return out
