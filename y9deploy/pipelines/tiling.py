"""Tiled (sliced) inference for large frames (drone / aerial imagery): small objects stay visible.

    dets = predict_tiled(detector, frame_4k, tile=640, overlap=0.2)

The frame is cut into overlapping tiles (plus, optionally, the whole frame downscaled as usual, for objects
larger than a tile); all crops go through the Detector in batches, boxes are shifted back to frame pixels and
merged: per-class NMS over everything, then boxes cut by a tile border are dropped when a higher-scored box of
the same class covers most of them (intersection over the smaller box above ``ios``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from y9deploy.detections import Detections
from y9deploy.nms import batched_nms


def tile_grid(
    frame_hw: tuple[int, int], tile: int | tuple[int, int] = 640, overlap: float = 0.2
) -> list[tuple[int, int, int, int]]:
    """Tiles ``(x0, y0, x1, y1)`` covering a frame of ``frame_hw = (h, w)``, row by row.

    Neighbouring tiles overlap by at least ``overlap`` of the tile size; the last tile of a row/column is
    aligned to the frame edge; a frame smaller than a tile gives one tile (the frame).
    """
    if not 0 <= overlap < 1:
        raise ValueError(f"overlap={overlap!r}; expected a fraction in [0, 1).")
    th, tw = (tile, tile) if isinstance(tile, int) else tile
    if th < 1 or tw < 1:
        raise ValueError(f"tile={tile!r}; expected a positive size.")
    h, w = frame_hw

    def starts(size: int, t: int) -> list[int]:
        if size <= t:
            return [0]
        step = max(1, int(t * (1 - overlap)))
        n = int(np.ceil((size - t) / step)) + 1
        return [min(i * step, size - t) for i in range(n)]

    return [(x, y, min(x + tw, w), min(y + th, h)) for y in starts(h, th) for x in starts(w, tw)]


def _ios_suppress(boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, thr: float) -> np.ndarray:
    """Keep mask: drop a box when a higher-scored box of its class covers > thr of it (intersection over the
    smaller area)."""
    order = np.argsort(-scores, kind="stable")
    keep = np.ones(len(boxes), bool)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    for rank, i in enumerate(order):
        if not keep[i]:
            continue
        later = order[rank + 1 :]
        later = later[keep[later] & (classes[later] == classes[i])]
        if not len(later):
            continue
        iw = np.minimum(boxes[later, 2], boxes[i, 2]) - np.maximum(boxes[later, 0], boxes[i, 0])
        ih = np.minimum(boxes[later, 3], boxes[i, 3]) - np.maximum(boxes[later, 1], boxes[i, 1])
        inter = np.clip(iw, 0, None) * np.clip(ih, 0, None)
        smaller = np.minimum(area[later], area[i])
        with np.errstate(invalid="ignore", divide="ignore"):
            keep[later[inter / smaller > thr]] = False
    return keep


def merge_detections(
    parts: list[Detections],
    offsets: list[tuple[int, int]],
    frame_hw: tuple[int, int],
    *,
    iou: float = 0.5,
    ios: float | None = 0.8,
    agnostic: bool = False,
    max_det: int = 1000,
) -> Detections:
    """Detections of crops (each in its crop's pixels, crop at ``offset = (x0, y0)``) -> one Detections of the
    frame: shifted, clipped, per-class NMS at ``iou`` (all classes with ``agnostic``), then the
    intersection-over-smaller rule for boxes cut by tile borders (``ios=None`` skips it)."""
    names = parts[0].names if parts else []
    if not any(len(p) for p in parts):
        return Detections.empty(names)
    boxes = np.concatenate([p.xyxy + np.array([x, y, x, y], np.float32) for p, (x, y) in zip(parts, offsets)])
    scores = np.concatenate([p.confidence for p in parts])
    classes = np.concatenate([p.class_id for p in parts])
    h, w = frame_hw
    boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, w)
    boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, h)
    keep = batched_nms(boxes, scores, classes, iou, agnostic=agnostic)
    boxes, scores, classes = boxes[keep], scores[keep], classes[keep]
    if ios is not None and len(boxes) > 1:
        ok = _ios_suppress(boxes, scores, np.zeros_like(classes) if agnostic else classes, ios)
        boxes, scores, classes = boxes[ok], scores[ok], classes[ok]
    return Detections(boxes[:max_det], scores[:max_det], classes[:max_det], names)


def predict_tiled(
    detector: Any,
    frame: np.ndarray,
    *,
    tile: int | tuple[int, int] | None = None,
    overlap: float = 0.2,
    include_full: bool = True,
    iou: float = 0.5,
    ios: float | None = 0.8,
    agnostic: bool = False,
    max_det: int = 1000,
    **overrides: Any,
) -> Detections:
    """Sliced inference of one large frame (ndarray[H, W, 3] uint8 BGR) -> Detections in frame pixels.

    Args:
        detector: a ``Detector``.
        tile: tile size (default: the detector's input size, so tiles are not rescaled).
        overlap: overlap between neighbouring tiles (fraction of the tile).
        include_full: also run the whole frame (letterboxed as usual) for large objects.
        iou, ios, agnostic, max_det: the merge (see ``merge_detections``).
        **overrides: per-call options for the Detector (``conf``, ``classes``, ...).
    """
    from y9deploy.preprocess import check_frame

    check_frame(frame)
    size = tile if tile is not None else tuple(detector.imgsz)
    tiles = tile_grid(frame.shape[:2], size, overlap)
    crops = [frame[y0:y1, x0:x1] for x0, y0, x1, y1 in tiles]
    offsets = [(x0, y0) for x0, y0, _, _ in tiles]
    if include_full and len(tiles) > 1:
        crops.append(frame)
        offsets.append((0, 0))
    parts = detector.predict(crops, **overrides)
    return merge_detections(
        parts, offsets, frame.shape[:2], iou=iou, ios=ios, agnostic=agnostic, max_det=max_det
    )
