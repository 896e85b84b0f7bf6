"""The trackers the MOT benchmark (``bench_mot.py``) compares, each one adapter: ``step = TRACKERS[name](fps)``, then
``boxes, ids = step(xyxy, score, k)`` (frame k's detections -> the boxes in confirmed tracks and their ids).

- ``y9 bytetrack`` / ``y9 botsort``: ``make_tracker(kind, fps=...)`` with its defaults (no camera-motion compensation:
  no images here; both then run the same tracker); ``y9 bytetrack xyah``: the paper's box state (issue 45's evidence);
- ``trackers`` 2.6: ByteTrack, BoT-SORT (no CMC) and OC-SORT, with their defaults and "matched" (``MATCHED``: y9's
  thresholds);
- ``supervision 0.30 ByteTrack`` (defaults = y9's): it cannot sit beside ``trackers`` (supervision 0.31, non-headless
  OpenCV), so it runs in the interpreter ``--sv030-python`` names (the project's venv) through ``run_in_worker``;
- ``y9 -<rule>`` (``RULES_OFF``, ``SIGHTINGS``): y9's default with one rule off (issue 53's ablation), on request.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

MATCHED = dict(new_track=0.35, high=0.25, iou=0.2, lost_s=1.0, confirm_frames=2)
# The ablation (issue 53): y9's default tracker with one rule off, by the module constants of
# ``y9deploy.tracking.bytetrack`` set for the run (every y9 row sets them all: the others' defaults otherwise).
RULES_OFF = {
    "y9 -LOST_RATE": {"LOST_RATE": 0.0},
    "y9 -SCORE_FLOOR": {"SCORE_FLOOR": 0.0},
    "y9 LOST_RATE on every lost track": {"YOUNG_FRAMES": float("inf")},
}
# Rows whose line counting confirms a crossing on this many sightings instead of CountLine's default.
SIGHTINGS = {"y9 -two sightings": 1}
_DEFAULTS: dict[str, float] = {}


def _set_rules(changes: dict[str, float]) -> None:
    from y9deploy.tracking import bytetrack

    if not _DEFAULTS:
        _DEFAULTS.update({k: getattr(bytetrack, k) for k in ("LOST_RATE", "YOUNG_FRAMES", "SCORE_FLOOR")})
    for k, v in {**_DEFAULTS, **changes}.items():
        setattr(bytetrack, k, v)


def _y9(kind: str, changes: dict[str, float] | None = None, form: str | None = None):
    from y9deploy.detections import Detections
    from y9deploy.tracking import TrackerOptions, make_tracker
    from y9deploy.tracking.bytetrack import ByteTracker

    def factory(fps: float):
        _set_rules(changes or {})
        tracker = ByteTracker(TrackerOptions(), fps=fps, form=form) if form else make_tracker(kind, fps=fps)

        def step(xyxy: np.ndarray, score: np.ndarray, k: int):
            ids = tracker.update(Detections(xyxy, score, np.zeros(len(score), np.int64), ["object"]), t=k / fps)
            keep = ids >= 0
            return xyxy[keep], ids[keep]

        return step

    return factory


def _roboflow(cls_name: str, matched: bool):
    def factory(fps: float):
        import supervision as sv
        import trackers

        cls = getattr(trackers, cls_name)
        kw: dict = {"frame_rate": fps}
        if cls_name == "BoTSORTTracker":
            kw["enable_cmc"] = False
        if matched:
            kw.update(lost_track_buffer=int(round(MATCHED["lost_s"] * 30)), high_conf_det_threshold=MATCHED["high"],
                      minimum_consecutive_frames=MATCHED["confirm_frames"])  # fmt: skip
            if cls_name == "BoTSORTTracker":
                kw.update(track_activation_threshold=MATCHED["new_track"], minimum_iou_threshold_first_assoc=MATCHED["iou"])
            elif cls_name == "ByteTrackTracker":
                kw.update(track_activation_threshold=MATCHED["new_track"], minimum_iou_threshold=MATCHED["iou"])
            else:  # OC-SORT has no activation threshold: every high-score detection may start a track
                kw.update(minimum_iou_threshold=MATCHED["iou"])
        tracker = cls(**kw)

        def step(xyxy: np.ndarray, score: np.ndarray, k: int):
            dets = sv.Detections(xyxy=xyxy.reshape(-1, 4), confidence=score, class_id=np.zeros(len(score), int))
            out = tracker.update(dets)
            ids = np.asarray(out.tracker_id if out.tracker_id is not None else np.full(len(out), -1), np.int64)
            keep = ids >= 0
            return np.asarray(out.xyxy)[keep], ids[keep]

        return step

    return factory


def _sv030(fps: float):
    import warnings

    import supervision as sv

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tracker = sv.ByteTrack(frame_rate=int(round(fps)))

    def step(xyxy: np.ndarray, score: np.ndarray, k: int):
        out = tracker.update_with_detections(
            sv.Detections(xyxy=xyxy.reshape(-1, 4), confidence=score, class_id=np.zeros(len(score), int))
        )
        ids = np.asarray(out.tracker_id if out.tracker_id is not None else np.zeros(0), np.int64)
        return np.asarray(out.xyxy)[ids >= 0], ids[ids >= 0]

    return step


TRACKERS = {
    "y9 bytetrack": _y9("bytetrack"),
    "y9 botsort": _y9("botsort"),
    "y9 bytetrack xyah": _y9("bytetrack", form="xyah"),
    "trackers ByteTrack": _roboflow("ByteTrackTracker", False),
    "trackers ByteTrack matched": _roboflow("ByteTrackTracker", True),
    "trackers BoT-SORT": _roboflow("BoTSORTTracker", False),
    "trackers BoT-SORT matched": _roboflow("BoTSORTTracker", True),
    "trackers OC-SORT": _roboflow("OCSORTTracker", False),
    "trackers OC-SORT matched": _roboflow("OCSORTTracker", True),
    **{name: _y9("bytetrack", changes) for name, changes in RULES_OFF.items()},
    "y9 -two sightings": _y9("bytetrack"),
}
SV030 = "supervision 0.30 ByteTrack"


def run(factory, frames: list[tuple[np.ndarray, np.ndarray]], fps: float):
    """One tracker over one detection sequence -> (per frame (boxes, ids), per frame seconds)."""
    step = factory(fps)
    out, times = [], []
    for k, (xyxy, score) in enumerate(frames):
        t0 = time.perf_counter()
        res = step(xyxy, score, k)
        times.append(time.perf_counter() - t0)
        out.append(res)
    return out, times


def run_in_worker(python: str, jobs: list[tuple[list, float]]) -> list:
    """supervision 0.30's ByteTrack over ``jobs`` [(frames, fps)] in the interpreter ``python`` -> [run(...)]."""
    data = pickle.dumps(jobs)
    proc = subprocess.run([python, str(Path(__file__)), "--worker"], input=data, capture_output=True, check=False,
                          env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})  # fmt: skip
    if proc.returncode:
        raise RuntimeError(f"the supervision 0.30 worker ({python}) failed: {proc.stderr.decode()[-2000:]}")
    return pickle.loads(proc.stdout)


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:  # the supervision 0.30 side of run_in_worker
    jobs = pickle.loads(sys.stdin.buffer.read())
    results = [run(_sv030, frames, fps) for frames, fps in jobs]
    sys.stdout.buffer.write(pickle.dumps(results))
