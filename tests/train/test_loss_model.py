"""DetectionLoss on real y9train models (train-mode outputs) at 160 px: finite loss, gradients everywhere."""

from __future__ import annotations

import pytest
import torch

from y9train.loss import DetectionLoss
from y9train.models import build_model

LABELS = torch.tensor(
    [[0, 0, 12, 20, 70, 90], [0, 2, 60, 40, 150, 120], [1, 1, 30, 30, 50, 60], [1, 0, 0, 80, 160, 160]],
    dtype=torch.float32,
)


@pytest.mark.parametrize("name", ["gelan-t", "yolov9-t"])
def test_loss_backpropagates_through_a_real_model(name):
    torch.manual_seed(0)
    model = build_model(name, nc=3).train()
    out = model(torch.rand(2, 3, 160, 160))
    assert len(out) == (2 if model.is_dual else 1)
    loss_fn = DetectionLoss.from_model(model, label_smoothing=0.1)
    total, parts = loss_fn(out, LABELS)
    assert torch.isfinite(total) and all(float(v) > 0 for v in parts.values())
    total.backward()
    head = model.head
    for box_list, cls_list in head.heads():  # every branch: class convs of every level, box convs of some
        cls_grads = [seq[-1].weight.grad for seq in cls_list]
        box_grads = [seq[-1].weight.grad for seq in box_list]
        assert all(g is not None and torch.isfinite(g).all() and g.abs().sum() > 0 for g in cls_grads)
        # box logits only get gradients at positive anchors: at 160 px an untrained model's positives may
        # all sit on one level
        assert all(torch.isfinite(g).all() for g in box_grads) and any(g.abs().sum() > 0 for g in box_grads)
    first = next(model.parameters())
    assert first.grad is not None and first.grad.abs().sum() > 0  # down to the stem
