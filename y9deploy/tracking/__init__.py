"""One identity per object across the frames of a video or stream, and counting on those identities; it works on
``Detections`` (and ``y9deploy.draw`` for trails); it sits below the runtime, whose ``Detector.track`` and
``predict_stream(track=...)`` use it, and below ``y9deploy.pipelines`` (prediction runs, the inspection gate).

- ``options``: ``TrackerKind`` and ``TrackerOptions``, the settings of a tracker;
- ``tracker``: ``make_tracker``, the one rule that chooses a tracker, the ``Tracker`` protocol and
  ``TrackedDetections`` (one frame's detections with their track ids);
- ``bytetrack``: ``ByteTracker``, ByteTrack's and BoT-SORT's association, over ``box_kalman`` (constant-velocity
  Kalman filters of many boxes at once) and ``camera_motion`` (BoT-SORT's camera-motion compensation);
- ``regions``: a rectangle or polygon in frame pixels with vectorised membership tests (zones, inspection ROIs);
- ``counting``: objects crossing a line and inside a zone, per class, on the tracks;
- ``source_tracking``: tracking and counting over one video or stream (``SourceTracking``, ``TrackOptions``), the
  trails drawn.

Arrows: ``source_tracking`` -> ``tracker`` and ``counting``; ``tracker`` -> ``bytetrack`` -> ``box_kalman``, ``camera_motion``,
``options``; ``counting`` -> ``regions``. The names below are the public ones (``make_tracker`` and its types).
"""

from y9deploy.tracking.options import TrackerKind, TrackerOptions
from y9deploy.tracking.tracker import TrackedDetections, Tracker, make_tracker

__all__ = ["TrackedDetections", "Tracker", "TrackerKind", "TrackerOptions", "make_tracker"]
