"""Recall at an IoU threshold: how many ground-truth boxes a set of detections finds (tiling benchmarks/tests).

Matching is greedy by descending score, as in COCO-style evaluation: each detection takes the unmatched
ground-truth box of its class with the highest IoU, if that IoU is at least ``iou``.
"""

from __future__ import annotations

import numpy as np

from y9core.boxes import box_iou_matrix as box_iou


def matched_ground_truth(
    boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, gt_boxes: np.ndarray, gt_classes: np.ndarray,
    *, iou: float = 0.5,
) -> np.ndarray:  # fmt: skip
    """Boolean ndarray[M]: which ground-truth boxes (xyxy, with their classes) some detection matches."""
    gt_boxes = np.asarray(gt_boxes, np.float32).reshape(-1, 4)
    found = np.zeros(len(gt_boxes), bool)
    boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
    if not len(boxes) or not len(gt_boxes):
        return found
    overlaps = box_iou(boxes, gt_boxes)
    same = np.asarray(classes)[:, None] == np.asarray(gt_classes)[None, :]
    overlaps = np.where(same, np.nan_to_num(overlaps, nan=0.0), 0.0)
    for i in np.argsort(-np.asarray(scores), kind="stable"):
        cand = np.where(found, -1.0, overlaps[i])
        j = int(np.argmax(cand))
        if cand[j] >= iou:
            found[j] = True
    return found


def recall_at_iou(dets, gt_boxes: np.ndarray, gt_classes: np.ndarray, *, iou: float = 0.5) -> float:
    """Fraction of ground-truth boxes that ``dets`` (a Detections) finds; 1.0 when there are none."""
    if len(gt_boxes) == 0:
        return 1.0
    found = matched_ground_truth(dets.xyxy, dets.confidence, dets.class_id, gt_boxes, gt_classes, iou=iou)
    return float(found.mean())
