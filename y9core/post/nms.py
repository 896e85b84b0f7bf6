"""Host non-maximum suppression (numpy only).

Greedy NMS with the official semantics: boxes are visited by descending score (equal scores keep their
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

import numpy as np

from y9core.box_iou import box_iou_matrix

__all__ = [
    "BLOCK",
    "MAX_WH",
    "batched_nms",
    "class_offsets",
    "nms",
    "nms_sorted",
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


def nms_rows(
    boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, iou_thres: float, max_det: int, *, max_nms: int,
    agnostic: bool = False,
) -> np.ndarray:  # fmt: skip
    """One image's decoded candidates -> its rows ndarray[K, 6] float32 ``(x1, y1, x2, y2, score, class)`` by
    descending score: the ``max_nms`` best candidates go through greedy NMS, per class unless ``agnostic``
    (``class_offsets``), and at most ``max_det`` are kept (the host decode + NMS, ``y9core.post.nms``)."""
    order = order_by_score(scores)[:max_nms]
    boxes, scores, classes = boxes[order], scores[order], classes[order]
    shifted = boxes if agnostic else boxes + class_offsets(boxes, classes)
    keep = nms_sorted(shifted, iou_thres, max_det)
    rows = np.empty((len(keep), 6), np.float32)
    rows[:, :4] = boxes[keep]
    rows[:, 4] = scores[keep]
    rows[:, 5] = classes[keep]
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
