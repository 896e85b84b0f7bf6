"""The anchor grid of a multi-level head: anchor points, strides and where each level starts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from y9train.models.head import make_anchors

__all__ = ["AnchorGrid"]


@dataclass(frozen=True)
class AnchorGrid:
    """Anchors of levels ``(H_l, W_l, stride_l)``, row-major per level, levels concatenated (A anchors).

    Attributes:
        points (Tensor[A, 2]): anchor centres ``(x, y)`` in grid units of their level (``j + 0.5, i + 0.5``).
        strides (Tensor[A]): stride of each anchor's level, in pixels.
        shapes (tuple[(H, W), ...]): map size per level.
        level_strides (tuple[float, ...]): stride per level.
        starts (tuple[int, ...]): index of the first anchor of each level.
    """

    points: torch.Tensor
    strides: torch.Tensor
    shapes: tuple[tuple[int, int], ...]
    level_strides: tuple[float, ...]
    starts: tuple[int, ...]

    @classmethod
    def from_feats(cls, feats: Sequence[torch.Tensor], strides: Sequence[float]) -> AnchorGrid:
        """Grid of per-level maps ``Tensor[B, C, H_l, W_l]`` (float32 points on their device)."""
        if len(feats) != len(strides):
            raise ValueError(
                f"got {len(feats)} feature maps but {len(strides)} strides; expected one per level."
            )
        ref = [f.new_empty((1, 1, *f.shape[2:]), dtype=torch.float32) for f in feats]
        points, stride_t = make_anchors(ref, [float(s) for s in strides], 0.5)
        shapes = tuple((int(f.shape[2]), int(f.shape[3])) for f in feats)
        starts, n = [], 0
        for h, w in shapes:
            starts.append(n)
            n += h * w
        return cls(points, stride_t.view(-1), shapes, tuple(float(s) for s in strides), tuple(starts))

    @property
    def num_anchors(self) -> int:
        return int(self.points.shape[0])

    def pixel_points(self) -> torch.Tensor:
        """Anchor centres in pixels, ``Tensor[A, 2]``."""
        return self.points * self.strides[:, None]
