"""Random weights that behave like a trained network's, for GPU benchmarks without a checkpoint.

The fixture rule of ../shared/fixtures/official/README.md (per-tensor PCG64(crc32(key)) draws; the DFL's fixed
weights kept), then BatchNorm statistics re-estimated on real-looking letterboxed frames.
"""

from __future__ import annotations

import zlib

import numpy as np


def fixture_like_weights(model) -> None:
    """Fill ``model`` in place by the fixture rule (conv He-normal, conv bias N(0, 0.1), BN weight U(0.2, 0.5),
    BN bias N(0, 0.1); BN statistics reset; the DFL's fixed weights kept)."""
    import torch
    from torch import nn

    kinds = {}
    for mname, m in model.named_modules():
        if isinstance(m, nn.Conv2d):
            if not m.weight.requires_grad:  # the DFL's fixed arange(16) conv
                continue
            kinds[f"{mname}.weight"] = "conv_weight"
            if m.bias is not None:
                kinds[f"{mname}.bias"] = "conv_bias"
        elif isinstance(m, nn.modules.batchnorm._BatchNorm):
            kinds[f"{mname}.weight"], kinds[f"{mname}.bias"] = "bn_weight", "bn_bias"
    state = model.state_dict()
    with torch.no_grad():
        for key, kind in kinds.items():
            t = state[key]
            rng = np.random.Generator(np.random.PCG64(zlib.crc32(key.encode())))
            shape = tuple(t.shape)
            if kind == "conv_weight":
                v = rng.standard_normal(shape) * np.sqrt(2 / np.prod(shape[1:]))
            elif kind in ("conv_bias", "bn_bias"):
                v = rng.normal(0, 0.1, shape)
            else:
                v = rng.uniform(0.2, 0.5, shape)
            t.copy_(torch.from_numpy(v.astype(np.float32)))
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()


def reestimate_bn(model, blobs, device) -> None:
    """Running statistics from train-mode passes over real-looking letterboxed frames (momentum=None)."""
    import torch
    from torch import nn

    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.to(device).train()
    with torch.no_grad():
        for b in blobs:
            model(torch.from_numpy(b).to(device))
    model.eval().cpu()
    for m in bns:
        m.momentum = 0.03
