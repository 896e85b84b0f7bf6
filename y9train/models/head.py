"""Detection heads (DDetect, DualDDetect), the DFL decoder and anchor helpers.

Raw head maps: ``Tensor[B, 4 * reg_max + nc, H, W]`` per level: box-distribution logits, side-major
(channel ``side * reg_max + bin`` for sides l, t, r, b), then class logits.
Decoded output: ``Tensor[B, 4 + nc, A]``: cx, cy, w, h in input pixels, then sigmoid class scores;
anchors row-major per level, levels concatenated (strides 8, 16, 32).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from y9train.models.blocks import Conv


def make_anchors(
    feats: list[torch.Tensor], strides: list[float] | torch.Tensor, offset: float = 0.5
) -> tuple[torch.Tensor, torch.Tensor]:
    """Anchor points (cell centres) of every level, in grid units.

    Args:
        feats: per-level maps ``Tensor[B, C, H_l, W_l]`` (only shapes, dtype and device are used).
        strides: one stride per level.
    Returns:
        ``(points (Tensor[A, 2]) as (x, y) in grid units, stride_tensor (Tensor[A, 1]))``;
        ``points * stride_tensor`` are pixel coordinates.
    """
    points, stride_list = [], []
    dtype, device = feats[0].dtype, feats[0].device
    for feat, stride in zip(feats, strides):
        h, w = feat.shape[2], feat.shape[3]
        sx = torch.arange(w, device=device, dtype=dtype) + offset
        sy = torch.arange(h, device=device, dtype=dtype) + offset
        gy, gx = torch.meshgrid(sy, sx, indexing="ij")
        points.append(torch.stack((gx, gy), -1).view(-1, 2))
        stride_list.append(torch.full((h * w, 1), float(stride), dtype=dtype, device=device))
    return torch.cat(points), torch.cat(stride_list)


def dist2bbox(
    distance: torch.Tensor, anchor_points: torch.Tensor, xywh: bool = True, dim: int = -1
) -> torch.Tensor:
    """(l, t, r, b) distances from anchor points -> boxes (cx, cy, w, h) or (x1, y1, x2, y2) along ``dim``."""
    lt, rb = distance.chunk(2, dim)
    x1y1 = anchor_points - lt
    x2y2 = anchor_points + rb
    if xywh:
        return torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), dim)
    return torch.cat((x1y1, x2y2), dim)


def bbox2dist(anchor_points: torch.Tensor, bbox: torch.Tensor, reg_max: int) -> torch.Tensor:
    """Boxes (x1, y1, x2, y2) -> (l, t, r, b) distances from anchor points, clamped to ``[0, reg_max - 1.01]``."""
    x1y1, x2y2 = bbox.chunk(2, -1)
    return torch.cat((anchor_points - x1y1, x2y2 - anchor_points), -1).clamp(0, reg_max - 1.01)


class DFL(nn.Module):
    """Distribution focal loss decoder: expectation of a softmax over ``c1`` bins per box side.

    ``forward(x (Tensor[B, 4 * c1, A])) -> Tensor[B, 4, A]``. The 1x1 conv holds the fixed weights 0..c1-1.
    """

    def __init__(self, c1: int = 16):
        super().__init__()
        self.c1 = c1
        self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(c1, dtype=torch.float).view(1, c1, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, a = x.shape
        p = x.view(b, 4, self.c1, a).transpose(2, 1).softmax(1)
        if p.dtype != self.conv.weight.dtype:  # an fp16 model's float32 decode under autocast (fp16 EMA)
            return torch.nn.functional.conv2d(p, self.conv.weight.to(p.dtype)).view(b, 4, a)
        return self.conv(p).view(b, 4, a)


def _box_branch(c_in: int, c_mid: int, reg_max: int) -> nn.Sequential:
    return nn.Sequential(
        Conv(c_in, c_mid, 3), Conv(c_mid, c_mid, 3, g=4), nn.Conv2d(c_mid, 4 * reg_max, 1, groups=4)
    )


def _cls_branch(c_in: int, c_mid: int, nc: int) -> nn.Sequential:
    return nn.Sequential(Conv(c_in, c_mid, 3), Conv(c_mid, c_mid, 3), nn.Conv2d(c_mid, nc, 1))


def _widths(ch: list[int], nc: int, reg_max: int) -> tuple[int, int]:
    c_box = max(ch[0] // 4, reg_max * 4, 16)
    c_box = math.ceil(c_box / 4) * 4
    c_cls = max(ch[0], min(nc * 2, 128))
    return c_box, c_cls


class _Decoder(nn.Module):
    """Shared decode of raw maps into ``Tensor[B, 4 + nc, A]`` with cached anchors."""

    nc: int
    reg_max: int

    def _init_decoder(self, nc: int, nl: int, reg_max: int) -> None:
        self.nc, self.nl, self.reg_max = nc, nl, reg_max
        self.no = nc + 4 * reg_max
        self.register_buffer("stride", torch.zeros(nl), persistent=False)
        self.stride_values: list[float] = [
            0.0
        ] * nl  # the same strides as Python floats (set with ``set_strides``)
        self._anchor_key: tuple | None = None
        self._anchors: tuple[torch.Tensor, torch.Tensor] | None = None

    def set_strides(self, strides: list[float]) -> None:
        self.stride = torch.tensor([float(s) for s in strides], device=self.stride.device)
        self.stride_values = [float(s) for s in strides]

    def anchors_for(self, feats: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        key = (tuple(f.shape[2:] for f in feats), feats[0].dtype, feats[0].device)
        if self._anchor_key != key or torch.jit.is_tracing() or torch.onnx.is_in_onnx_export():
            points, strides = make_anchors(feats, self.stride_values, 0.5)
            self._anchors = (points.transpose(0, 1), strides.transpose(0, 1))
            self._anchor_key = key
        return self._anchors

    def decode(self, feats: list[torch.Tensor], dfl: DFL) -> torch.Tensor:
        """Raw maps -> ``Tensor[B, 4 + nc, A]`` (boxes xywh in pixels, class probabilities).

        Under autocast (mixed-precision validation) the decode runs in float32 on the maps cast up: bfloat16 holds
        pixel coordinates in steps of 2 px between 256 and 512 and 4 px up to 1024, which moves box corners far
        enough to cost points of mAP50-95 on small objects. Without autocast it runs in the maps' own dtype (an
        exported graph is unchanged)."""
        device_type = feats[0].device.type
        if device_type in ("cuda", "cpu") and torch.is_autocast_enabled(device_type):  # (meta: no autocast)
            with torch.autocast(device_type, enabled=False):
                return self._decode([f.float() for f in feats], dfl)
        return self._decode(feats, dfl)

    def _decode(self, feats: list[torch.Tensor], dfl: DFL) -> torch.Tensor:
        points, strides = self.anchors_for(feats)
        b = feats[0].shape[0]
        x = torch.cat([f.view(b, self.no, -1) for f in feats], 2)
        box, cls = x.split((4 * self.reg_max, self.nc), 1)
        dbox = dist2bbox(dfl(box), points.unsqueeze(0), xywh=True, dim=1) * strides
        return torch.cat((dbox, cls.sigmoid()), 1)


class DDetect(_Decoder):
    """Single-branch head. Train: ``[maps]`` (one branch). Eval: ``Tensor[B, 4 + nc, A]``."""

    def __init__(self, nc: int, ch: list[int], reg_max: int = 16):
        super().__init__()
        self._init_decoder(nc, len(ch), reg_max)
        c_box, c_cls = _widths(ch, nc, reg_max)
        self.cv2 = nn.ModuleList(_box_branch(c, c_box, reg_max) for c in ch)
        self.cv3 = nn.ModuleList(_cls_branch(c, c_cls, nc) for c in ch)
        self.dfl = DFL(reg_max)

    def raw(self, xs: list[torch.Tensor]) -> list[torch.Tensor]:
        return [torch.cat((self.cv2[i](xs[i]), self.cv3[i](xs[i])), 1) for i in range(self.nl)]

    def forward(self, xs: list[torch.Tensor], return_aux: bool = False):
        feats = self.raw(xs)
        if self.training:
            return [feats]
        y = self.decode(feats, self.dfl)
        return (y, None) if return_aux else y

    def heads(self) -> list[tuple[nn.ModuleList, nn.ModuleList]]:
        return [(self.cv2, self.cv3)]


class DualDDetect(_Decoder):
    """Two-branch head of YOLOv9 (PGI). Inputs: aux levels first, then main levels (official order).

    ``cv2/cv3/dfl`` decode the auxiliary branch, ``cv4/cv5/dfl2`` the main branch kept for deployment.
    Train: ``[main_maps, aux_maps]``. Eval: main ``Tensor[B, 4 + nc, A]`` or ``(main, aux)``.
    """

    def __init__(self, nc: int, ch: list[int], reg_max: int = 16):
        super().__init__()
        nl = len(ch) // 2
        self._init_decoder(nc, nl, reg_max)
        c2, c3 = _widths(ch[:nl], nc, reg_max)
        c4, c5 = _widths(ch[nl:], nc, reg_max)
        self.cv2 = nn.ModuleList(_box_branch(c, c2, reg_max) for c in ch[:nl])
        self.cv3 = nn.ModuleList(_cls_branch(c, c3, nc) for c in ch[:nl])
        self.cv4 = nn.ModuleList(_box_branch(c, c4, reg_max) for c in ch[nl:])
        self.cv5 = nn.ModuleList(_cls_branch(c, c5, nc) for c in ch[nl:])
        self.dfl = DFL(reg_max)
        self.dfl2 = DFL(reg_max)

    def raw(self, xs: list[torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        nl = self.nl
        aux = [torch.cat((self.cv2[i](xs[i]), self.cv3[i](xs[i])), 1) for i in range(nl)]
        main = [torch.cat((self.cv4[i](xs[nl + i]), self.cv5[i](xs[nl + i])), 1) for i in range(nl)]
        return main, aux

    def forward(self, xs: list[torch.Tensor], return_aux: bool = False):
        main, aux = self.raw(xs)
        if self.training:
            return [main, aux]
        y_main = self.decode(main, self.dfl2)
        if not return_aux:
            return y_main
        return y_main, self.decode(aux, self.dfl)

    def heads(self) -> list[tuple[nn.ModuleList, nn.ModuleList]]:
        return [(self.cv4, self.cv5), (self.cv2, self.cv3)]


def init_head_biases(head: DDetect | DualDDetect, imgsz: int = 640) -> None:
    """Prior biases for training from scratch: box logits 1.0; class logits ``log(5 / nc / (imgsz / stride)^2)``,
    ~5 objects per ``imgsz``² image. The official bias_init always uses 640; the trainer passes
    ``Hyp.bias_prior_imgsz`` (0: the training size)."""
    for box_list, cls_list in head.heads():
        for box, cls, s in zip(box_list, cls_list, head.stride_values):
            box[-1].bias.data[:] = 1.0
            cls[-1].bias.data[: head.nc] = math.log(5 / head.nc / (imgsz / s) ** 2)
