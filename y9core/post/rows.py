"""Raw head output -> rows per image, by the implementation ``choose_post`` picks: the one door to the decode +
NMS implementations of ``y9core.post`` (host numpy, batched torch with the Triton or the fixed-point scan).

``postprocess(pred, ...)`` states the facts of ``pred`` (numpy or torch, which device, multi-label) to
``post.choice.choose_post`` and runs what it picks; ``rows_with(impl, pred, ...)`` runs a given one (the
Detector's pipelines, which choose once per batch shape). Training's validation, the public
``y9deploy.postprocess.postprocess`` and the Detector all come through here, so one prediction gives one set of
rows whoever asks. Importing this module needs numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from y9core.post.choice import PostImpl, choose_post, probe
from y9core.post.nms import MAX_NMS, decode_nms

#: the implementations ``rows_with`` runs (the CUDA-graph and end-to-end ones are the Detector's)
RAW_IMPLS = (PostImpl.HOST, PostImpl.TORCH, PostImpl.TORCH_TRITON)


def facts_of(pred: Any, *, multi_label: bool = False) -> dict[str, Any]:
    """The keyword facts of ``choose_post`` for a raw prediction (a numpy array or a torch tensor)."""
    tensor = hasattr(pred, "is_cuda")
    cuda = tensor and bool(pred.is_cuda)
    return dict(device="cuda" if cuda else "cpu", end2end=False, torch_tensors=tensor,
                triton=cuda and probe().triton, graphs=False, multi_label=multi_label)  # fmt: skip


def postprocess(
    pred: Any,
    *,
    conf: float | Sequence[float] | np.ndarray = 0.25,
    iou: float = 0.45,
    agnostic: bool = False,
    multi_label: bool = False,
    max_det: int = 300,
    classes: Sequence[int] | None = None,
    max_nms: int = MAX_NMS,
) -> list[np.ndarray]:
    """Raw head output -> detections per image (the official non_max_suppression semantics:
    ``y9core.post.nms``).

    Args:
        pred (ndarray or Tensor [B, 4+nc, A]): (cx, cy, w, h) in input pixels then nc class scores, for A
            anchors. A numpy array is post-processed on the host; a torch tensor where it is (``choose_post``).
        conf: score threshold (strictly greater passes), or one threshold per class (ndarray[nc]).
        iou: IoU threshold of the NMS (strictly greater suppresses).
        agnostic: one NMS over all classes.
        multi_label: keep every (anchor, class) pair above conf instead of the best class per anchor.
        max_det: most detections per image.
        classes: keep only these class ids.
        max_nms: most candidates (by score) given to the NMS.
    Returns:
        list of B ndarray[N, 6] float32: rows (x1, y1, x2, y2, score, class) in input pixels, by descending
        score.
    """
    impl = choose_post(**facts_of(pred, multi_label=multi_label))
    return rows_with(impl, pred, conf=conf, iou=iou, agnostic=agnostic, multi_label=multi_label,
                     max_det=max_det, classes=classes, max_nms=max_nms)  # fmt: skip


def rows_with(
    impl: PostImpl,
    pred: Any,
    *,
    conf: Any = 0.25,
    iou: float = 0.45,
    agnostic: bool = False,
    multi_label: bool = False,
    max_det: int = 300,
    classes: Any = None,
    max_nms: int = MAX_NMS,
    fallback: bool = True,
) -> list[np.ndarray]:
    """Run ``impl`` (one of ``RAW_IMPLS``) on ``pred``: the only caller of those implementations.

    ``fallback``: ``impl`` was chosen automatically, so a Triton kernel that fails here is recorded (the rule
    skips it from then on) and this call finishes with the fixed point instead of raising.
    """
    impl = PostImpl(impl)
    if impl is PostImpl.HOST:
        host = pred.float().cpu().numpy() if hasattr(pred, "cpu") else pred
        return decode_nms(host, conf=conf, iou=iou, agnostic=agnostic, multi_label=multi_label,
                          max_det=max_det, classes=classes, max_nms=max_nms)  # fmt: skip
    if impl not in RAW_IMPLS:
        raise ValueError(f"rows_with runs {', '.join(map(str, RAW_IMPLS))}; got {impl} (the Detector's).")
    if multi_label:
        raise ValueError(f"multi_label=True: the {impl} implementation has none; the host one has it.")
    from y9core.post.torch_batched import batched_postprocess_torch

    scan = "triton" if impl is PostImpl.TORCH_TRITON else "fixed-point"
    return batched_postprocess_torch(pred, conf=conf, iou=iou, agnostic=agnostic, max_det=max_det,
                                     classes=classes, max_nms=max_nms, scan=scan, fallback=fallback)  # fmt: skip
