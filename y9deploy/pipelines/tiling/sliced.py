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

from y9deploy.detections import Detections
from y9deploy.pipelines.tiling.grid import tile_grid
from y9deploy.pipelines.tiling.merge import MERGES, merge_detections


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
