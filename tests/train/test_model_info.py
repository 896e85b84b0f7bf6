"""``model_info``'s GFLOPs, counted on a 'meta' copy of the model (no weight copied, BatchNorm as Identity), against
torch's own FLOP counter (``torch.utils.flop_counter.FlopCounterMode``) on the real model's CPU forward; and the
model itself left as it was (its weights, its BatchNorms, its training mode)."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from y9train.models import build_model
from y9train.models.complexity import conv_gflops, model_info


@pytest.mark.parametrize("name", ["gelan-t", "yolov9-t"])  # single head, and dual head (the auxiliary branch)
def test_gflops_equal_torchs_flop_counter_on_the_real_forward(name):
    torch.manual_seed(0)
    model = build_model(name, nc=3)
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model.eval()(torch.zeros(1, 3, 96, 128))
    # only convolutions count (no matmul in these networks): the counter's total is the convolutions' alone
    assert set(map(str, counter.get_flop_counts()["Global"])) == {"aten.convolution"}
    model.train()
    assert conv_gflops(model, (96, 128)) == pytest.approx(counter.get_total_flops() / 1e9, rel=1e-12)
    info = model_info(model, (96, 128))
    assert info.gflops == round(counter.get_total_flops() / 1e9, 2) and info.imgsz == (96, 128)
    assert model.training and any(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules())
    assert all(v.device.type == "cpu" and torch.equal(v, weights[k]) for k, v in model.state_dict().items())
