"""Post-processing, the public names: decode the raw head output, NMS, boxes back to frame pixels (numpy only).

The implementation is ``y9deploy.post.host`` (official ``non_max_suppression`` semantics, see there); the
other implementations (torch, Triton, CUDA graphs) and the rule that picks one are in ``y9deploy.post``.
"""

from __future__ import annotations

from y9deploy.post.host import (
    MAX_NMS,
    LetterboxInfo,
    batch_to_detections,
    decode,
    end2end_rows,
    host_rows,
    postprocess,
    scale_boxes,
    to_detections,
    unletterbox,
)

__all__ = [
    "MAX_NMS",
    "LetterboxInfo",
    "batch_to_detections",
    "decode",
    "end2end_rows",
    "host_rows",
    "postprocess",
    "scale_boxes",
    "to_detections",
    "unletterbox",
]
