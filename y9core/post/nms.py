"""The host post-processing's batch API (numpy only), built on the box operations of ``y9core.boxes``:
``decode_nms`` (raw head output [B, 4+nc, A] -> rows per image, with the official ``non_max_suppression``'s
semantics whose seven steps ``y9core.boxes`` lists), ``nms_rows`` (one image's decoded candidates -> rows),
``batched_nms`` (per-class NMS of given boxes) and the checks of the settings (``check_thresholds``,
``check_classes``). Training's validation on the CPU and the Detector's general way come here through
``y9core.post.rows``; the Detector's one-frame way calls ``y9core.boxes.decode_nms_frame`` itself.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from y9core.boxes import check_boxes_scores, class_offsets, decode, kept_candidates, nms

__all__ = ["MAX_NMS", "batched_nms", "check_classes", "check_thresholds", "decode_nms", "nms_rows"]

#: Most candidates passed to NMS (the official max_nms).
MAX_NMS = 30000


def nms_rows(
    boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, iou_thres: float, max_det: int, *, max_nms: int,
    agnostic: bool = False,
) -> np.ndarray:  # fmt: skip
    """One image's decoded candidates -> its rows ndarray[K, 6] float32 ``(x1, y1, x2, y2, score, class)`` by
    descending score (``y9core.boxes.kept_candidates``: steps 5-7 of the host decode + NMS)."""
    boxes, scores, classes = kept_candidates(boxes, scores, classes, iou_thres, max_det, max_nms, agnostic)
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
        iou_thres, max_det: as ``y9core.boxes.nms``.
        agnostic: ignore classes (one NMS over all boxes).
    Returns:
        ndarray[K] int64: indices of the kept boxes by descending score (ties: input order).
    """
    boxes, scores = check_boxes_scores(boxes, scores)
    classes = np.asarray(classes)
    if classes.shape != scores.shape:
        raise ValueError(f"classes has shape {classes.shape}; expected ({len(scores)},), one per box.")
    if boxes.dtype != np.float64:
        boxes = boxes.astype(np.float32, copy=False)
    if not agnostic:
        boxes = boxes + class_offsets(boxes, classes)
    return nms(boxes, scores, iou_thres, max_det=max_det)


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
    """Raw head output -> rows per image on the host (official non_max_suppression semantics: the steps in
    ``y9core.boxes``). The host implementation; callers go through ``y9core.post.rows.postprocess``, which picks it.

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
