"""Host non-maximum suppression (numpy only), the public names; the implementation is ``y9deploy.post.nms``."""

from __future__ import annotations

from y9deploy.post.nms import (
    BLOCK,
    MAX_WH,
    batched_nms,
    box_area,
    box_iou,
    class_offsets,
    nms,
    nms_sorted,
    order_by_score,
    threshold_below,
)

__all__ = [
    "BLOCK",
    "MAX_WH",
    "batched_nms",
    "box_area",
    "box_iou",
    "class_offsets",
    "nms",
    "nms_sorted",
    "order_by_score",
    "threshold_below",
]
