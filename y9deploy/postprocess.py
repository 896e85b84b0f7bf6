"""The documented public path of post-processing: ``y9deploy.postprocess.postprocess`` (DESIGN.md, "Contracts").

``postprocess(pred, *, conf=0.25, iou=0.45, agnostic=False, multi_label=False, max_det=300, classes=None)``:
raw output ``[B, 4+nc, A]`` -> one ``(N, 6)`` float32 array per image, rows ``(x1, y1, x2, y2, score, class)``
in input-image pixels, by descending score; the official ``non_max_suppression`` semantics. It is
``y9core.post.rows.postprocess``, the one entry that picks the implementation (host numpy for arrays, the
batched torch one for tensors); y9's own code imports it from there.
"""

from __future__ import annotations

from y9core.post.rows import postprocess

__all__ = ["postprocess"]
