"""Model size and cost: parameter count and GFLOPs (2 x multiply-accumulates of convolutions)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from y9train.models.yolo import YOLO


@dataclass(frozen=True)
class ModelInfo:
    name: str
    params: int
    gflops: float
    imgsz: tuple[int, int]
    nc: int
    names: list[str]
    strides: list[int]
    layers: int
    dual: bool
    fused: bool

    def to_dict(self) -> dict:
        return asdict(self)


def conv_gflops(model: nn.Module, imgsz: tuple[int, int] = (640, 640)) -> float:
    """GFLOPs of one forward pass at ``imgsz`` counted from every Conv2d's output size (no real compute:
    the pass runs on the 'meta' device)."""
    total = 0

    def hook(mod: nn.Conv2d, _inp, out: torch.Tensor) -> None:
        nonlocal total
        k = mod.kernel_size[0] * mod.kernel_size[1] * (mod.in_channels // mod.groups)
        total += out.numel() // out.shape[0] * k  # multiply-accumulates per image

    meta = _meta_copy(model)
    handles = [m.register_forward_hook(hook) for m in meta.modules() if isinstance(m, nn.Conv2d)]
    try:
        with torch.no_grad():
            meta.eval()(torch.empty(1, 3, *imgsz, device="meta"))
    finally:
        for h in handles:
            h.remove()
    return 2 * total / 1e9


def _meta_copy(model: nn.Module) -> nn.Module:
    """``model``'s structure for counting, on the 'meta' device (shapes only): every parameter and buffer a meta
    tensor from the start, so no weight is ever copied, and every BatchNorm an ``nn.Identity`` (it keeps the shape
    and holds no convolution; on 'meta' its kernel runs Python decompositions, most of a pass's time)."""
    import copy

    memo: dict[int, Any] = {}
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            memo[id(m)] = nn.Identity()
    for p in model.parameters():
        memo[id(p)] = nn.Parameter(torch.empty_like(p, device="meta"), requires_grad=p.requires_grad)
    for b in model.buffers():
        memo[id(b)] = torch.empty_like(b, device="meta")
    return copy.deepcopy(model, memo)


def model_info(model: YOLO, imgsz: int | tuple[int, int] = 640) -> ModelInfo:
    """Architecture summary of ``model`` (parameter count includes the fixed DFL weights)."""
    hw = (imgsz, imgsz) if isinstance(imgsz, int) else tuple(imgsz)
    return ModelInfo(
        name=model.name,
        params=sum(p.numel() for p in model.parameters()),
        gflops=round(conv_gflops(model, hw), 2),
        imgsz=hw,
        nc=model.nc,
        names=list(model.names),
        strides=[int(s) for s in model.head.stride_values],
        layers=len(model.model),
        dual=model.is_dual,
        fused=model.fused,
    )
