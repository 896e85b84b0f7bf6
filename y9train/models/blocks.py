"""Building blocks of YOLOv9 / GELAN.

Attribute names (``cv1``, ``conv``, ``bn``, ``m`` ...) follow the official checkpoints so that their
state dicts load without renaming. Every block maps ``x (Tensor[B, c1, H, W])`` to
``Tensor[B, c2, H', W']``; ``H' = H / s`` for the down-sampling blocks.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

BN_EPS = 1e-3
BN_MOMENTUM = 0.03


def autopad(k: int, p: int | None = None, d: int = 1) -> int:
    """'Same' padding for an odd kernel ``k`` with dilation ``d`` (``p`` wins when given)."""
    if p is not None:
        return p
    k = d * (k - 1) + 1 if d > 1 else k
    return k // 2


class Conv(nn.Module):
    """Conv2d (no bias) -> BatchNorm2d -> SiLU. After ``fuse()``: Conv2d with bias -> SiLU."""

    def __init__(
        self,
        c1: int,
        c2: int,
        k: int = 1,
        s: int = 1,
        p: int | None = None,
        g: int = 1,
        d: int = 1,
        act: bool = True,
    ):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, autopad(k, p, d), groups=g, dilation=d, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=BN_EPS, momentum=BN_MOMENTUM)
        self.act = nn.SiLU() if act else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.bn is None:
            return self.act(self.conv(x))
        return self.act(self.bn(self.conv(x)))


class RepConvN(nn.Module):
    """Re-parameterizable conv: SiLU(BN(conv3x3(x)) + BN(conv1x1(x))), no identity branch.

    ``fuse()`` (see ``y9train.reparam``) folds both branches into one 3x3 ``conv`` with bias.
    """

    def __init__(self, c1: int, c2: int, k: int = 3, s: int = 1, p: int = 1, g: int = 1):
        super().__init__()
        assert k == 3 and p == 1, "RepConvN is defined for k=3, p=1"
        self.conv1 = Conv(c1, c2, k, s, p=p, g=g, act=False)
        self.conv2 = Conv(c1, c2, 1, s, p=p - k // 2, g=g, act=False)
        self.act = nn.SiLU()
        self.conv: nn.Conv2d | None = None  # set by fuse()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.conv is not None:
            return self.act(self.conv(x))
        return self.act(self.conv1(x) + self.conv2(x))


class RepNBottleneck(nn.Module):
    """RepConvN 3x3 -> Conv 3x3, with a residual connection when ``c1 == c2``."""

    def __init__(self, c1: int, c2: int, shortcut: bool = True, e: float = 1.0):
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = RepConvN(c1, c_, 3, 1)
        self.cv2 = Conv(c_, c2, 3, 1)
        self.add = shortcut and c1 == c2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class RepNCSP(nn.Module):
    """CSP block of ``n`` RepNBottlenecks: cv3(cat(m(cv1(x)), cv2(x)))."""

    def __init__(self, c1: int, c2: int, n: int = 1, e: float = 0.5):
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c1, c_, 1, 1)
        self.cv3 = Conv(2 * c_, c2, 1)
        self.m = nn.Sequential(*(RepNBottleneck(c_, c_) for _ in range(n)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class RepNCSPELAN4(nn.Module):
    """GELAN block: split cv1(x) in two, chain two (RepNCSP -> Conv3x3) stages, concat all four, cv4.

    Args: c1 in, c2 out, c3 width of cv1 (split in halves), c4 width of each stage, n RepNCSP depth.
    """

    def __init__(self, c1: int, c2: int, c3: int, c4: int, n: int = 1):
        super().__init__()
        self.cv1 = Conv(c1, c3, 1, 1)
        self.cv2 = nn.Sequential(RepNCSP(c3 // 2, c4, n), Conv(c4, c4, 3, 1))
        self.cv3 = nn.Sequential(RepNCSP(c4, c4, n), Conv(c4, c4, 3, 1))
        self.cv4 = Conv(c3 + 2 * c4, c2, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.cv1(x).chunk(2, 1)
        c = self.cv2(b)
        d = self.cv3(c)
        return self.cv4(torch.cat((a, b, c, d), 1))


class ELAN1(nn.Module):
    """Light ELAN block (t/s models): split cv1(x), chain two Conv3x3, concat all four, cv4."""

    def __init__(self, c1: int, c2: int, c3: int, c4: int):
        super().__init__()
        self.cv1 = Conv(c1, c3, 1, 1)
        self.cv2 = Conv(c3 // 2, c4, 3, 1)
        self.cv3 = Conv(c4, c4, 3, 1)
        self.cv4 = Conv(c3 + 2 * c4, c2, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.cv1(x).chunk(2, 1)
        c = self.cv2(b)
        d = self.cv3(c)
        return self.cv4(torch.cat((a, b, c, d), 1))


class AConv(nn.Module):
    """Down-sampling by 2: avg-pool 2x2 (stride 1) then Conv 3x3 stride 2."""

    def __init__(self, c1: int, c2: int):
        super().__init__()
        self.cv1 = Conv(c1, c2, 3, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cv1(F.avg_pool2d(x, 2, 1, 0, False, True))


class ADown(nn.Module):
    """Down-sampling by 2: avg-pool 2x2 (stride 1), halves -> (Conv 3x3 s2 | max-pool 3x3 s2 -> Conv 1x1)."""

    def __init__(self, c1: int, c2: int):
        super().__init__()
        c = c2 // 2
        self.cv1 = Conv(c1 // 2, c, 3, 2, 1)
        self.cv2 = Conv(c1 // 2, c, 1, 1, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.avg_pool2d(x, 2, 1, 0, False, True)
        a, b = x.chunk(2, 1)
        return torch.cat((self.cv1(a), self.cv2(F.max_pool2d(b, 3, 2, 1))), 1)


class SPPELAN(nn.Module):
    """Spatial pyramid pooling, ELAN style: cv1, three chained 5x5 max-pools, concat, cv5."""

    def __init__(self, c1: int, c2: int, c3: int, k: int = 5):
        super().__init__()
        self.k = k
        self.cv1 = Conv(c1, c3, 1, 1)
        self.cv5 = Conv(4 * c3, c2, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = [self.cv1(x)]
        for _ in range(3):
            y.append(F.max_pool2d(y[-1], self.k, 1, self.k // 2))
        return self.cv5(torch.cat(y, 1))


class CBLinear(nn.Module):
    """Routing for the reversible branch: one 1x1 conv (with bias) split into ``c2s`` channel groups."""

    def __init__(self, c1: int, c2s: list[int]):
        super().__init__()
        self.c2s = list(c2s)
        self.conv = nn.Conv2d(c1, sum(self.c2s), 1, 1, 0, bias=True)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.conv(x).split(self.c2s, dim=1)


class CBFuse(nn.Module):
    """Sum of the selected CBLinear groups, resized (nearest) to the last input's size, plus that input.

    ``forward(xs)``: ``xs[:-1]`` are CBLinear outputs (tuples), ``idx[i]`` picks a group of ``xs[i]``.
    """

    def __init__(self, idx: list[int]):
        super().__init__()
        self.idx = list(idx)

    def forward(self, xs: list) -> torch.Tensor:
        target = xs[-1]
        out = target
        for i, routed in enumerate(xs[:-1]):
            out = out + F.interpolate(routed[self.idx[i]], size=target.shape[2:], mode="nearest")
        return out


class Concat(nn.Module):
    """Concatenate a list of tensors along channels."""

    def forward(self, xs: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat(xs, 1)


class Upsample(nn.Module):
    """Nearest-neighbour up-sampling by an integer factor."""

    def __init__(self, scale: int = 2):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, scale_factor=self.scale, mode="nearest")


class Input(nn.Module):
    """The network input as a layer (the official 'Silence'): later layers may route from it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x
