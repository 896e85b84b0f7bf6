"""Step 1 of the assignment: the (box, anchor) candidate pairs, an anchor being a candidate of a box when its centre
lies strictly inside the box; and how many there are, counted on the host from the host's copy of the labels.

The count sets the size of every later tensor of the assigner. Read from the device it would be a host sync per
batch; counted here in numpy from the labels the loader produced on the host (the same float64 arithmetic as
``anchor_ranges``, so the same numbers), it costs the device nothing (``pair_counts``, ``pair_chunks``).
"""

from __future__ import annotations

import numpy as np
import torch

from y9train.loss.grid import AnchorGrid

__all__ = ["anchor_ranges", "candidate_pairs", "pair_chunks", "pair_counts"]


def anchor_ranges(boxes: torch.Tensor, grid: AnchorGrid) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per box and level, the rectangle of cells whose centres lie strictly inside the box.

    ``boxes (Tensor[N, 4])`` in pixels -> ``(col0 (Tensor[N, L]), row0 (Tensor[N, L]), n_cols, n_rows)``
    (int64; first column/row and counts, counts 0 when empty). Cell ``j`` of stride ``s`` has its centre at
    ``(j + 0.5) * s``; it is inside iff ``x1 < (j + 0.5) * s < x2``, i.e. ``x1 / s - 0.5 < j < x2 / s - 0.5``.
    Computed in float64, where ``x / s`` (s a power of two) and ``- 0.5`` are exact for float32 inputs.
    """
    s, hw = grid.tables(boxes.device)[:2]
    b = boxes.to(torch.float64)[:, None, :] / s[None, :, None] - 0.5  # [N, L, 4]
    col0 = (torch.floor(b[..., 0]) + 1).long().clamp(min=0)
    row0 = (torch.floor(b[..., 1]) + 1).long().clamp(min=0)
    col1 = torch.minimum(torch.ceil(b[..., 2]).long() - 1, hw[:, 1] - 1)
    row1 = torch.minimum(torch.ceil(b[..., 3]).long() - 1, hw[:, 0] - 1)
    return col0, row0, (col1 - col0 + 1).clamp(min=0), (row1 - row0 + 1).clamp(min=0)


def pair_counts(boxes: np.ndarray, grid: AnchorGrid) -> np.ndarray:
    """``anchor_ranges``' pair count per box, ``ndarray[N]`` int64, from host boxes ``ndarray[N, 4]`` (pixels):
    the same float64 arithmetic in numpy, no device involved."""
    s = np.asarray(grid.level_strides, np.float64)
    h = np.asarray([hw[0] for hw in grid.shapes], np.int64)
    w = np.asarray([hw[1] for hw in grid.shapes], np.int64)
    b = np.asarray(boxes, np.float32).astype(np.float64)[:, None, :] / s[None, :, None] - 0.5
    col0 = np.maximum(np.floor(b[..., 0]).astype(np.int64) + 1, 0)
    row0 = np.maximum(np.floor(b[..., 1]).astype(np.int64) + 1, 0)
    col1 = np.minimum(np.ceil(b[..., 2]).astype(np.int64) - 1, w - 1)
    row1 = np.minimum(np.ceil(b[..., 3]).astype(np.int64) - 1, h - 1)
    n_cols, n_rows = np.maximum(col1 - col0 + 1, 0), np.maximum(row1 - row0 + 1, 0)
    return (n_cols * n_rows).sum(1).astype(np.int64)


def pair_chunks(counts, max_pairs: int) -> list[tuple[int, int, int]]:
    """Consecutive box ranges ``(first, last, pairs)``, ``[first, last)`` holding at most ``max_pairs`` pairs each
    (one box may exceed it alone), from the per-box pair ``counts`` (host integers); boxes without pairs included."""
    counts = [int(c) for c in counts]
    if sum(counts) <= max_pairs:
        return [(0, len(counts), sum(counts))] if counts else []
    out, first, total = [], 0, 0
    for i, c in enumerate(counts):
        if total and total + c > max_pairs:
            out.append((first, i, total))
            first, total = i, 0
        total += c
    out.append((first, len(counts), total))
    return out


def candidate_pairs(
    ranges: tuple[torch.Tensor, ...], grid: AnchorGrid, first: int, last: int, total: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Every (box, anchor) pair with the anchor centre inside the box, for boxes ``first:last``.

    Args:
        ranges: ``anchor_ranges`` of all boxes.
        total: the number of pairs of boxes ``first:last`` (``pair_counts``; it sizes the result without a read).
    Returns:
        ``(gt (Tensor[P] int64), anchor (Tensor[P] int64))`` grouped by box, anchors ascending within a box.
    """
    col0, row0, n_cols, n_rows = (r[first:last] for r in ranges)
    n_levels = col0.shape[1]
    dev = col0.device
    counts = (n_cols * n_rows).reshape(-1)  # [n * L], box-major
    flat = torch.repeat_interleave(torch.arange(counts.numel(), device=dev), counts, output_size=total)
    offset = torch.arange(total, device=dev) - (torch.cumsum(counts, 0) - counts)[flat]
    nc_f = n_cols.reshape(-1)[flat]
    col = col0.reshape(-1)[flat] + offset % nc_f
    row = row0.reshape(-1)[flat] + torch.div(offset, nc_f, rounding_mode="floor")
    level = flat % n_levels
    _, hw, starts = grid.tables(dev)
    anchor = starts[level] + row * hw[level, 1] + col
    return torch.div(flat, n_levels, rounding_mode="floor") + first, anchor
