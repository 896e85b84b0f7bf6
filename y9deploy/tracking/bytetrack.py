"""``ByteTracker``: ByteTrack's association over a batched Kalman filter (numpy + scipy's assignment).

Build one with ``tracking.make_tracker`` (the one rule that chooses); the algorithm, per frame:
1. every track's box is predicted over the time step (``box_kalman``); a lost track's size velocity is zeroed
   first; with camera-motion compensation the predictions are moved by the frame-to-frame camera motion;
2. confirmed tracks (tracked or lost) and shadow tracks (step 4) are matched to the high-score detections (``score >=
   high_conf``) by the cost ``1 - IoU * score``, a score below ``SCORE_FLOOR`` counting as ``SCORE_FLOOR`` (optimal
   assignment; pairs above ``match_cost`` are not matched); in the choice (not in what may match) the cost of a lost
   track followed for fewer than ``YOUNG_FRAMES`` frames counts ``LOST_RATE`` more per frame lost, so that it yields
   to a tracked one at about the same overlap, a shadow track's ``SHADOW_BIAS`` more, so that it yields to a
   confirmed one, a detection of another class than the track began with ``CLASS_BIAS`` more, and, for a tracked
   track, a detection that is a duplicate (step 4's rule) of another high-score box on the frame ``DUP_BIAS`` more. A
   detection that an unconfirmed (one-frame-old) track overlaps by IoU > ``FRESH_IOU``, and more than a confirmed or
   shadow track does, is not matched here: it is kept for the unconfirmed track (step 4);
3. the confirmed tracks still unmatched, tracked or lost, are matched to the low-score detections (``low_conf <
   score < high_conf``) by ``1 - IoU`` (at most 0.5); those left unmatched become (or stay) lost;
4. a high-score detection that overlaps one a confirmed track took by IoU > ``SHADOW_IOU`` with a lower score
   (below ``SHADOW_RATIO`` times its), or by IoU > ``SAME_BOX_IOU``, is a duplicate of it: left over, it starts
   (or, taken by one in step 2, continues) a shadow track, which has no id and counts nothing. In step 2 a shadow
   track matches at most at an unconfirmed track's cost (0.7); one whose detection is seen on its own (a duplicate
   of no other high-score detection) on ``SHADOW_ALONE`` frames in a row is confirmed; one not matched is lost
   and ends as a lost track does. Unconfirmed tracks (one frame old) are matched to the high-score detections
   left that are not duplicates (cost at most 0.7) and confirmed, or dropped;
5. the high-score detections left with ``score >= new_track_conf`` start tracks, confirmed at once on the
   first frame only (where the duplicates of other detections start shadow tracks); lost tracks not seen for
   longer than ``lost_seconds`` end; of a tracked and a lost track whose boxes overlap by IoU > 0.95 the younger
   one ends.
Why shadow tracks (issue 45): a detector's duplicate and a second object beside the first (people walking side
by side at IoU 0.3-0.45, one scoring lower) look the same on one frame. The duplicate exists only with the box it
copies; the second object is also seen without it (the first one missed, hidden or moved away). Following the
lower box without an id keeps it from counting while it is only a copy, and makes it a track once it is seen on its
own; taking part in step 2 keeps a lost track of the first object from taking its detection over. Two objects
that stay together and are never seen apart remain one track: on boxes and scores alone nothing tells them from
a persistent duplicate (issue 45's zebra).
The tracks are rows of arrays; nothing loops over them in Python.
"""

from __future__ import annotations

import numpy as np

from y9core.box_iou import box_iou_matrix
from y9core.errors import BackendUnavailableError
from y9deploy.detections import Detections
from y9deploy.tracking.box_kalman import BoxKalman
from y9deploy.tracking.options import TrackerOptions

SECOND_ROUND_COST, UNCONFIRMED_COST, DUPLICATE_IOU = 0.5, 0.7, 0.95
# A high-score detection is a duplicate of one a confirmed track took when it overlaps it by IoU > SHADOW_IOU and
# scores below SHADOW_RATIO times its score, or, whatever its score, by IoU > SAME_BOX_IOU (the same box: e.g. the
# object under a second class, which class-aware NMS keeps): it starts no track and confirms none, only a shadow
# track (no id), confirmed on a frame where its detection is no one's duplicate (issue 45: a 0.57 duplicate at IoU
# 0.44 of a real box became a second track and a second line crossing; two people side by side at IoU 0.35 were one).
SHADOW_IOU, SHADOW_RATIO, SAME_BOX_IOU = 0.3, 0.85, 0.7
# A track prefers a detection of the class it began with: in the first round's choice a detection of another class
# counts this much more (what may match is unchanged: a class that flickers keeps its track).
CLASS_BIAS = 0.25
# A shadow track becomes a track when its detection is seen on its own (no box it would be a duplicate of) on this
# many frames in a row: as a new track is confirmed on its second frame, one frame may be chance.
SHADOW_ALONE = 2
# A detection that a one-frame-old track overlaps by IoU > FRESH_IOU, and more than a confirmed track does, is that
# track's continuation: the confirmed track may not take it in step 2 (ByteTrack's order lets confirmed tracks choose
# first, so a person missed on the frame after a newcomer appeared over him took the newcomer's detection and the
# newcomer's track ended: issue 45, TUD-Stadtmitte low noise seed 3, a zone visit lost). The one-frame-old track
# takes it in step 4 unless it is a duplicate there; a detection goes to the track whose box it overlaps most.
FRESH_IOU = 0.5
# A shadow track yields a detection to a confirmed track of about the same overlap: in the first round's choice its
# cost counts SHADOW_BIAS more (what may match is unchanged). A shadow track following a duplicate took a person's
# detection from his own track, lost for one frame, and became a second id for him (issue 45, medium noise); the
# track of a person missed beside another (side by side, IoU 0.35) still does not take the other's detection, as
# its overlap is far lower. Over 20 seeds: ID switches high 9.2 -> 6.6, medium 0.7 -> 0.6 (0.1: 6.5 / 0.7; 0.2: 7.5 /
# 0.9, IDF1 lower).
SHADOW_BIAS = 0.05
# A tracked track (seen on the previous frame) prefers a detection that is not a duplicate of another high-score box on
# the frame (``SHADOW_IOU``, ``SHADOW_RATIO``, ``SAME_BOX_IOU``): in the first round's choice such a detection counts
# this much more for it (what may match is unchanged). When a person is missed, his detector's duplicate (lying over
# the box beside) took his track, which followed it, and his next detection began a new id (issue 45, TUD-Stadtmitte
# medium noise seed 4, frame 28); with the bias the duplicate's shadow track takes it and his track, lost for one
# frame, takes his next detection. Over 20 seeds: ID switches high 6.6 -> 6.1, medium 0.6 -> 0.55 (on lost tracks too:
# 6.7 / 0.6; 0.02: 7.0 / 0.6; 0.1: 7.1 / 0.65, on all tracks). Issue 53, tuning families, seeds 0-2: IDF1 +0.015 on
# duplicates and +0.016 on iid at high noise, neutral elsewhere (without LOST_RATE it helped nowhere: the two go together).
DUP_BIAS = 0.05
# A lost track that was followed for fewer than YOUNG_FRAMES frames yields a detection to a tracked one of about the
# same overlap: in the first round's choice its cost counts LOST_RATE more per frame it has been lost (what may match
# is unchanged). A track that short is often no object (a false positive's, a duplicate's) and its predicted box grows
# less sure; a track lost behind another object, predicted along with it, no longer takes that object's detection
# (issue 45). Issue 53: on every lost track (issue 45's rule) it cost IDF1 0.03 at high noise on occlusion runs, where
# a person followed for long comes back from behind another; on young tracks only it keeps its gains on issue 45's
# noise model and is neutral on occlusion (tuning families, seeds 0-2: iid high ID switches 13.3 without it, 8.3 with
# it; YOUNG_FRAMES 25: occlusion IDF1 -0.004, 50: -0.018; docs/benchmarks.md, "Tracking on several kinds of error").
LOST_RATE, YOUNG_FRAMES = 0.01, 10
# In the costs ``1 - IoU * score`` (first round, unconfirmed tracks) a score below SCORE_FLOOR counts as SCORE_FLOOR:
# the score still chooses between detections, but a true detection scored 0.3 no longer needs an overlap of IoU 0.67
# with its track to match (0.5 now), which a jittered box often lacks; its track was lost, and a person scored below
# the new-track threshold had no track at all (issue 53, lowscore family: MOTA +0.03 to +0.08; 0.3 kept less of it,
# 0.5 cost duplicates at high noise 0.01 MOTA; docs/benchmarks.md, "Tracking on several kinds of error").
SCORE_FLOOR = 0.4


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
        self.shadow = np.zeros(0, bool)  # a shadow track: unconfirmed, it follows a duplicate (step 4)
        self.alone = np.zeros(0, np.int64)  # frames in a row a shadow track's detection was seen on its own
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
        self.shadow, self.alone = self.shadow[mask], self.alone[mask]
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
        pool = np.flatnonzero((self.ids >= 0) | self.shadow)  # confirmed and shadow tracks
        fresh = np.flatnonzero((self.ids < 0) & ~self.shadow)
        young = self.lost[pool] & (self.seen[pool] - self.start[pool] < YOUNG_FRAMES)
        bias = (LOST_RATE * (self.clock - self.seen[pool]) * young)[:, None]
        bias = bias + CLASS_BIAS * (self.cls[pool, None] != cls[None, high]) + SHADOW_BIAS * self.shadow[pool, None]
        fused = np.maximum(score, SCORE_FLOOR)
        cost = 1 - _iou(boxes[pool], xyxy[high]) * fused[high]
        sh = self.shadow[pool]
        cost[sh] = np.where(cost[sh] > UNCONFIRMED_COST, 2.0, cost[sh])  # an unconfirmed track's limit
        if len(fresh) and len(high):  # a detection a one-frame-old track follows best is kept for it (FRESH_IOU)
            iou_pool, iou_fresh = _iou(boxes[pool], xyxy[high]), _iou(boxes[fresh], xyxy[high]).max(0)
            cost = np.where((iou_fresh > FRESH_IOU) & (iou_fresh > iou_pool), 2.0, cost)
        bias = bias + self._duplicate_bias(cost <= o.match_cost, pool, high, xyxy, score)
        m1, free_pool, free_high = assign(cost, o.match_cost, bias)
        left_pool = pool[free_pool]
        tracked_left = left_pool[self.ids[left_pool] >= 0]  # confirmed, tracked or lost (issue 53)
        m2, free_tracked, _ = assign(1 - _iou(boxes[tracked_left], xyxy[low]), SECOND_ROUND_COST)
        by_shadow = self.shadow[pool[m1[:, 0]]]
        taken = np.concatenate([high[m1[~by_shadow, 1]], low[m2[:, 1]]])  # by the confirmed tracks
        s_rows, s_cols = pool[m1[by_shadow, 0]], high[m1[by_shadow, 1]]
        seen_alone = self._not_shadows(s_cols, np.concatenate([high, low[m2[:, 1]]]), xyxy, score)
        self.alone[s_rows] = np.where(seen_alone, self.alone[s_rows] + 1, 0)
        clear = self.alone[s_rows] >= SHADOW_ALONE  # shadow tracks that become tracks
        left = high[free_high]
        alone = self._not_shadows(left, np.concatenate([taken, s_cols[clear]]), xyxy, score)
        rest, shadows = left[alone], left[~alone]
        m3, free_fresh, free_rest = assign(1 - _iou(boxes[fresh], xyxy[rest]) * fused[rest], UNCONFIRMED_COST)

        rows = np.concatenate([pool[m1[:, 0]], tracked_left[m2[:, 0]], fresh[m3[:, 0]]])
        cols = np.concatenate([high[m1[:, 1]], low[m2[:, 1]], rest[m3[:, 1]]])
        self.mean[rows], self.cov[rows] = self.kalman.update(self.mean[rows], self.cov[rows],
                                                             self.kalman.measure(xyxy[cols]))  # fmt: skip
        self.lost[rows], self.seen[rows] = False, self.clock
        confirmed = np.concatenate([s_rows[clear], fresh[m3[:, 0]]])
        self.shadow[confirmed] = False
        self.ids[confirmed] = np.arange(self.next_id, self.next_id + len(confirmed))
        self.next_id += len(confirmed)
        out[cols] = self.ids[rows]
        self.lost[tracked_left[free_tracked]] = True

        keep = np.ones(len(self.ids), bool)
        keep[fresh[free_fresh]] = False  # unconfirmed tracks not matched again end
        s_free = left_pool[self.shadow[left_pool]]  # shadow tracks not matched are lost, as confirmed ones are
        self.lost[s_free], self.alone[s_free] = True, 0
        keep &= ~(self.lost & (self.clock - self.seen > o.lost_seconds * self.fps))
        self._keep(keep)
        cand = rest[free_rest]
        if first:  # no confirmed track yet: the duplicates are those of the other detections
            alone = self._not_shadows(cand, cand, xyxy, score)
            cand, shadows = cand[alone], np.concatenate([shadows, cand[~alone]])
        self._start_tracks(xyxy, score, cls, shadows, False, out, shadow=True)
        self._start_tracks(xyxy, score, cls, cand, first, out)
        self._drop_duplicates()
        return out

    def _duplicate_bias(self, may: np.ndarray, pool: np.ndarray, high: np.ndarray, xyxy: np.ndarray,
                        score: np.ndarray) -> np.ndarray:  # fmt: skip
        """``DUP_BIAS`` where a tracked track (row of ``pool``) may match (``may``, ndarray[P, H] bool) a detection of
        ``high`` that is a duplicate of another of them. Only the detections in a choice (one of two or more that a
        track may match, or one that two or more tracks may match) are looked at: elsewhere a bias changes nothing,
        and the test costs an IoU matrix of the high-score detections (0.1 ms at 100 detections)."""
        choice = (may.sum(0) > 1) | may[may.sum(1) > 1].any(0)
        out = np.zeros(may.shape)
        if choice.any():
            tracked = (self.ids[pool] >= 0) & ~self.lost[pool]
            dup = ~self._not_shadows(high[choice], high, xyxy, score)
            out[:, choice] = DUP_BIAS * (may[:, choice] & tracked[:, None] & dup[None])
        return out

    @staticmethod
    def _not_shadows(rest: np.ndarray, taken: np.ndarray, xyxy: np.ndarray, score: np.ndarray) -> np.ndarray:
        """Which of the detections ``rest`` (ndarray[R] bool) are not duplicates (``SHADOW_IOU``, ``SHADOW_RATIO``,
        ``SAME_BOX_IOU``) of those ``taken`` (by the confirmed tracks on this frame)."""
        if not len(rest) or not len(taken):
            return np.ones(len(rest), bool)
        iou = np.where(rest[:, None] == taken[None, :], 0.0, _iou(xyxy[rest], xyxy[taken]))  # not itself
        weaker = score[rest, None] < SHADOW_RATIO * score[None, taken]
        shadow = ((iou > SHADOW_IOU) & weaker) | (iou > SAME_BOX_IOU)
        return ~shadow.any(1)

    def _start_tracks(self, xyxy: np.ndarray, score: np.ndarray, cls: np.ndarray, cand: np.ndarray, first: bool,
                      out: np.ndarray, shadow: bool = False) -> None:  # fmt: skip
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
        self.shadow = np.concatenate([self.shadow, np.full(len(new), shadow)])
        self.alone = np.concatenate([self.alone, np.zeros(len(new), np.int64)])
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
