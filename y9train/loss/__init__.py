"""YOLOv9 training loss: task-aligned assigner, CIoU + DFL box losses, BCE class loss, dual-branch weighting."""

from y9train.loss.assigner import Assignment, TaskAlignedAssigner
from y9train.loss.boxes import box_iou, ciou
from y9train.loss.detection_loss import DetectionLoss
from y9train.loss.dfl import dfl_decode, dfl_loss
from y9train.loss.grid import AnchorGrid

__all__ = [
    "AnchorGrid",
    "Assignment",
    "DetectionLoss",
    "TaskAlignedAssigner",
    "box_iou",
    "ciou",
    "dfl_decode",
    "dfl_loss",
]
