"""The one torch IoU: ``y9core.boxes``' IoU on tensors (torch is imported inside the functions).

``box_iou_torch(a, b)`` computes the float operations of ``y9core.boxes.box_iou`` in the same order, so
that float32 results agree bit for bit with numpy's (a test checks it). Without a gradient to track it works
in place (two buffers for an N x M matrix); when an input requires a gradient, the same operations run out of
place so that autograd sees them (the box loss and CIoU).
"""

from __future__ import annotations

from typing import Any

__all__ = ["box_area_torch", "box_iou_matrix_torch", "box_iou_torch"]


def box_area_torch(boxes: Any) -> Any:
    """boxes (Tensor[..., 4] xyxy) -> Tensor[...]: ``(x2 - x1) * (y2 - y1)``."""
    return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])


def box_iou_torch(a: Any, b: Any, *, eps: float = 0.0, area_a: Any = None, area_b: Any = None) -> Any:
    """IoU of paired boxes: a (Tensor[..., 4] xyxy), b (Tensor[..., 4] xyxy) -> Tensor[...] (the leading
    dims broadcast); the formula of ``y9core.boxes`` (a zero union gives NaN).

    Args:
        eps: added to the union when not 0 (the box loss: 1e-7).
        area_a, area_b (Tensor broadcasting with a[..., 0], b[..., 0]): the areas to use instead of
            ``box_area_torch`` (CIoU passes its eps-guarded ones).
    """
    import torch

    if not a.is_floating_point():
        a = a.to(torch.get_default_dtype())
    if not b.is_floating_point():
        b = b.to(torch.get_default_dtype())
    area_a = box_area_torch(a) if area_a is None else area_a
    area_b = box_area_torch(b) if area_b is None else area_b
    w = torch.minimum(a[..., 2], b[..., 2]) - torch.maximum(a[..., 0], b[..., 0])
    h = torch.minimum(a[..., 3], b[..., 3]) - torch.maximum(a[..., 1], b[..., 1])
    tracked = torch.is_grad_enabled() and any(
        isinstance(t, torch.Tensor) and t.requires_grad for t in (a, b, area_a, area_b)
    )
    if tracked:
        inter = w.clamp(min=0) * h.clamp(min=0)
        union = area_a + area_b - inter
        if eps:
            union = union + eps
        return inter / union
    inter = w.clamp_(min=0).mul_(h.clamp_(min=0))
    union = area_a + area_b
    if union.shape == inter.shape:
        union -= inter
    else:  # areas given with fewer dims than the pairs
        union = union - inter
    if eps:
        union += eps
    return inter.div_(union)


def box_iou_matrix_torch(a: Any, b: Any, *, eps: float = 0.0) -> Any:
    """IoU of every pair: a (Tensor[..., N, 4] xyxy), b (Tensor[..., M, 4] xyxy) -> Tensor[..., N, M];
    ``box_iou_torch`` (same ``eps``) on ``a[..., :, None, :]`` and ``b[..., None, :, :]``."""
    return box_iou_torch(a[..., :, None, :], b[..., None, :, :], eps=eps)
