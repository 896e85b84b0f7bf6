"""to_deploy and fuse on random models (the official-parity checks are in test_models.py)."""

from __future__ import annotations

import copy

import pytest
import torch

from y9train.models import build_model
from y9train.reparam import fuse, to_deploy


def test_fuse_float32_and_to_deploy_in_either_order():
    torch.manual_seed(1)
    model = build_model("yolov9-t", nc=5).eval()
    for m in model.modules():  # non-trivial BatchNorm statistics
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 2.0)
    x = torch.rand(1, 3, 96, 64)
    with torch.no_grad():
        ref = model(x)
        a = fuse(to_deploy(copy.deepcopy(model)))(x)
        b = to_deploy(fuse(copy.deepcopy(model)))(x)
    torch.testing.assert_close(a, ref, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(b, ref, rtol=1e-4, atol=1e-4)
    assert b.shape == ref.shape and not to_deploy(fuse(copy.deepcopy(model))).is_dual


def test_to_deploy_keeps_gelan_and_rejects_foreign_modules():
    model = build_model("gelan-t")
    assert to_deploy(model) is model
    with pytest.raises(TypeError, match="expects a y9 YOLO model"):
        to_deploy(torch.nn.Conv2d(3, 3, 1))
