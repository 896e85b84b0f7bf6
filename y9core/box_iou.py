"""The one numpy IoU: intersection over union of paired boxes, elementwise and broadcasting.

``box_iou(a, b)`` takes boxes ``(x1, y1, x2, y2)`` in the last axis of ``a`` and ``b`` (their leading axes
broadcast) and returns one IoU per pair, computed in the boxes' dtype with these float operations in this
order (the host NMS, the torch IoU of ``y9core.box_iou_torch`` and the Triton kernel of
``y9core.post.triton_nms`` all compute the same ones, so that their results agree bit for bit)::

    area = (x2 - x1) * (y2 - y1)                      (unless given)
    w = max(min(a.x2, b.x2) - max(a.x1, b.x1), 0)
    h = max(min(a.y2, b.y2) - max(a.y1, b.y1), 0)
    inter = w * h
    union = area_a + area_b - inter  (+ eps when eps != 0)
    iou = inter / union

A zero union gives NaN (0 / 0), which compares False with any threshold. ``box_iou_matrix(a, b)`` is the
same function on ``a[..., :, None, :]`` and ``b[..., None, :, :]``: the IoU of every pair of an N x M grid.
The computation writes into its own temporaries (``out=``) so that an N x M matrix costs two buffers.
"""

from __future__ import annotations

import numpy as np

__all__ = ["box_area", "box_iou", "box_iou_matrix"]


def box_area(boxes: np.ndarray) -> np.ndarray:
    """boxes (ndarray[..., 4] xyxy) -> ndarray[...]: ``(x2 - x1) * (y2 - y1)`` in the boxes' dtype."""
    return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])


def box_iou(
    a: np.ndarray,
    b: np.ndarray,
    *,
    eps: float = 0.0,
    area_a: np.ndarray | None = None,
    area_b: np.ndarray | None = None,
    zero_empty: bool = False,
) -> np.ndarray:
    """IoU of paired boxes: a (ndarray[..., 4] xyxy), b (ndarray[..., 4] xyxy) -> ndarray[...] (the leading
    axes broadcast), in the boxes' dtype (integers: float64); the formula is in the module docstring.

    Args:
        eps: added to the union when not 0 (a zero union then gives 0 instead of NaN).
        area_a, area_b (ndarray broadcasting with a[..., 0], b[..., 0]): the areas to use instead of
            ``box_area`` (pycocotools' ``w * h`` of xywh boxes, whose corners ``x + w`` the caller passes).
        zero_empty: IoU 0 wherever the intersection is not positive, whatever the union (pycocotools).
    """
    a, b = _floats(a), _floats(b)
    if a.ndim == b.ndim == 1:  # one pair: on arrays of one pair (the operations in place need arrays)
        one = [None if x is None else np.reshape(x, 1) for x in (area_a, area_b)]
        return _iou(a[None], b[None], eps, one[0], one[1], zero_empty)[0]
    return _iou(a, b, eps, area_a, area_b, zero_empty)


def box_iou_matrix(a: np.ndarray, b: np.ndarray, *, eps: float = 0.0, zero_empty: bool = False) -> np.ndarray:
    """IoU of every pair: a (ndarray[..., N, 4] xyxy), b (ndarray[..., M, 4] xyxy) -> ndarray[..., N, M];
    ``box_iou`` (same ``eps`` and ``zero_empty``) on ``a[..., :, None, :]`` and ``b[..., None, :, :]``."""
    a, b = _floats(a), _floats(b)
    return _iou(a[..., :, None, :], b[..., None, :, :], eps, None, None, zero_empty)


def _floats(x: np.ndarray) -> np.ndarray:
    """x as an ndarray of floats (integers: float64)."""
    x = x if type(x) is np.ndarray else np.asarray(x)
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def _iou(a: np.ndarray, b: np.ndarray, eps: float, area_a, area_b, zero_empty: bool) -> np.ndarray:
    """``box_iou`` of checked arrays (the hot path of the host NMS: each column read once)."""
    ax1, ay1, ax2, ay2 = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bx1, by1, bx2, by2 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    if area_a is None:
        area_a = (ax2 - ax1) * (ay2 - ay1)
    if area_b is None:
        area_b = (bx2 - bx1) * (by2 - by1)
    w = np.minimum(ax2, bx2)
    w -= np.maximum(ax1, bx1)
    np.maximum(w, 0, out=w)
    h = np.minimum(ay2, by2)
    h -= np.maximum(ay1, by1)
    np.maximum(h, 0, out=h)
    inter = np.multiply(w, h, out=w)
    union = np.add(area_a, area_b)
    if union.shape == inter.shape:
        union -= inter
    else:  # areas given with fewer axes than the pairs
        union = union - inter
    if eps:
        union += eps
    empty = ~(inter > 0) if zero_empty else None
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = np.divide(inter, union, out=inter)
    if empty is not None:
        iou[empty] = 0
    return iou
