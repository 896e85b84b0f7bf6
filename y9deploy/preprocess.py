"""Pre-processing, the public names: the letterbox (shared with training), colour, layout and normalisation.

The geometry and the OpenCV letterbox live in ``y9core.letterbox`` (training imports them from there); the
host blob in ``y9deploy.pre.host``; the GPU letterbox in ``y9deploy.pre.torch_letterbox``. No torch here.
"""

from __future__ import annotations

from y9core.letterbox import (
    LetterboxInfo,
    Shape,
    as_hw,
    letterbox,
    letterbox_info,
    letterbox_params,
    scale_boxes,
    unletterbox,
)
from y9deploy.pre.host import check_frame, check_frames, fill_value, letterbox_batch_u8, prepare

__all__ = [
    "LetterboxInfo",
    "Shape",
    "as_hw",
    "check_frame",
    "check_frames",
    "fill_value",
    "letterbox",
    "letterbox_batch_u8",
    "letterbox_info",
    "letterbox_params",
    "prepare",
    "scale_boxes",
    "unletterbox",
]
