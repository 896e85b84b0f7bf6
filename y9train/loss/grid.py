"""The anchor grid of a multi-level head: anchor points, strides and where each level starts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

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
    The per-level numbers as tensors on a device (``tables``) are made once per device and kept: made per batch
    from Python lists, each would be a host-to-device copy that waits for the device.
    """

    points: torch.Tensor
    strides: torch.Tensor
    shapes: tuple[tuple[int, int], ...]
    level_strides: tuple[float, ...]
    starts: tuple[int, ...]
    _tables: dict = field(default_factory=dict, compare=False, repr=False)

    def tables(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(level strides (Tensor[L] float64), (H, W) per level (Tensor[L, 2] int64), first anchor per level
        (Tensor[L] int64))`` on ``device``, made on the first call for that device."""
        key = torch.device(device)
        if key not in self._tables:
            self._tables[key] = (
                torch.tensor(self.level_strides, dtype=torch.float64, device=key),
                torch.tensor(self.shapes, dtype=torch.int64, device=key).view(-1, 2),
                torch.tensor(self.starts, dtype=torch.int64, device=key),
            )
        return self._tables[key]

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
        grid = cls(points, stride_t.view(-1), shapes, tuple(float(s) for s in strides), tuple(starts))
        grid.tables(points.device)
        return grid

    @property
    def num_anchors(self) -> int:
        return int(self.points.shape[0])

    def pixel_points(self) -> torch.Tensor:
        """Anchor centres in pixels, ``Tensor[A, 2]``."""
        return self.points * self.strides[:, None]
