"""DetectionLoss on real y9train models (train-mode outputs) at 160 px: finite loss, gradients everywhere."""

from __future__ import annotations

import pytest
import torch

from tests.train.trainer_fixtures import one_thread  # noqa: F401 - fixture
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


def _loss_and_grads(model, x, memory_format):
    model.zero_grad(set_to_none=True)
    model = model.to(memory_format=memory_format)
    labels = LABELS.clone()
    labels[:, 2:] *= x.shape[-1] / 160  # the boxes of LABELS on this input size
    total, parts = DetectionLoss.from_model(model, label_smoothing=0.1)(
        model(x.contiguous(memory_format=memory_format)), labels
    )
    total.backward()
    grads = {n: p.grad.detach().contiguous().clone() for n, p in model.named_parameters() if p.grad is not None}
    return total.detach(), {k: v.detach() for k, v in parts.items()}, grads


def test_channels_last_gives_the_same_loss_and_gradients():
    """The trainer runs CUDA in channels-last (NHWC strides); the loss and every parameter's gradient are those of
    the default layout (a dual model: both branches, every level). In float64, so that the comparison is not of the
    rounding of a random network's 900 BatchNorm'd gradients (in float32 they agree to about 0.3% of each tensor's
    largest value); the loss itself computes in float32, from the same maps."""
    torch.manual_seed(0)
    model = build_model("yolov9-t", nc=3).train().double()
    x = torch.rand(2, 3, 96, 96, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    t0, p0, g0 = _loss_and_grads(model, x, torch.contiguous_format)
    model.load_state_dict(state)  # the BatchNorm statistics the first forward moved
    t1, p1, g1 = _loss_and_grads(model, x, torch.channels_last)
    assert next(model.parameters()).is_contiguous(memory_format=torch.channels_last) and p0["box"] > 0
    torch.testing.assert_close(t1, t0, rtol=1e-6, atol=1e-6)
    for k in p0:
        torch.testing.assert_close(p1[k], p0[k], rtol=1e-6, atol=1e-6)
    assert g0.keys() == g1.keys() and sum(bool(g.abs().sum() > 0) for g in g0.values()) > 0.9 * len(g0)
    for name in g0:
        scale = float(g0[name].abs().max()) + 1e-30
        torch.testing.assert_close(g1[name] / scale, g0[name] / scale, rtol=0, atol=1e-6, msg=name)
