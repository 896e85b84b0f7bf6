"""The numpy box operations, shapes in each docstring: the IoU, the greedy NMS and the decode of one image's head
output, and ``decode_nms_frame``, the Detector's one-frame call, which runs them all here (nothing of y9 outside
this module). The batch API built on them (``decode_nms``, ``nms_rows``, ``batched_nms``, the checks of the
settings) is ``y9core.post.nms``; the torch IoU is ``y9core.box_iou_torch``.

IoU: ``box_iou(a, b)`` takes boxes ``(x1, y1, x2, y2)`` in the last axis of ``a`` and ``b`` (their leading axes
broadcast) and returns one IoU per pair, computed in the boxes' dtype with these float operations in this order
(the NMS here, ``y9core.box_iou_torch`` and the Triton kernel of ``y9core.post.triton_nms`` all compute the same
ones, so that their results agree bit for bit)::

    area = (x2 - x1) * (y2 - y1)                      (unless given)
    w = max(min(a.x2, b.x2) - max(a.x1, b.x1), 0)
    h = max(min(a.y2, b.y2) - max(a.y1, b.y1), 0)
    inter = w * h
    union = area_a + area_b - inter  (+ eps when eps != 0)
    iou = inter / union

A zero union gives NaN (0 / 0), which compares False with any threshold. ``box_iou_matrix(a, b)`` is the same
function on ``a[..., :, None, :]`` and ``b[..., None, :, :]`` (every pair of an N x M grid), written into its own
temporaries (``out=``): an N x M matrix costs two buffers.

NMS: greedy, with the official semantics: boxes are visited by descending score (equal scores keep their input
order: a stable sort), a box is kept unless a box kept before it overlaps it with IoU strictly greater than the
threshold. The IoU is computed in float32 with the formula of the reference CPU kernel, so results agree with it
bit for bit. The pass is vectorised: candidates are taken in blocks of ``BLOCK`` boxes; a block is first cleared
against the boxes already kept, then its own greedy order is resolved as the fixed point of
``keep[j] = alive[j] and not any(keep[i] and iou[i, j] > t for i < j)`` (a few matrix passes; an exact row-by-row
pass when a long chain of suppressions would need many). It stops once ``max_det`` boxes are kept, since later
boxes cannot change the first ``max_det``.

Decode + NMS of one image (``decode`` then ``kept_candidates``), the official ``non_max_suppression``'s semantics:
1. candidates are anchors whose best class score is > conf;
2. boxes (cx, cy, w, h) -> (x1, y1, x2, y2) in float32 (``cx - w / 2`` ...);
3. multi_label: every (anchor, class) pair with score > conf, anchor-major then class order;
   otherwise the best class of each anchor (the first one on equal scores);
4. optional filter on class ids;
5. candidates sorted by descending score and capped at ``max_nms`` (30000), stable: equal scores keep the order of
   step 3 (the official unstable sort leaves their order an implementation detail; here it is defined);
6. greedy NMS per class by shifting boxes by ``class * 7680`` (no shift when agnostic), at most ``max_det`` kept;
7. rows (x1, y1, x2, y2, score, class) in input pixels, float32, by descending score.
``conf`` may be an array of one threshold per class: a pair (anchor, class) passes when its score is > the
threshold of its class; without multi_label an anchor keeps its best class only when that score passes it.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BLOCK",
    "MAX_WH",
    "box_area",
    "box_iou",
    "box_iou_matrix",
    "check_boxes_scores",
    "class_offsets",
    "clip_scores",
    "decode",
    "decode_nms_frame",
    "kept_candidates",
    "nms",
    "nms_sorted",
    "order_by_score",
    "threshold_below",
]


def box_area(boxes: np.ndarray) -> np.ndarray:
    """boxes (ndarray[..., 4] xyxy) -> ndarray[...]: ``(x2 - x1) * (y2 - y1)`` in the boxes' dtype."""
    return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])


def box_iou(
    a: np.ndarray,
    b: np.ndarray,
    *,
    eps: float = 0.0,
    area_a: np.ndarray | None = None,
    area_b: np.ndarray | None = None,
    zero_empty: bool = False,
) -> np.ndarray:
    """IoU of paired boxes: a (ndarray[..., 4] xyxy), b (ndarray[..., 4] xyxy) -> ndarray[...] (the leading
    axes broadcast), in the boxes' dtype (integers: float64); the formula is in the module docstring.

    Args:
        eps: added to the union when not 0 (a zero union then gives 0 instead of NaN).
        area_a, area_b (ndarray broadcasting with a[..., 0], b[..., 0]): the areas to use instead of
            ``box_area`` (pycocotools' ``w * h`` of xywh boxes, whose corners ``x + w`` the caller passes).
        zero_empty: IoU 0 wherever the intersection is not positive, whatever the union (pycocotools).
    """
    a, b = _floats(a), _floats(b)
    if a.ndim == b.ndim == 1:  # one pair: on arrays of one pair (the operations in place need arrays)
        one = [None if x is None else np.reshape(x, 1) for x in (area_a, area_b)]
        return _iou(a[None], b[None], eps, one[0], one[1], zero_empty)[0]
    return _iou(a, b, eps, area_a, area_b, zero_empty)


def box_iou_matrix(a: np.ndarray, b: np.ndarray, *, eps: float = 0.0, zero_empty: bool = False) -> np.ndarray:
    """IoU of every pair: a (ndarray[..., N, 4] xyxy), b (ndarray[..., M, 4] xyxy) -> ndarray[..., N, M];
    ``box_iou`` (same ``eps`` and ``zero_empty``) on ``a[..., :, None, :]`` and ``b[..., None, :, :]``."""
    a, b = _floats(a), _floats(b)
    return _iou(a[..., :, None, :], b[..., None, :, :], eps, None, None, zero_empty)


def _floats(x: np.ndarray) -> np.ndarray:
    """x as an ndarray of floats (integers: float64)."""
    x = x if type(x) is np.ndarray else np.asarray(x)
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def _iou(a: np.ndarray, b: np.ndarray, eps: float, area_a, area_b, zero_empty: bool) -> np.ndarray:
    """``box_iou`` of checked arrays (the hot path of the host NMS: each column read once)."""
    ax1, ay1, ax2, ay2 = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bx1, by1, bx2, by2 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    if area_a is None:
        area_a = (ax2 - ax1) * (ay2 - ay1)
    if area_b is None:
        area_b = (bx2 - bx1) * (by2 - by1)
    w = np.minimum(ax2, bx2)
    w -= np.maximum(ax1, bx1)
    np.maximum(w, 0, out=w)
    h = np.minimum(ay2, by2)
    h -= np.maximum(ay1, by1)
    np.maximum(h, 0, out=h)
    inter = np.multiply(w, h, out=w)
    union = np.add(area_a, area_b)
    if union.shape == inter.shape:
        union -= inter
    else:  # areas given with fewer axes than the pairs
        union = union - inter
    if eps:
        union += eps
    empty = ~(inter > 0) if zero_empty else None
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = np.divide(inter, union, out=inter)
    if empty is not None:
        iou[empty] = 0
    return iou


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


def check_boxes_scores(boxes: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """boxes (ndarray[N, 4] xyxy), scores (ndarray[N]) as arrays; one clear sentence for another shape."""
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
    boxes, scores = check_boxes_scores(boxes, scores)
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


def kept_candidates(
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


def clip_scores(scores: np.ndarray) -> np.ndarray:
    """The runtime's own scores clipped to [0, 1] in place (a sigmoid in FP16, a fused graph or an accelerator's
    rounding gives 1 + a few ulps; ``Detections`` still refuses such scores when a user builds them). Returns it."""
    return np.clip(scores, 0.0, 1.0, out=scores)


def decode_nms_frame(
    pred: np.ndarray, *, thresholds: np.ndarray, iou: float, max_det: int, classes: np.ndarray | None,
    agnostic: bool, max_nms: int, unmap: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """The first image of a raw prediction -> its detections in frame pixels, in one call (the Detector's host
    frame plan, ``y9deploy.runtime.frame_plan``, whose settings were checked once: ``y9core.post.nms.check_thresholds``,
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
        boxes, scores, cls = kept_candidates(boxes, scores, cls, iou, max_det, max_nms, agnostic)
    offset, scale, limit = unmap
    boxes -= offset  # a new array (kept_candidates and decode index): nothing of the caller's is changed
    boxes *= scale
    np.clip(boxes, 0, limit, out=boxes)
    return boxes, clip_scores(scores), cls
