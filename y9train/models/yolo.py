"""The YOLO network: a graph of blocks built from a config, ending in a DDetect or DualDDetect head.

``YOLO.forward(x (Tensor[B, 3, H, W]))``:
- eval: ``Tensor[B, 4 + nc, A]`` (main branch), or ``(main, aux)`` with ``return_aux=True`` (dual models);
- train: ``list[list[Tensor]]``, the branches (main first), each 3 maps ``[B, 4 * reg_max + nc, H_l, W_l]``.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from y9core.evaluation.coco_categories import COCO_NAMES  # noqa: F401 - the 80 COCO class names, re-exported here
from y9train.models import blocks as B
from y9train.models.head import DDetect, DualDDetect

# Layers that hold no computation worth re-running under gradient checkpointing.
_LIGHT = (B.Input, B.Concat, B.Upsample, B.CBFuse, DDetect, DualDDetect)


def default_names(nc: int) -> list[str]:
    return list(COCO_NAMES) if nc == 80 else [f"class{i}" for i in range(nc)]


def _build_layer(layer: dict[str, Any], ch_in: list[int], nc: int) -> tuple[nn.Module, list[int] | int]:
    """One module and its output channels (a list for CBLinear's channel groups)."""
    op, c1 = layer["op"], ch_in[0] if ch_in else 3
    if op == "input":
        return B.Input(), 3
    if op == "conv":
        return B.Conv(c1, layer["out"], layer["k"], layer["s"]), layer["out"]
    if op == "elan1":
        return B.ELAN1(c1, layer["out"], layer["mid"], layer["branch"]), layer["out"]
    if op == "repncspelan":
        return B.RepNCSPELAN4(c1, layer["out"], layer["mid"], layer["branch"], layer["depth"]), layer["out"]
    if op == "aconv":
        return B.AConv(c1, layer["out"]), layer["out"]
    if op == "adown":
        return B.ADown(c1, layer["out"]), layer["out"]
    if op == "sppelan":
        return B.SPPELAN(c1, layer["out"], layer["mid"]), layer["out"]
    if op == "upsample":
        return B.Upsample(layer.get("scale", 2)), c1
    if op == "concat":
        return B.Concat(), sum(ch_in)
    if op == "cblinear":
        return B.CBLinear(c1, layer["outs"]), list(layer["outs"])
    if op == "cbfuse":
        return B.CBFuse(layer["pick"]), ch_in[-1]
    if op == "detect":
        return DDetect(nc, ch_in), 0
    if op == "dual_detect":
        return DualDDetect(nc, ch_in), 0
    raise ValueError(f"unknown op {op!r}")


class YOLO(nn.Module):
    """A YOLOv9 / GELAN detector built from a validated config (see ``y9train.models.config``)."""

    def __init__(self, cfg: dict[str, Any], nc: int = 80, names: list[str] | None = None):
        super().__init__()
        if nc < 1:
            raise ValueError(f"nc={nc}: expected at least one class")
        names = list(names) if names is not None else default_names(nc)
        if len(names) != nc:
            raise ValueError(f"{len(names)} class names for nc={nc}: expected one name per class")
        self.arch = cfg
        self.name: str = cfg["name"]
        self.nc = nc
        self.names = names
        layers: list[nn.Module] = []
        out_ch: list[list[int] | int] = []
        self.sources: list[list[int]] = []
        for layer in cfg["layers"]:
            srcs = layer["sources"]
            ch_in = []
            for s in srcs:
                c = 3 if s == -1 else out_ch[s]
                ch_in.append(c)
            if layer["op"] == "cbfuse":  # inputs are channel groups: only the last (a tensor) sets the width
                ch_in = [ch_in[-1]]
            module, c2 = _build_layer(layer, ch_in, nc)
            layers.append(module)
            out_ch.append(c2)
            self.sources.append(srcs)
        self.model = nn.ModuleList(layers)
        self.save = sorted({s for i, srcs in enumerate(self.sources) for s in srcs if s not in (-1, i - 1)})
        head = self.model[-1]
        head.set_strides(cfg["strides"])
        self.is_dual = isinstance(head, DualDDetect)
        self.reg_max = head.reg_max
        self.grad_checkpointing = False
        self.fused = False

    @property
    def stride(self) -> torch.Tensor:
        return self.model[-1].stride

    @property
    def head(self) -> DDetect | DualDDetect:
        return self.model[-1]

    @property
    def config(self) -> dict[str, Any]:
        """A JSON-able description: enough to rebuild the architecture with ``build_model``."""
        return {
            "name": self.name,
            "nc": self.nc,
            "names": list(self.names),
            "strides": list(self.arch["strides"]),
        }

    def set_grad_checkpointing(self, enabled: bool = True) -> YOLO:
        """Re-compute block activations in the backward pass instead of storing them (training only)."""
        self.grad_checkpointing = enabled
        return self

    def forward(self, x: torch.Tensor, return_aux: bool = False):
        saved: dict[int, Any] = {-1: x}
        y: Any = x
        last = len(self.model) - 1
        use_ckpt = self.grad_checkpointing and self.training and torch.is_grad_enabled()
        for i, (module, srcs) in enumerate(zip(self.model, self.sources)):
            if not srcs:
                inp = x
            elif len(srcs) == 1 and layer_is_single(module):
                inp = y if srcs[0] == i - 1 else saved[srcs[0]]
            else:
                inp = [y if s == i - 1 else saved[s] for s in srcs]
            if i == last:
                return module(inp, return_aux=return_aux)
            if use_ckpt and not isinstance(module, _LIGHT):
                y = checkpoint(_OnceStats(module), inp, use_reentrant=False)
            else:
                y = module(inp)
            if i in self.save:
                saved[i] = y
        raise RuntimeError("unreachable: the last layer is the head")


def layer_is_single(module: nn.Module) -> bool:
    """True when the module takes one tensor (not a list of inputs)."""
    return not isinstance(module, (B.Concat, B.CBFuse, DDetect, DualDDetect))


class _OnceStats:
    """Runs a block; when re-run by gradient checkpointing, BatchNorm running stats are not updated twice."""

    def __init__(self, module: nn.Module):
        self.module = module
        self.calls = 0

    def __call__(self, inp):
        self.calls += 1
        if self.calls == 1:
            return self.module(inp)
        with frozen_bn_stats(self.module):
            return self.module(inp)


@contextlib.contextmanager
def frozen_bn_stats(module: nn.Module):
    """Train-mode BatchNorm still normalises with batch statistics but leaves running stats unchanged."""
    saved = []
    for m in module.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training and m.track_running_stats:
            saved.append((m, m.momentum, m.num_batches_tracked.clone()))
            m.momentum = 0.0
    try:
        yield
    finally:
        for m, momentum, count in saved:
            m.momentum = momentum
            m.num_batches_tracked.copy_(count)
