"""Optimiser groups, schedules (against torch's own schedulers), warmup (against np.interp) and nominal batch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from y9train.models import build_model
from y9train.optimisation.hyp import Hyp
from y9train.optimisation.optim import (
    LRController,
    LRSchedule,
    accumulation_steps,
    build_optimizer,
    param_groups,
    restart_position,
    warmup_iters,
)

CPU = torch.device("cpu")


def test_param_groups_split_bn_weights_biases_and_decayed_weights():
    model = build_model("yolov9-t", nc=3)
    groups = param_groups(model)
    trainable = [p for p in model.parameters() if p.requires_grad]
    ids = [id(p) for g in groups.values() for p in g]
    assert sorted(ids) == sorted(id(p) for p in trainable)  # every trainable parameter exactly once
    assert len(set(ids)) == len(ids)
    by_id = {id(p): (name, m) for m in model.modules() for name, p in m.named_parameters(recurse=False)}
    assert all(by_id[id(p)][0] == "bias" for p in groups["bias"])
    assert all(
        isinstance(by_id[id(p)][1], nn.BatchNorm2d) and by_id[id(p)][0] == "weight" for p in groups["bn"]
    )
    assert all(isinstance(by_id[id(p)][1], nn.Conv2d) and p.ndim == 4 for p in groups["weights"])
    frozen = model.head.dfl.conv.weight  # the DFL decoder's fixed 0..15 weights are not trained
    assert id(frozen) not in ids


@pytest.mark.parametrize(
    ("batch", "accumulate", "decay"), [(16, 4, 5e-4), (48, 1, 5e-4 * 48 / 64), (4, 16, 5e-4)]
)
def test_nominal_batch_sets_accumulation_and_scales_weight_decay(batch, accumulate, decay):
    hyp = Hyp(optimizer="sgd")
    assert accumulation_steps(hyp, batch) == accumulate
    opt = build_optimizer(build_model("gelan-t", nc=2), hyp, batch=batch, device=CPU)
    wd = {g["name"]: g["weight_decay"] for g in opt.param_groups}
    assert wd["weights"] == pytest.approx(decay) and wd["bn"] == 0 and wd["bias"] == 0


def test_sgd_is_nesterov_and_adamw_uses_momentum_as_beta1():
    model = build_model("gelan-t", nc=2)
    sgd = build_optimizer(model, Hyp(optimizer="sgd"), batch=16, device=CPU)
    assert isinstance(sgd, torch.optim.SGD) and all(g["nesterov"] for g in sgd.param_groups)
    assert all(g["momentum"] == 0.937 for g in sgd.param_groups)
    adam = build_optimizer(model, Hyp(optimizer="adamw", lr0=0.001), batch=16, device=CPU)
    assert isinstance(adam, torch.optim.AdamW) and adam.param_groups[0]["betas"] == (0.937, 0.999)


def _torch_lrs(make_scheduler, epochs: int, lr0: float) -> list[float]:
    opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=lr0)
    sched = make_scheduler(opt)
    out = []
    for _ in range(epochs):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


def test_linear_and_cosine_match_torch_schedulers_at_epoch_starts():
    lr0, lrf, epochs = 0.01, 0.05, 12
    linear = LRSchedule("linear", epochs, lrf=lrf)
    ref = _torch_lrs(
        lambda o: torch.optim.lr_scheduler.LinearLR(o, 1.0, lrf, total_iters=epochs), epochs, lr0
    )
    assert [lr0 * linear.factor(e) for e in range(epochs)] == pytest.approx(ref, rel=1e-9)
    cosine = LRSchedule("cosine", epochs, lrf=lrf)
    ref = _torch_lrs(
        lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, epochs, eta_min=lrf * lr0), epochs, lr0
    )
    assert [lr0 * cosine.factor(e) for e in range(epochs)] == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize(("t0", "t_mult"), [(3, 2), (4, 1), (2, 3)])
def test_cosine_restarts_match_torch_at_fractional_epochs(t0, t_mult):
    lr0, eta = 0.02, 0.05
    sched = LRSchedule("cosine_restarts", 40, t0=t0, t_mult=t_mult, eta_min=eta)
    opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=lr0)
    ref = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=t0, T_mult=t_mult, eta_min=eta * lr0)
    for t in np.arange(0, 30, 0.25):
        ref.step(float(t))
        assert lr0 * sched.factor(float(t)) == pytest.approx(
            opt.param_groups[0]["lr"], rel=1e-9, abs=1e-12
        ), t
    # a restart: back to lr0 at the start of the second cycle
    assert sched.factor(t0) == pytest.approx(1.0)
    assert restart_position(t0 * (1 + t_mult) + 0.5, t0, t_mult) == pytest.approx((0.5, t0 * t_mult**2))


def test_warmup_interpolates_lr_and_momentum_then_follows_the_schedule():
    hyp = Hyp(optimizer="sgd", warmup_epochs=2.0, warmup_min_iters=5, warmup_bias_lr=0.1, warmup_momentum=0.8,
              lr0=0.01)  # fmt: skip
    nb, epochs = 7, 10
    assert warmup_iters(hyp, nb) == 14 and warmup_iters(Hyp(warmup_epochs=0.1), nb) == 100
    assert warmup_iters(Hyp(warmup_epochs=0), nb) == 0
    opt = build_optimizer(build_model("gelan-t", nc=2), hyp, batch=16, device=CPU)
    ctl = LRController(opt, hyp, epochs, nb)
    sched = LRSchedule.from_hyp(hyp, epochs)
    for ni in range(0, 30):
        t = ni / nb
        ctl.step(ni, t)
        lrs = {g["name"]: g["lr"] for g in opt.param_groups}
        target = hyp.lr0 * sched.factor(t)
        if ni < 14:
            assert lrs["bias"] == pytest.approx(np.interp(ni, [0, 14], [0.1, target]))
            assert lrs["weights"] == pytest.approx(np.interp(ni, [0, 14], [0.0, target]))
            assert opt.param_groups[0]["momentum"] == pytest.approx(np.interp(ni, [0, 14], [0.8, 0.937]))
        else:
            assert lrs == pytest.approx(dict.fromkeys(lrs, target))
            assert opt.param_groups[0]["momentum"] == 0.937
    assert math.isclose(sched.factor(epochs), hyp.lrf)
