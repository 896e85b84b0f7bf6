"""The host implementation of post-processing (numpy only): decode the raw head output (``decode``,
``decode_nms``) and non-maximum suppression (``nms``, ``batched_nms``, ``nms_rows``), in one module: the Detector's
host frame way and training's validation on the CPU run both halves back to back.

Decode: ``decode_nms`` has the semantics of the official ``non_max_suppression``:
1. candidates are anchors whose best class score is > conf;
2. boxes (cx, cy, w, h) -> (x1, y1, x2, y2) in float32 (``cx - w / 2`` ...);
3. multi_label: every (anchor, class) pair with score > conf, anchor-major then class order;
   otherwise the best class of each anchor (the first one on equal scores);
4. optional filter on class ids;
5. candidates sorted by descending score (stable: equal scores keep the order of step 3) and capped at
   ``max_nms`` (30000);
6. greedy NMS per class by shifting boxes by ``class * 7680`` (no shift when agnostic), IoU > iou
   suppresses, at most ``max_det`` kept;
7. rows (x1, y1, x2, y2, score, class) in input pixels, float32, by descending score.

On ties: the official code sorts with an unstable sort (PyTorch's CPU ``argsort(descending=True)`` does not
keep the input order of equal scores for more than a few dozen elements), so the order among exactly equal
scores there is an implementation detail; here it is defined (stable).

Extension: ``conf`` may be an array of one threshold per class. A pair (anchor, class) passes when its
score is > the threshold of its class; without multi_label an anchor keeps its best class only when that
score passes that class's threshold.

NMS: Greedy NMS with the official semantics: boxes are visited by descending score (equal scores keep their
input order: a stable sort), a box is kept unless a box kept before it overlaps it with IoU strictly greater
than the threshold. IoU is computed in float32 with the formula of the reference CPU kernel
(``inter / (area_i + area_j - inter)``), so results agree bit for bit with it: ``y9core.box_iou.box_iou_matrix``,
the one numpy IoU.

The greedy pass is vectorised: candidates are taken in blocks of ``BLOCK`` boxes; a block is first cleared
against the boxes already kept, then its own greedy order is resolved as the fixed point of
``keep[j] = alive[j] and not any(keep[i] and iou[i, j] > t for i < j)`` (a few matrix passes; an exact
row-by-row pass when a long chain of suppressions would need many). Processing stops once ``max_det`` boxes
are kept, since later boxes cannot change the first ``max_det``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from y9core.box_iou import box_iou_matrix

__all__ = [
    "BLOCK",
    "MAX_NMS",
    "MAX_WH",
    "check_classes",
    "check_thresholds",
    "decode",
    "decode_nms",
    "batched_nms",
    "class_offsets",
    "nms",
    "nms_sorted",
    "clip_scores",
    "decode_nms_frame",
    "order_by_score",
    "threshold_below",
]

#: Offset per class used by the official batched NMS (boxes of class c are moved by c * MAX_WH).
MAX_WH = 7680.0
#: Candidates resolved together (IoU block of BLOCK x BLOCK float32).
BLOCK = 128
_JACOBI_ITERS = 8


def threshold_below(t: float) -> np.float32:
    """The largest float32 <= t.

    For a float32 x, ``x > t`` evaluated in float64 (as the reference kernel compares its float IoU with a
    double threshold) equals ``x > threshold_below(t)`` evaluated in float32: no float64 temporaries needed.
    """
    f = np.float32(t)
    return f if float(f) <= t else np.nextafter(f, np.float32(-np.inf))


def _resolve_block(over: np.ndarray, alive: np.ndarray) -> np.ndarray:
    """Greedy order inside one block.

    Args:
        over (ndarray[n, n] bool): ``over[i, j]`` = IoU above threshold, only for i < j (strict upper).
        alive (ndarray[n] bool): boxes not already suppressed by earlier blocks.
    Returns:
        ndarray[n] bool: the boxes of the block that greedy NMS keeps.
    """
    keep = alive.copy()
    for _ in range(_JACOBI_ITERS):
        rows = over[keep]
        new = alive & ~rows.any(0) if rows.size else alive.copy()
        if np.array_equal(new, keep):
            return keep
        keep = new
    # Long suppression chain: exact sequential pass over the boxes that can suppress others.
    keep = alive.copy()
    for i in np.flatnonzero(over.any(1)):
        if keep[i]:
            keep &= ~over[i]
    return keep


def nms_sorted(boxes: np.ndarray, iou_thres: float, max_det: int | None = None) -> np.ndarray:
    """Greedy NMS of boxes ALREADY sorted by descending score.

    Args:
        boxes (ndarray[N, 4] xyxy): sorted candidates (float32 for parity with the official kernel).
        iou_thres: a box is suppressed when its IoU with a kept box is strictly greater.
        max_det: stop after this many kept boxes (None: no limit).
    Returns:
        ndarray[K] int64: positions (into ``boxes``) of the kept boxes, ascending (i.e. by score).
    """
    n = len(boxes)
    limit = n if max_det is None else int(max_det)
    # float32 IoU vs a double threshold, like the reference kernel, without float64 temporaries.
    thr = threshold_below(iou_thres) if boxes.dtype == np.float32 else np.float64(iou_thres)
    kept: list[np.ndarray] = []
    kept_boxes = boxes[:0]
    total = 0
    for start in range(0, n, BLOCK):
        if total >= limit:
            break
        blk = boxes[start : start + BLOCK]
        alive = ~(box_iou_matrix(kept_boxes, blk) > thr).any(0) if total else np.ones(len(blk), bool)
        if not alive.any():
            continue
        over = np.triu(box_iou_matrix(blk, blk) > thr, 1)
        keep = np.flatnonzero(_resolve_block(over, alive))[: limit - total]
        kept.append(keep + start)
        kept_boxes = np.concatenate([kept_boxes, blk[keep]]) if total else blk[keep]
        total += len(keep)
    return np.concatenate(kept).astype(np.int64) if kept else np.zeros(0, np.int64)


def _check_boxes_scores(boxes: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    boxes = np.asarray(boxes)
    scores = np.asarray(scores)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"boxes has shape {boxes.shape}; expected (N, 4) x1, y1, x2, y2.")
    if scores.shape != (boxes.shape[0],):
        raise ValueError(f"scores has shape {scores.shape}; expected ({boxes.shape[0]},), one per box.")
    return boxes, scores


def order_by_score(scores: np.ndarray) -> np.ndarray:
    """scores (ndarray[N]) -> ndarray[N] int64: indices by descending score, ties in input order (stable)."""
    return np.argsort(-np.asarray(scores), kind="stable")


def nms(
    boxes: np.ndarray, scores: np.ndarray, iou_thres: float = 0.45, *, max_det: int | None = None
) -> np.ndarray:
    """Greedy NMS.

    Args:
        boxes (ndarray[N, 4] xyxy): candidates (computed in float32 unless already float64).
        scores (ndarray[N]): their scores.
        iou_thres: suppress a box whose IoU with a kept box is strictly greater than this.
        max_det: keep at most this many (None: all).
    Returns:
        ndarray[K] int64: indices into ``boxes`` of the kept boxes, by descending score (ties: input order).
    """
    boxes, scores = _check_boxes_scores(boxes, scores)
    if boxes.dtype != np.float64:
        boxes = boxes.astype(np.float32, copy=False)
    order = order_by_score(scores)
    return order[nms_sorted(boxes[order], iou_thres, max_det)]


def class_offsets(boxes: np.ndarray, classes: np.ndarray, offset: float = MAX_WH) -> np.ndarray:
    """Per-class shift that keeps boxes of different classes apart: ndarray[N, 1] ``class * offset``.

    ``offset`` is the official 7680 unless the boxes span more than that, in which case it grows to the
    span (boxes of different classes must never overlap after the shift).
    """
    if len(boxes):
        span = float(np.max(boxes) - min(float(np.min(boxes)), 0.0))
        if span >= offset:
            offset = float(np.ceil(span + 1))
    return (np.asarray(classes, boxes.dtype) * boxes.dtype.type(offset))[:, None]


def _kept(
    boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, iou_thres: float, max_det: int, max_nms: int,
    agnostic: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """One image's decoded candidates -> the (boxes, scores, classes) greedy NMS keeps, by descending score: the
    ``max_nms`` best go through NMS per class unless ``agnostic`` (``class_offsets``), at most ``max_det`` kept."""
    order = order_by_score(scores)[:max_nms]
    boxes, scores, classes = boxes[order], scores[order], classes[order]
    shifted = boxes if agnostic else boxes + class_offsets(boxes, classes)
    keep = nms_sorted(shifted, iou_thres, max_det)
    return boxes[keep], scores[keep], classes[keep]


def nms_rows(
    boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, iou_thres: float, max_det: int, *, max_nms: int,
    agnostic: bool = False,
) -> np.ndarray:  # fmt: skip
    """One image's decoded candidates -> its rows ndarray[K, 6] float32 ``(x1, y1, x2, y2, score, class)`` by
    descending score (``_kept``: the host decode + NMS, ``y9core.post.nms``)."""
    boxes, scores, classes = _kept(boxes, scores, classes, iou_thres, max_det, max_nms, agnostic)
    rows = np.empty((len(boxes), 6), np.float32)
    rows[:, :4] = boxes
    rows[:, 4] = scores
    rows[:, 5] = classes
    return rows


def batched_nms(
    boxes: np.ndarray,
    scores: np.ndarray,
    classes: np.ndarray,
    iou_thres: float = 0.45,
    *,
    max_det: int | None = None,
    agnostic: bool = False,
) -> np.ndarray:
    """Per-class greedy NMS (boxes of different classes never suppress each other) via class offsets.

    Args:
        boxes (ndarray[N, 4] xyxy), scores (ndarray[N]), classes (ndarray[N] int or float class ids).
        iou_thres, max_det: as ``nms``.
        agnostic: ignore classes (one NMS over all boxes).
    Returns:
        ndarray[K] int64: indices of the kept boxes by descending score (ties: input order).
    """
    boxes, scores = _check_boxes_scores(boxes, scores)
    classes = np.asarray(classes)
    if classes.shape != scores.shape:
        raise ValueError(f"classes has shape {classes.shape}; expected ({len(scores)},), one per box.")
    if boxes.dtype != np.float64:
        boxes = boxes.astype(np.float32, copy=False)
    if not agnostic:
        boxes = boxes + class_offsets(boxes, classes)
    return nms(boxes, scores, iou_thres, max_det=max_det)


#: Most candidates passed to NMS (the official max_nms).
MAX_NMS = 30000


def check_thresholds(conf: float | Sequence[float] | np.ndarray, iou: float, nc: int) -> np.ndarray:
    """conf -> float32 scalar array or ndarray[nc]; validate ranges."""
    c = np.asarray(conf, dtype=np.float64)
    if c.ndim == 1 and c.shape[0] != nc:
        raise ValueError(f"conf has {c.shape[0]} per-class thresholds; expected one per class ({nc}).")
    if c.ndim > 1:
        raise ValueError(f"conf has shape {c.shape}; expected a number or one threshold per class ({nc},).")
    if c.size == 0 or not np.all((c >= 0) & (c <= 1)):
        raise ValueError(f"conf is {conf!r}; expected a confidence threshold (or thresholds) in [0, 1].")
    if not 0 <= float(iou) <= 1:
        raise ValueError(f"iou is {iou!r}; expected an IoU threshold in [0, 1].")
    return c.astype(np.float32)


def check_classes(classes: Sequence[int] | np.ndarray | None, nc: int) -> np.ndarray | None:
    if classes is None:
        return None
    ids = np.asarray(classes).ravel()
    if ids.size and (not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0 or ids.max() >= nc):
        raise ValueError(f"classes is {classes!r}; expected class ids in [0, {nc - 1}] for this model.")
    return ids.astype(np.int64)


def decode(
    p: np.ndarray,
    conf: np.ndarray,
    *,
    multi_label: bool = False,
    classes: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidates of one image before sorting (steps 1-4 of the module docstring).

    Args:
        p (ndarray[4+nc, A] float32): raw output of one image.
        conf (float32 scalar array or ndarray[nc]): threshold(s).
        multi_label: one candidate per (anchor, class) pair above the threshold.
        classes (ndarray[K] int64 or None): keep only these class ids.
    Returns:
        ``(boxes ndarray[N, 4] float32 xyxy, scores ndarray[N] float32, cls ndarray[N] int64)`` in
        candidate order (anchor-major, then class).
    """
    scores_all = p[4:]  # [nc, A]
    nc = scores_all.shape[0]
    per_class = conf.ndim == 1
    low = conf.min() if per_class else conf
    best = scores_all.max(0) if nc > 1 else scores_all[0]
    cand = np.flatnonzero(best > low)
    if multi_label and nc > 1:
        sub = scores_all[:, cand].T  # [n, nc]
        i, j = np.nonzero(sub > conf)  # per_class: broadcast over the class axis
        anchors, scores, cls = cand[i], sub[i, j], j.astype(np.int64)
    else:
        one = nc == 1
        cls = np.zeros(len(cand), np.int64) if one else scores_all[:, cand].argmax(0).astype(np.int64)
        scores = best[cand]
        if per_class:
            ok = scores > conf[cls]
            cand, scores, cls = cand[ok], scores[ok], cls[ok]
        anchors = cand
    if classes is not None:
        ok = np.isin(cls, classes)
        anchors, scores, cls = anchors[ok], scores[ok], cls[ok]
    xywh = p[:4, anchors]
    half_w, half_h = xywh[2] / 2, xywh[3] / 2
    boxes = np.empty((len(anchors), 4), np.float32)
    boxes[:, 0] = xywh[0] - half_w
    boxes[:, 1] = xywh[1] - half_h
    boxes[:, 2] = xywh[0] + half_w
    boxes[:, 3] = xywh[1] + half_h
    return boxes, scores.astype(np.float32, copy=False), cls


def decode_nms(
    pred: np.ndarray,
    *,
    conf: float | Sequence[float] | np.ndarray = 0.25,
    iou: float = 0.45,
    agnostic: bool = False,
    multi_label: bool = False,
    max_det: int = 300,
    classes: Sequence[int] | None = None,
    max_nms: int = MAX_NMS,
) -> list[np.ndarray]:
    """Raw head output -> rows per image on the host (official non_max_suppression semantics, see the module
    docstring). The host implementation; callers go through ``y9core.post.rows.postprocess``, which picks it.

    Args:
        pred (ndarray[B, 4+nc, A]): (cx, cy, w, h) in input pixels then nc class scores, for A anchors;
            float16/float64 are converted to float32 (the computation is float32).
        conf: score threshold (strictly greater passes), or one threshold per class (ndarray[nc]).
        iou: IoU threshold of the NMS (strictly greater suppresses).
        agnostic: one NMS over all classes.
        multi_label: keep every (anchor, class) pair above conf instead of the best class per anchor.
        max_det: most detections per image.
        classes: keep only these class ids.
        max_nms: most candidates (by score) given to the NMS.
    Returns:
        list of B ndarray[N, 6] float32: rows (x1, y1, x2, y2, score, class) in input pixels, by
        descending score.
    """
    if not isinstance(pred, np.ndarray):
        raise TypeError(f"pred is a {type(pred).__name__}; expected a numpy.ndarray [B, 4+nc, A].")
    if pred.ndim != 3 or pred.shape[1] < 5:
        raise ValueError(f"pred has shape {pred.shape}; expected [B, 4+nc, A] with at least one class.")
    if int(max_det) < 1:
        raise ValueError(f"max_det is {max_det!r}; expected a positive number of detections.")
    if pred.dtype != np.float32:
        pred = pred.astype(np.float32)
    nc = pred.shape[1] - 4
    thr = check_thresholds(conf, iou, nc)
    class_ids = check_classes(classes, nc)
    out = []
    for p in pred:
        boxes, scores, cls = decode(p, thr, multi_label=multi_label, classes=class_ids)
        if len(scores) == 0:
            out.append(np.zeros((0, 6), np.float32))
            continue
        out.append(nms_rows(boxes, scores, cls, iou, max_det, max_nms=max_nms, agnostic=agnostic))
    return out


def clip_scores(scores: np.ndarray) -> np.ndarray:
    """The runtime's own scores clipped to [0, 1] in place (a sigmoid in FP16, a fused graph or an accelerator's
    rounding gives 1 + a few ulps; ``Detections`` still refuses such scores when a user builds them). Returns it."""
    return np.clip(scores, 0.0, 1.0, out=scores)


def decode_nms_frame(
    pred: np.ndarray, *, thresholds: np.ndarray, iou: float, max_det: int, classes: np.ndarray | None,
    agnostic: bool, max_nms: int, unmap: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """The first image of a raw prediction -> its detections in frame pixels, in one call (the Detector's host
    frame plan, ``y9deploy.runtime.frame_plan``, whose settings were checked once: ``check_thresholds``,
    ``check_classes``): ``decode_nms``'s rows, their boxes mapped back by ``unmap`` = (offset, scale, limit)
    ndarray[4] float32 (``y9core.letterbox.unmap_factors``: ``(x - offset) * scale`` clipped to ``[0, limit]``,
    as ``scale_boxes`` does), their scores clipped (``clip_scores``).

    Returns:
        ``(xyxy ndarray[K, 4] float32, scores ndarray[K] float32, classes ndarray[K] int64)`` by descending score.
    """
    p = np.asarray(pred[0])
    if p.dtype != np.float32:
        p = p.astype(np.float32)
    boxes, scores, cls = decode(p, thresholds, classes=classes)
    if len(scores):
        boxes, scores, cls = _kept(boxes, scores, cls, iou, max_det, max_nms, agnostic)
    offset, scale, limit = unmap
    boxes -= offset  # a new array (_kept and decode index): nothing of the caller's is changed
    boxes *= scale
    np.clip(boxes, 0, limit, out=boxes)
    return boxes, clip_scores(scores), cls
