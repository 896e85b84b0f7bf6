"""Batched decode + NMS of a whole batch on the GPU, for the Detector's GPU path (torch imported lazily).

``y9deploy.gpu_ops.postprocess_torch`` handles one image at a time, with a few device syncs each; at batch
64 those syncs dominate. This does the batch at once: one sync for the candidate count, a batched stable
sort, batched IoU matrices (``[b, K, K]``, images taken in groups that fit ``budget`` elements), the greedy
NMS as the fixed point of ``keep[j] = alive[j] and not any(keep[i] and iou[i, j] > t, i < j)`` (one sync per
pass), and one download of the rows. It computes the same float32 operations in the same order as
``y9deploy.postprocess.postprocess`` (candidates, stable descending order, class offsets, IoU formula,
threshold), so the detections are identical (tests compare them on CPU tensors). Images whose candidate
count would not fit ``budget`` go through ``gpu_ops.postprocess_torch``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from y9deploy.nms import MAX_WH, threshold_below
from y9deploy.postprocess import MAX_NMS, _check_classes, _check_thresholds

BUDGET = 1 << 27  # elements of one [b, K, K] IoU group (float32: 512 MB)
CHECK_EVERY = 4  # fixed-point passes of the greedy NMS between convergence checks


def batched_postprocess_torch(
    pred: Any,
    *,
    conf: Any = 0.25,
    iou: float = 0.45,
    agnostic: bool = False,
    max_det: int = 300,
    classes: Any = None,
    max_nms: int = MAX_NMS,
    budget: int = BUDGET,
) -> list[np.ndarray]:
    """pred (Tensor[B, 4+nc, A], any device) -> list of B ndarray[N, 6] float32 rows (x1, y1, x2, y2, score,
    class) in input pixels by descending score: the result of ``postprocess.postprocess``."""
    import torch

    if pred.ndim != 3 or pred.shape[1] < 5:
        raise ValueError(
            f"pred has shape {tuple(pred.shape)}; expected [B, 4+nc, A] with at least one class."
        )
    if int(max_det) < 1:
        raise ValueError(f"max_det is {max_det!r}; expected a positive number of detections.")
    pred = pred.float()
    b, c, _ = pred.shape
    nc, dev = c - 4, pred.device
    thr = _check_thresholds(conf, iou, nc)
    ids = _check_classes(classes, nc)
    best, cls = pred[:, 4:].max(1)  # [B, A]: the best class of each anchor (first one on ties)
    valid = best > (torch.as_tensor(thr, device=dev)[cls] if thr.ndim == 1 else float(thr))
    if ids is not None:
        valid &= torch.isin(cls, torch.as_tensor(ids, device=dev))
    k = min(int(valid.sum(1).max()), int(max_nms))  # the one sync before the NMS
    if k == 0:
        return [np.zeros((0, 6), np.float32) for _ in range(b)]
    key = torch.where(valid, best, torch.full_like(best, -float("inf")))
    order = torch.sort(key, dim=1, descending=True, stable=True).indices[:, :k]  # [B, K]
    scores = best.gather(1, order)
    cls_k = cls.gather(1, order)
    alive = valid.gather(1, order)
    xywh = pred[:, :4].gather(2, order[:, None, :].expand(b, 4, k))  # [B, 4, K]
    half_w, half_h = xywh[:, 2] / 2, xywh[:, 3] / 2
    boxes = torch.stack(
        [xywh[:, 0] - half_w, xywh[:, 1] - half_h, xywh[:, 0] + half_w, xywh[:, 1] + half_h], 2
    )
    clsf = cls_k.float()
    if agnostic:
        shifted = boxes
    else:
        hi = boxes.masked_fill(~alive[..., None], -float("inf")).amax((1, 2)).double()
        lo = boxes.masked_fill(~alive[..., None], float("inf")).amin((1, 2)).double().clamp(max=0.0)
        span = hi - lo
        offset = torch.where(span >= MAX_WH, torch.ceil(span + 1), torch.full_like(span, MAX_WH)).float()
        shifted = boxes + (clsf * offset[:, None])[..., None]
    t = float(threshold_below(iou))
    if k * k > budget:
        return _per_image(
            pred, conf=conf, iou=iou, agnostic=agnostic, max_det=max_det, classes=classes, max_nms=max_nms
        )
    group = max(1, budget // (k * k))
    keep_all = []
    upper = torch.ones((k, k), dtype=torch.bool, device=dev).triu_(1)
    for s in range(0, b, group):
        keep_all.append(_greedy(shifted[s : s + group], alive[s : s + group], upper, t))
    keep = torch.cat(keep_all)
    keep &= keep.cumsum(1) <= int(max_det)
    rows = torch.cat([boxes, scores[..., None], clsf[..., None]], 2)
    rows_h, keep_h = rows.cpu().numpy(), keep.cpu().numpy()
    return [np.ascontiguousarray(rows_h[i][keep_h[i]]) for i in range(b)]


def _greedy(boxes: Any, alive: Any, upper: Any, t: float) -> Any:
    """Greedy NMS of sorted boxes Tensor[b, K, 4] (alive Tensor[b, K] bool) -> keep Tensor[b, K] bool."""
    import torch

    x1, y1, x2, y2 = boxes.unbind(2)
    area = (x2 - x1) * (y2 - y1)
    w = torch.minimum(x2[:, :, None], x2[:, None, :]) - torch.maximum(x1[:, :, None], x1[:, None, :])
    w.clamp_(min=0)
    h = torch.minimum(y2[:, :, None], y2[:, None, :]) - torch.maximum(y1[:, :, None], y1[:, None, :])
    h.clamp_(min=0)
    inter = w.mul_(h)
    union = area[:, :, None] + area[:, None, :]
    union -= inter
    over = torch.div(inter, union, out=inter) > t
    over &= upper
    del w, h, union, inter
    keep = alive.clone()
    # Fixed-point passes; the convergence test (a device sync) only every CHECK_EVERY passes: extra passes
    # at the fixed point change nothing and cost far less than a sync each.
    for _ in range(0, boxes.shape[1] + CHECK_EVERY, CHECK_EVERY):
        prev = keep
        for _ in range(CHECK_EVERY):
            keep = alive & ~(over & keep[:, :, None]).any(1)
        if torch.equal(prev, keep):
            break
    return keep


def _per_image(pred: Any, **kwargs: Any) -> list[np.ndarray]:
    from y9deploy.gpu_ops import postprocess_torch

    return [r.cpu().numpy() for r in postprocess_torch(pred, **kwargs)]
