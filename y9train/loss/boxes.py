"""Element-wise box overlaps for the assigner and the box loss.

Boxes are ``(x1, y1, x2, y2)`` in any common unit; both arguments broadcast against each other. The
distance helpers (``dist2bbox``, ``bbox2dist``) live in ``y9train.models.head`` and are re-exported here.
"""

from __future__ import annotations

import math

import torch

from y9core.box_iou_torch import box_iou_torch
from y9train.models.head import bbox2dist, dist2bbox

__all__ = ["bbox2dist", "box_iou", "ciou", "dist2bbox"]

EPS = 1e-7


def box_iou(a: torch.Tensor, b: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """IoU of paired boxes: ``a, b (Tensor[..., 4])`` -> ``Tensor[...]``, ``inter / (area_a + area_b - inter + eps)``
    (``y9core.box_iou_torch``, the one torch IoU, with the loss's ``eps``)."""
    return box_iou_torch(a, b, eps=eps)


def ciou(a: torch.Tensor, b: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """Complete IoU of paired boxes (Zheng et al. 2020): ``a, b (Tensor[..., 4])`` -> ``Tensor[...]``.

    ``CIoU = IoU - rho^2 / c^2 - alpha * v`` with ``rho`` the distance between the centres, ``c`` the diagonal
    of the smallest enclosing box, ``v = 4 / pi^2 * (atan(w_b / h_b) - atan(w_a / h_a))^2`` and
    ``alpha = v / (1 - IoU + v)`` treated as a constant (no gradient), as in the paper. ``eps`` guards the
    heights, the union and ``c^2``: the IoU is ``box_iou`` with the areas of the guarded heights.
    """
    w1, h1 = a[..., 2] - a[..., 0], a[..., 3] - a[..., 1] + eps
    w2, h2 = b[..., 2] - b[..., 0], b[..., 3] - b[..., 1] + eps
    iou = box_iou_torch(a, b, eps=eps, area_a=w1 * h1, area_b=w2 * h2)
    cw = torch.maximum(a[..., 2], b[..., 2]) - torch.minimum(a[..., 0], b[..., 0])
    ch = torch.maximum(a[..., 3], b[..., 3]) - torch.minimum(a[..., 1], b[..., 1])
    c2 = cw**2 + ch**2 + eps
    rho2 = (
        (b[..., 0] + b[..., 2] - a[..., 0] - a[..., 2]) ** 2
        + (b[..., 1] + b[..., 3] - a[..., 1] - a[..., 3]) ** 2
    ) / 4
    v = (4 / math.pi**2) * (torch.atan(w2 / h2) - torch.atan(w1 / h1)) ** 2
    with torch.no_grad():
        alpha = v / (v - iou + (1 + eps))
    return iou - (rho2 / c2 + v * alpha)
