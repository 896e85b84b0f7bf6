"""Merging the detections of overlapping tiles into one ``Detections`` of the frame (``merge_detections``): per-class
NMS then intersection-over-smaller suppression (``"nms"``), or non-maximum merging (``"nmm"``, ``greedy_nmm``); the
two methods are described in ``y9deploy.pipelines.tiling``."""

from __future__ import annotations

import numpy as np

from y9core.boxes import box_area, box_iou
from y9core.post.nms import batched_nms
from y9deploy.detections import Detections

MERGES = ("nms", "nmm")


def _ios_suppress(boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, thr: float) -> np.ndarray:
    """Keep mask: drop a box when a higher-scored box of its class covers > thr of it (intersection over the
    smaller area)."""
    order = np.argsort(-scores, kind="stable")
    keep = np.ones(len(boxes), bool)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    for rank, i in enumerate(order):
        if not keep[i]:
            continue
        later = order[rank + 1 :]
        later = later[keep[later] & (classes[later] == classes[i])]
        if not len(later):
            continue
        iw = np.minimum(boxes[later, 2], boxes[i, 2]) - np.maximum(boxes[later, 0], boxes[i, 0])
        ih = np.minimum(boxes[later, 3], boxes[i, 3]) - np.maximum(boxes[later, 1], boxes[i, 1])
        inter = np.clip(iw, 0, None) * np.clip(ih, 0, None)
        smaller = np.minimum(area[later], area[i])
        with np.errstate(invalid="ignore", divide="ignore"):
            keep[later[inter / smaller > thr]] = False
    return keep


def _overlaps(box: np.ndarray, others: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(IoU (``y9core.boxes``), intersection over the smaller box) of ``box`` [4] with each of ``others`` [K, 4]."""
    iw = np.minimum(others[:, 2], box[2]) - np.maximum(others[:, 0], box[0])
    ih = np.minimum(others[:, 3], box[3]) - np.maximum(others[:, 1], box[1])
    inter = np.clip(iw, 0, None) * np.clip(ih, 0, None)
    smaller = np.minimum(box_area(box), box_area(others))
    with np.errstate(invalid="ignore", divide="ignore"):
        return box_iou(box, others), inter / smaller


def greedy_nmm(
    boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, iou: float, ios: float | None,
    *, agnostic: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Non-maximum merging (``y9deploy.pipelines.tiling``): -> (boxes, scores, classes) of the merged groups, by score; a
    group has the class of its best box (with ``agnostic`` boxes of any class merge)."""
    order = np.argsort(-scores, kind="stable")
    alive = np.ones(len(boxes), bool)
    out_b, out_s, out_c = [], [], []
    for i in order:
        if not alive[i]:
            continue
        alive[i] = False
        cand = np.flatnonzero(alive if agnostic else alive & (classes == classes[i]))
        box = boxes[i]
        if len(cand):
            by_iou, by_ios = _overlaps(boxes[i], boxes[cand])
            match = by_iou > iou
            if ios is not None:
                match |= by_ios > ios
            group = cand[match]
            alive[group] = False
            if len(group):
                members = boxes[np.r_[i, group]]
                box = np.r_[members[:, :2].min(0), members[:, 2:].max(0)]
        out_b.append(box)
        out_s.append(scores[i])
        out_c.append(classes[i])
    return np.asarray(out_b, np.float32).reshape(-1, 4), np.asarray(out_s, np.float32), np.asarray(out_c)


def merge_detections(
    parts: list[Detections],
    offsets: list[tuple[int, int]],
    frame_hw: tuple[int, int],
    *,
    merge: str = "nms",
    iou: float = 0.5,
    ios: float | None = 0.8,
    agnostic: bool = False,
    max_det: int = 1000,
) -> Detections:
    """Detections of crops (each in its crop's pixels, crop at ``offset = (x0, y0)``) -> one Detections of the
    frame: shifted, clipped, then merged (``merge``: "nms" or "nmm", module docstring; all classes together
    with ``agnostic``; ``ios=None`` leaves out the intersection-over-smaller rule)."""
    if merge not in MERGES:
        raise ValueError(f"merge={merge!r}; expected one of {', '.join(MERGES)}.")
    names = parts[0].names if parts else []
    if not any(len(p) for p in parts):
        return Detections.empty(names)
    boxes = np.concatenate([p.xyxy + np.array([x, y, x, y], np.float32) for p, (x, y) in zip(parts, offsets)])
    scores = np.concatenate([p.confidence for p in parts])
    classes = np.concatenate([p.class_id for p in parts])
    h, w = frame_hw
    boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, w)
    boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, h)
    if merge == "nmm":
        boxes, scores, classes = greedy_nmm(boxes, scores, classes, iou, ios, agnostic=agnostic)
        return Detections(boxes[:max_det], scores[:max_det], classes[:max_det], names)
    keep = batched_nms(boxes, scores, classes, iou, agnostic=agnostic)
    boxes, scores, classes = boxes[keep], scores[keep], classes[keep]
    if ios is not None and len(boxes) > 1:
        ok = _ios_suppress(boxes, scores, np.zeros_like(classes) if agnostic else classes, ios)
        boxes, scores, classes = boxes[ok], scores[ok], classes[ok]
    return Detections(boxes[:max_det], scores[:max_det], classes[:max_det], names)
