"""Tiled (sliced) inference for large frames (drone / aerial imagery): small objects stay visible.

    dets = predict_tiled(detector, frame_4k, tile=640, overlap=0.2)

The frame is cut into overlapping tiles (by default of the model's own input size, so a tile is not rescaled;
plus, optionally, the whole frame downscaled as usual, for objects larger than a tile); all crops go through the
Detector as one list, i.e. in batches of the sizes the model accepts; boxes are shifted back to frame pixels and
merged by one of two methods (``merge``):

- ``"nms"``: per-class NMS at ``iou`` over everything, then a box cut by a tile border is dropped when a
  higher-scored box of the same class covers most of it (intersection over the smaller box above ``ios``);
- ``"nmm"`` (non-maximum merging): boxes are taken by descending score; every lower-scored box of the same class
  that matches the taken one (IoU above ``iou``, or intersection over the smaller box above ``ios``) is merged
  into it: the result is the enclosing box of the group, with the group's best score. One pass per taken box
  (greedy: a box merged away does not pull in its own matches). Halves of an object cut by a tile border become
  one whole box instead of the larger half.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from y9core.box_iou import box_area, box_iou
from y9core.post.nms import batched_nms
from y9deploy.detections import Detections

MERGES = ("nms", "nmm")


@dataclass(frozen=True)
class TileOptions:
    """How ``predict_tiled`` slices and merges (see the module docstring).

    Attributes:
        tile: tile size, int or (h, w); None: the detector's input size.
        overlap: overlap of neighbouring tiles, fraction of the tile in [0, 1).
        full_frame: also run the whole frame (letterboxed as usual) for objects larger than a tile.
        merge: "nms" or "nmm"; iou, ios: the merge thresholds (``ios=None``: IoU only).
    """

    tile: int | tuple[int, int] | None = None
    overlap: float = 0.2
    full_frame: bool = False
    merge: str = "nms"
    iou: float = 0.5
    ios: float | None = 0.8

    def __post_init__(self) -> None:
        if self.merge not in MERGES:
            raise ValueError(f"merge={self.merge!r}; expected one of {', '.join(MERGES)}.")
        if not 0 <= self.overlap < 1:
            raise ValueError(f"overlap={self.overlap!r}; expected a fraction in [0, 1).")
        sizes = [] if self.tile is None else [self.tile] if isinstance(self.tile, int) else list(self.tile)
        if any(int(v) < 1 for v in sizes):
            raise ValueError(f"tile={self.tile!r}; expected a positive size in pixels.")
        for name, v in (("iou", self.iou), ("ios", self.ios)):
            if v is not None and not 0 <= v <= 1:
                raise ValueError(f"{name}={v!r}; expected a fraction in [0, 1].")


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


def _overlaps(box: np.ndarray, others: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(IoU (``y9core.box_iou``), intersection over the smaller box) of ``box`` [4] with each of ``others`` [K, 4]."""
    iw = np.minimum(others[:, 2], box[2]) - np.maximum(others[:, 0], box[0])
    ih = np.minimum(others[:, 3], box[3]) - np.maximum(others[:, 1], box[1])
    inter = np.clip(iw, 0, None) * np.clip(ih, 0, None)
    smaller = np.minimum(box_area(box), box_area(others))
    with np.errstate(invalid="ignore", divide="ignore"):
        return box_iou(box, others), inter / smaller


def greedy_nmm(
    boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray, iou: float, ios: float | None,
    *, agnostic: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Non-maximum merging (module docstring): -> (boxes, scores, classes) of the merged groups, by score; a
    group has the class of its best box (with ``agnostic`` boxes of any class merge)."""
    order = np.argsort(-scores, kind="stable")
    alive = np.ones(len(boxes), bool)
    out_b, out_s, out_c = [], [], []
    for i in order:
        if not alive[i]:
            continue
        alive[i] = False
        cand = np.flatnonzero(alive if agnostic else alive & (classes == classes[i]))
        box = boxes[i]
        if len(cand):
            by_iou, by_ios = _overlaps(boxes[i], boxes[cand])
            match = by_iou > iou
            if ios is not None:
                match |= by_ios > ios
            group = cand[match]
            alive[group] = False
            if len(group):
                members = boxes[np.r_[i, group]]
                box = np.r_[members[:, :2].min(0), members[:, 2:].max(0)]
        out_b.append(box)
        out_s.append(scores[i])
        out_c.append(classes[i])
    return np.asarray(out_b, np.float32).reshape(-1, 4), np.asarray(out_s, np.float32), np.asarray(out_c)


def merge_detections(
    parts: list[Detections],
    offsets: list[tuple[int, int]],
    frame_hw: tuple[int, int],
    *,
    merge: str = "nms",
    iou: float = 0.5,
    ios: float | None = 0.8,
    agnostic: bool = False,
    max_det: int = 1000,
) -> Detections:
    """Detections of crops (each in its crop's pixels, crop at ``offset = (x0, y0)``) -> one Detections of the
    frame: shifted, clipped, then merged (``merge``: "nms" or "nmm", module docstring; all classes together
    with ``agnostic``; ``ios=None`` leaves out the intersection-over-smaller rule)."""
    if merge not in MERGES:
        raise ValueError(f"merge={merge!r}; expected one of {', '.join(MERGES)}.")
    names = parts[0].names if parts else []
    if not any(len(p) for p in parts):
        return Detections.empty(names)
    boxes = np.concatenate([p.xyxy + np.array([x, y, x, y], np.float32) for p, (x, y) in zip(parts, offsets)])
    scores = np.concatenate([p.confidence for p in parts])
    classes = np.concatenate([p.class_id for p in parts])
    h, w = frame_hw
    boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, w)
    boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, h)
    if merge == "nmm":
        boxes, scores, classes = greedy_nmm(boxes, scores, classes, iou, ios, agnostic=agnostic)
        return Detections(boxes[:max_det], scores[:max_det], classes[:max_det], names)
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
    merge: str = "nms",
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
        merge, iou, ios, agnostic, max_det: the merge (see ``merge_detections``).
        **overrides: per-call options for the Detector (``conf``, ``classes``, ...).
    """
    from y9deploy.pre.host import check_frame

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
        parts, offsets, frame.shape[:2], merge=merge, iou=iou, ios=ios, agnostic=agnostic, max_det=max_det
    )


def predict_tiled_with(
    detector: Any, frame: np.ndarray, options: TileOptions, **overrides: Any
) -> Detections:
    """``predict_tiled`` with a ``TileOptions``."""
    return predict_tiled(detector, frame, tile=options.tile, overlap=options.overlap, include_full=options.full_frame,
                         merge=options.merge, iou=options.iou, ios=options.ios, **overrides)  # fmt: skip
