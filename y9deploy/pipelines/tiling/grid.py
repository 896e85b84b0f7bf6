"""The tiles that cover a frame: ``tile_grid(frame_hw, tile, overlap)`` -> ``(x0, y0, x1, y1)`` row by row."""

from __future__ import annotations

import numpy as np


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
