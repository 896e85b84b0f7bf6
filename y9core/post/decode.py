"""The host implementation of post-processing (numpy only): decode the raw head output + NMS.

``decode_nms`` has the semantics of the official ``non_max_suppression``:
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
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from y9core.post.nms import nms_rows

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
