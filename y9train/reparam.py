"""Re-parameterization for deployment.

- ``to_deploy(model)``: a yolov9-X model -> the gelan-X structure with the auxiliary (PGI) branch removed;
  the dual head's main branch becomes the single head. Outputs equal the yolov9-X main output.
- ``fuse(model)``: Conv+BatchNorm folded into one biased conv, RepConvN's 3x3 and 1x1 branches merged
  into one 3x3 conv. In place; works in the model's dtype (float64 included); inference semantics
  (BatchNorm running statistics).

Model transforms only: checkpoint loading imports ``fuse`` from here; the file operation (load, convert, save)
is ``y9train.checkpoints.reparam_file``.
"""

from __future__ import annotations

import re

import torch
from torch import nn

from y9train.models import YOLO, build_model, load_state_dict_checked
from y9train.models.blocks import Conv, RepConvN

_HEAD_RENAME = {"cv4": "cv2", "cv5": "cv3", "dfl2": "dfl"}
_KEY = re.compile(r"^model\.(\d+)\.(.*)$")


def deploy_key_map(model: YOLO) -> dict[str, str]:
    """Map each kept key of a dual model's state dict to its key in the deployed (gelan) model."""
    spec = model.arch["deploy"]
    shift = {}
    for first, last, delta in spec["layers"]:
        for i in range(first, last + 1):
            shift[i] = i + delta
    head_src, head_dst = len(model.model) - 1, spec["head"]
    mapping = {}
    for key in model.state_dict():
        m = _KEY.match(key)
        if m is None:
            continue
        idx, rest = int(m.group(1)), m.group(2)
        if idx == head_src:
            branch, _, tail = rest.partition(".")
            if branch in _HEAD_RENAME:
                mapping[key] = f"model.{head_dst}.{_HEAD_RENAME[branch]}.{tail}"
        elif idx in shift:
            mapping[key] = f"model.{shift[idx]}.{rest}"
    return mapping


def to_deploy(model: YOLO) -> YOLO:
    """The deployable single-branch model of ``model`` (a new module); gelan models are returned as they are."""
    if not isinstance(model, YOLO):
        raise TypeError(f"to_deploy expects a y9 YOLO model, got {type(model).__name__}")
    if not model.is_dual:
        return model
    spec = model.arch["deploy"]
    target = build_model(spec["model"], nc=model.nc, names=model.names)
    if model.fused:
        fuse(target)
    source = model.state_dict()
    remapped = {dst: source[src] for src, dst in deploy_key_map(model).items()}
    ref = next(iter(model.parameters()))
    target = target.to(device=ref.device, dtype=ref.dtype)
    load_state_dict_checked(target, remapped, f"the main branch of {model.name}")
    target.train(model.training)
    return target


@torch.no_grad()
def fold_bn(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights and bias of one conv equal to ``bn(conv(x))`` with running statistics, in the conv's dtype.

    Returns ``(weight (Tensor[c2, c1/g, k, k]), bias (Tensor[c2]))``.
    """
    dtype = conv.weight.dtype
    std = (bn.running_var.to(dtype) + bn.eps).sqrt()
    scale = bn.weight.to(dtype) / std
    weight = conv.weight * scale.view(-1, 1, 1, 1)
    bias = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean, dtype=dtype)
    bias = (bias - bn.running_mean.to(dtype)) * scale + bn.bias.to(dtype)
    return weight, bias


def _new_conv(
    like: nn.Conv2d, weight: torch.Tensor, bias: torch.Tensor, kernel: int, padding: int
) -> nn.Conv2d:
    conv = nn.Conv2d(
        like.in_channels, like.out_channels, kernel, like.stride, padding,
        dilation=like.dilation, groups=like.groups, bias=True,
        device=weight.device, dtype=weight.dtype,
    )  # fmt: skip
    conv.weight.data.copy_(weight)
    conv.bias.data.copy_(bias)
    conv.weight.requires_grad_(like.weight.requires_grad)
    return conv


@torch.no_grad()
def _fuse_conv(block: Conv) -> None:
    if block.bn is None:
        return
    weight, bias = fold_bn(block.conv, block.bn)
    k, p = block.conv.kernel_size[0], block.conv.padding[0]
    block.conv = _new_conv(block.conv, weight, bias, k, p)
    block.bn = None


@torch.no_grad()
def _fuse_repconv(block: RepConvN) -> None:
    if block.conv is not None:
        return
    w3, b3 = fold_bn(block.conv1.conv, block.conv1.bn)
    w1, b1 = fold_bn(block.conv2.conv, block.conv2.bn)
    weight = w3 + nn.functional.pad(w1, [1, 1, 1, 1])
    block.conv = _new_conv(block.conv1.conv, weight, b3 + b1, 3, 1)
    del block.conv1
    del block.conv2


def fuse(model: nn.Module) -> nn.Module:
    """Fold every Conv+BatchNorm and merge every RepConvN in place; returns ``model``."""
    for module in list(model.modules()):
        if isinstance(module, RepConvN):
            _fuse_repconv(module)
    for module in list(model.modules()):
        if isinstance(module, Conv):
            _fuse_conv(module)
    if isinstance(model, YOLO):
        model.fused = True
    return model
