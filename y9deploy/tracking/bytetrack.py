"""``ByteTracker``: ByteTrack's association over a batched Kalman filter (numpy + scipy's assignment).

Build one with ``tracking.make_tracker`` (the one rule that chooses); the algorithm, per frame:
1. every track's box is predicted over the time step (``box_kalman``); a lost track's size velocity is zeroed
   first; with camera-motion compensation the predictions are moved by the frame-to-frame camera motion;
2. confirmed tracks (tracked or lost) are matched to the high-score detections (``score >= high_conf``) by the cost
   ``1 - IoU * score``, a score below ``SCORE_FLOOR`` counting as ``SCORE_FLOOR`` (optimal assignment; pairs above
   ``match_cost`` are not matched); in the choice (not in what may match) the cost of a lost track followed for
   fewer than ``YOUNG_FRAMES`` frames counts ``LOST_RATE`` more per frame lost, so that it yields to a tracked one
   at about the same overlap, and a detection of another class than the track began with ``CLASS_BIAS`` more;
3. the confirmed tracks still unmatched, tracked or lost, are matched to the low-score detections (``low_conf <
   score < high_conf``) by ``1 - IoU`` (at most 0.5); those left unmatched become (or stay) lost;
4. unconfirmed tracks (one frame old) are matched to the high-score detections left (cost at most 0.7) and
   confirmed, or dropped;
5. the high-score detections left with ``score >= new_track_conf`` start tracks, confirmed at once on the first
   frame only; lost tracks not seen for longer than ``lost_seconds`` end; of a tracked and a lost track whose boxes
   overlap by IoU > 0.95 the younger one ends.
Issue 53 (noise families of several kinds, docs/benchmarks.md) dropped three of issue 45's rules, each of which cost
some of the nine tuning families: shadow tracks (a box overlapping a tracked one's by IoU > 0.3 with a lower score
followed without an id until seen on its own: they kept a detector's duplicates from becoming tracks, but delayed,
often for tens of frames, people who appeared beside others: 0.003-0.013 MOTA, means over levels, on six families),
``DUP_BIAS`` (a tracked track's choice against duplicates: shaky, lowscore, fragments) and ``FRESH_IOU`` (a detection
kept for a one-frame-old track: fragments 0.010 MOTA, iid). A duplicate box that persists is now a track of its own.
The tracks are rows of arrays; nothing loops over them in Python.
"""

from __future__ import annotations

import numpy as np

from y9core.boxes import box_iou_matrix
from y9core.errors import BackendUnavailableError
from y9deploy.detections import Detections
from y9deploy.tracking.box_kalman import BoxKalman
from y9deploy.tracking.options import TrackerOptions

SECOND_ROUND_COST, UNCONFIRMED_COST, DUPLICATE_IOU = 0.5, 0.7, 0.95
# A track prefers a detection of the class it began with: in the first round's choice a detection of another class
# counts this much more (what may match is unchanged: a class that flickers keeps its track).
CLASS_BIAS = 0.25
# A lost track that was followed for fewer than YOUNG_FRAMES frames yields a detection to a tracked one of about the
# same overlap: in the first round's choice its cost counts LOST_RATE more per frame it has been lost (what may match
# is unchanged). A track that short is often no object (a false positive's, a duplicate's) and its predicted box grows
# less sure; a track lost behind another object, predicted along with it, no longer takes that object's detection
# (issue 45). Issue 53: on every lost track (issue 45's rule) it cost IDF1 0.03 at high noise on occlusion runs, where
# a person followed for long comes back from behind another; on young tracks only it keeps its gains on issue 45's
# noise model and is neutral on occlusion (tuning families, seeds 0-2: iid high ID switches 13.3 without it, 8.3 with
# it; YOUNG_FRAMES 25: occlusion IDF1 -0.004, 50: -0.018; docs/benchmarks.md, "Tracking", and docs/results/cpu-2026-12-06-mot-53-r3/).
# Round 3, nine tuning families: 0.01 cost duplicates IDF1 0.005 (mean over levels); 0.005 helps or is neutral on all
# nine (IDF1 +0.005 to +0.010 on six); YOUNG_FRAMES 5 lost most of it.
LOST_RATE, YOUNG_FRAMES = 0.005, 10
# In the costs ``1 - IoU * score`` (first round, unconfirmed tracks) a score below SCORE_FLOOR counts as SCORE_FLOOR:
# the score still chooses between detections, but a true detection scored 0.3 no longer needs an overlap of IoU 0.67
# with its track to match (0.5 now), which a jittered box often lacks; its track was lost, and a person scored below
# the new-track threshold had no track at all (issue 53, lowscore family: MOTA +0.03 to +0.08; 0.3 kept less of it,
# 0.5 cost duplicates at high noise 0.01 MOTA; docs/benchmarks.md, "Tracking", and docs/results/cpu-2026-12-06-mot-53-r3/). Round 3,
# nine tuning families: 0.4 cost clutter 0.003 MOTA and fragments 0.003 IDF1 (means over levels); 0.35 is within
# 0.002 of no floor on every family but lowscore, where it keeps part of the gain.
SCORE_FLOOR = 0.35


def _linear_sum_assignment():
    try:
        from scipy.optimize import linear_sum_assignment
    except ImportError:
        raise BackendUnavailableError("tracking needs scipy (its optimal assignment), which is not installed; "
                                      "pip install 'y9[track]'.") from None  # fmt: skip
    return linear_sum_assignment


def assign(
    cost: np.ndarray, limit: float, bias: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Optimal one-to-one matching of rows to columns of ``cost`` (ndarray[R, C]) keeping pairs of cost at most
    ``limit`` -> (matches ndarray[K, 2] of (row, column), unmatched rows, unmatched columns). ``bias`` (ndarray[R, C]
    of 0 or more) is added to the costs for the choice only: which pairs may match is decided on ``cost``. Pairs
    above the limit are set just above every allowed value first, so that they cannot steer the assignment of the
    others."""
    rows, cols = cost.shape
    if not rows or not cols:
        return np.zeros((0, 2), np.int64), np.arange(rows), np.arange(cols)
    choice = cost if bias is None else cost + bias
    over = cost > limit
    ceiling = choice[~over].max() if (~over).any() else limit
    r, c = _linear_sum_assignment()(np.where(over, ceiling + 1e-4, choice))
    keep = cost[r, c] <= limit
    matches = np.stack([r[keep], c[keep]], 1).astype(np.int64)
    free_r = np.ones(rows, bool)
    free_r[matches[:, 0]] = False
    free_c = np.ones(cols, bool)
    free_c[matches[:, 1]] = False
    return matches, np.flatnonzero(free_r), np.flatnonzero(free_c)


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.nan_to_num(box_iou_matrix(a, b), nan=0.0) if len(a) and len(b) else np.zeros((len(a), len(b)))


class ByteTracker:
    """ByteTrack's association (module docstring) over the Kalman box state ``form``: ``"xyah"`` (the ByteTrack
    paper's) or ``"xywh"`` (BoT-SORT's; ``make_tracker`` uses it for both kinds), with BoT-SORT's camera-motion
    compensation when ``camera_motion``; the ``tracking.Tracker`` protocol. ``fps``: the source's nominal frame
    rate (the unit of the Kalman time step)."""

    def __init__(self, options: TrackerOptions, *, fps: float, form: str = "xyah", camera_motion: bool = False):
        _linear_sum_assignment()  # a missing scipy fails here, before any frame
        self.options, self.fps = options, float(fps)
        self.kalman = BoxKalman(form)
        self.camera = None
        if camera_motion:
            from y9deploy.tracking.camera_motion import CameraMotion

            self.camera = CameraMotion()
        self.reset()

    def reset(self) -> None:
        """Forget every track; ids start again at 1."""
        self.mean, self.cov = np.zeros((0, 8)), np.zeros((0, 8, 8))
        self.lost = np.zeros(0, bool)
        self.ids = np.zeros(0, np.int64)  # -1 while unconfirmed
        self.seen = np.zeros(0)  # clock (frames) of the last match
        self.start = np.zeros(0)  # clock when the track began
        self.cls = np.zeros(0, np.int64)  # class of the detection that started the track
        self.clock, self.frames, self.last_t = 0.0, 0, None
        self.next_id = 1
        if self.camera is not None:
            self.camera.reset()

    @property
    def active(self) -> int:
        """Tracks alive now (tracked or lost, confirmed or not)."""
        return len(self.ids)

    def _step(self, t: float | None) -> float:
        """The time step in frames of ``fps`` since the previous update."""
        if t is None:
            return 1.0
        t = float(t)
        if self.last_t is None:
            self.last_t = t
            return 1.0
        if not t > self.last_t:
            raise ValueError(f"frame time {t} s is not after the previous frame's {self.last_t} s; "
                             "expected increasing times.")  # fmt: skip
        dt, self.last_t = (t - self.last_t) * self.fps, t
        return dt

    def _keep(self, mask: np.ndarray) -> None:
        self.mean, self.cov, self.lost = self.mean[mask], self.cov[mask], self.lost[mask]
        self.ids, self.seen, self.start, self.cls = self.ids[mask], self.seen[mask], self.start[mask], self.cls[mask]

    def update(self, dets: Detections, t: float | None = None, frame: np.ndarray | None = None) -> np.ndarray:
        """One frame -> ndarray[N] int64 track ids for ``dets`` in their order (-1: none); ``t`` the frame's time
        in seconds (None: one frame after the previous); ``frame`` the image (camera-motion compensation)."""
        o = self.options
        dt = self._step(t)
        self.clock += dt
        first = self.frames == 0
        self.frames += 1
        xyxy, score = dets.xyxy.astype(np.float64), dets.confidence.astype(np.float64)
        cls = np.asarray(dets.class_id, np.int64).reshape(-1)
        out = np.full(len(dets), -1, np.int64)
        wh = xyxy[:, 2:] - xyxy[:, :2]
        valid = np.isfinite(xyxy).all(1) & np.isfinite(score) & (wh > 0).all(1)

        size_velocity = [7] if self.kalman.form == "xyah" else [6, 7]
        mean = self.mean.copy()
        mean[np.ix_(self.lost, size_velocity)] = 0.0
        self.mean, self.cov = self.kalman.predict(mean, self.cov, dt)
        if self.camera is not None and frame is not None:
            affine = self.camera.step(frame, xyxy[valid])
            if affine is not None:
                self.mean, self.cov = self.kalman.warp(self.mean, self.cov, affine)
        boxes = self.kalman.to_xyxy(self.mean)

        high = np.flatnonzero(valid & (score >= o.high_conf))
        low = np.flatnonzero(valid & (score > o.low_conf) & (score < o.high_conf))
        pool = np.flatnonzero(self.ids >= 0)  # confirmed tracks
        fresh = np.flatnonzero(self.ids < 0)
        young = self.lost[pool] & (self.seen[pool] - self.start[pool] < YOUNG_FRAMES)
        bias = (LOST_RATE * (self.clock - self.seen[pool]) * young)[:, None]
        bias = bias + CLASS_BIAS * (self.cls[pool, None] != cls[None, high])
        fused = np.maximum(score, SCORE_FLOOR)
        cost = 1 - _iou(boxes[pool], xyxy[high]) * fused[high]
        m1, free_pool, free_high = assign(cost, o.match_cost, bias)
        left_pool = pool[free_pool]  # confirmed, tracked or lost (issue 53)
        m2, free_left, _ = assign(1 - _iou(boxes[left_pool], xyxy[low]), SECOND_ROUND_COST)
        rest = high[free_high]
        m3, free_fresh, free_rest = assign(1 - _iou(boxes[fresh], xyxy[rest]) * fused[rest], UNCONFIRMED_COST)

        rows = np.concatenate([pool[m1[:, 0]], left_pool[m2[:, 0]], fresh[m3[:, 0]]])
        cols = np.concatenate([high[m1[:, 1]], low[m2[:, 1]], rest[m3[:, 1]]])
        self.mean[rows], self.cov[rows] = self.kalman.update(self.mean[rows], self.cov[rows],
                                                             self.kalman.measure(xyxy[cols]))  # fmt: skip
        self.lost[rows], self.seen[rows] = False, self.clock
        confirmed = fresh[m3[:, 0]]
        self.ids[confirmed] = np.arange(self.next_id, self.next_id + len(confirmed))
        self.next_id += len(confirmed)
        out[cols] = self.ids[rows]
        self.lost[left_pool[free_left]] = True

        keep = np.ones(len(self.ids), bool)
        keep[fresh[free_fresh]] = False  # unconfirmed tracks not matched again end
        keep &= ~(self.lost & (self.clock - self.seen > o.lost_seconds * self.fps))
        self._keep(keep)
        self._start_tracks(xyxy, score, cls, rest[free_rest], first, out)
        self._drop_duplicates()
        return out

    def _start_tracks(self, xyxy: np.ndarray, score: np.ndarray, cls: np.ndarray, cand: np.ndarray, first: bool,
                      out: np.ndarray) -> None:  # fmt: skip
        new = cand[score[cand] >= self.options.new_track_conf]
        if not len(new):
            return
        mean, cov = self.kalman.initiate(self.kalman.measure(xyxy[new]))
        ids = np.arange(self.next_id, self.next_id + len(new)) if first else np.full(len(new), -1)
        if first:
            self.next_id += len(new)
            out[new] = ids
        self.mean, self.cov = np.concatenate([self.mean, mean]), np.concatenate([self.cov, cov])
        self.lost = np.concatenate([self.lost, np.zeros(len(new), bool)])
        self.ids = np.concatenate([self.ids, ids.astype(np.int64)])
        self.seen = np.concatenate([self.seen, np.full(len(new), self.clock)])
        self.start = np.concatenate([self.start, np.full(len(new), self.clock)])
        self.cls = np.concatenate([self.cls, cls[new]])

    def _drop_duplicates(self) -> None:
        """Of a tracked and a lost track with nearly the same box (IoU > 0.95), the one followed for less long ends."""
        tracked, lost = np.flatnonzero(~self.lost), np.flatnonzero(self.lost)
        if not len(tracked) or not len(lost):
            return
        boxes = self.kalman.to_xyxy(self.mean)
        a, b = np.nonzero(_iou(boxes[tracked], boxes[lost]) > DUPLICATE_IOU)
        if not len(a):
            return
        age = self.seen - self.start
        ta, tb = tracked[a], lost[b]
        older_tracked = age[ta] > age[tb]
        keep = np.ones(len(self.ids), bool)
        keep[tb[older_tracked]] = False
        keep[ta[~older_tracked]] = False
        self._keep(keep)
