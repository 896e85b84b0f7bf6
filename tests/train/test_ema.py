"""ModelEMA against a slow per-tensor reference of the ramped-decay average."""

from __future__ import annotations

import math

import pytest
import torch

from tests.train.trainer_fixtures import one_thread  # noqa: F401
from y9train.models import build_model
from y9train.optimisation.ema import ModelEMA
from y9train.setup.device_model import fp16_as_official


def _perturb(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for v in model.state_dict().values():
            if v.is_floating_point():
                v.add_(torch.randn(v.shape, generator=g) * 0.1)
            else:
                v.add_(1)  # num_batches_tracked


def test_ema_matches_a_slow_reference_over_several_updates():
    model = build_model("gelan-t", nc=3).train()
    ema = ModelEMA(model, decay=0.99, tau=3.0)
    ref = {k: v.clone() for k, v in model.state_dict().items()}
    for step in range(1, 4):
        _perturb(model, step)
        ema.update(model)
        d = 0.99 * (1 - math.exp(-step / 3.0))
        for k, v in model.state_dict().items():
            ref[k] = d * ref[k] + (1 - d) * v if v.is_floating_point() else v.clone()
    assert ema.updates == 3
    got = ema.module.state_dict()
    for k, v in ref.items():
        torch.testing.assert_close(got[k], v, rtol=1e-5, atol=1e-6, msg=k)
    assert got["model.0.bn.num_batches_tracked"] == model.state_dict()["model.0.bn.num_batches_tracked"]
    assert not any(p.requires_grad for p in ema.module.parameters()) and not ema.module.training


def test_ema_ramp_starts_near_the_model_and_approaches_the_decay():
    model = build_model("gelan-t", nc=3)
    ema = ModelEMA(model, decay=0.9999, tau=2000)
    assert ema.current_decay() == pytest.approx(0.9999 * (1 - math.exp(-1 / 2000)))
    ema.updates = 100_000
    assert ema.current_decay() == pytest.approx(0.9999)


def test_ema_state_round_trip():
    model = build_model("gelan-t", nc=3)
    ema = ModelEMA(model, decay=0.9, tau=5)
    _perturb(model, 0)
    ema.update(model)
    weights = {k: v.clone() for k, v in ema.module.state_dict().items()}
    other = ModelEMA(build_model("gelan-t", nc=3), decay=0.9, tau=5)
    other.load(weights, ema.updates)
    assert other.updates == 1
    for k, v in other.module.state_dict().items():
        assert torch.equal(v, weights[k])
    _perturb(model, 1)  # after load, updates follow the model given (cached tensor lists are rebuilt)
    other.update(model)
    ema.update(model)
    averaged = ema.module.state_dict()  # once: a state_dict() per key made this test 6 s of dict building
    for k, v in other.module.state_dict().items():
        assert torch.equal(v, averaged[k])


def test_fp16_from_validation_keeps_the_official_fp16_arithmetic():
    """After ``validated()`` the EMA is fp16 and updates as ``ema *= d; ema += (1 - d) * model`` into fp16 tensors
    (train_dual.py's EMA on a GPU with AMP); the oracle does the same two roundings in numpy (float32 arithmetic, as
    torch's half kernels), and a loose bound holds where a CPU's rounding of the product may differ."""
    import numpy as np

    model = build_model("gelan-t", nc=3).train()
    plain = ModelEMA(model, decay=0.99, tau=3.0)
    plain.validated()
    assert next(plain.module.parameters()).dtype == torch.float32  # the switch is off: nothing changes
    ema = ModelEMA(model, decay=0.99, tau=3.0, fp16_from_validation=True)
    _perturb(model, 1)
    ema.update(model)
    ema.validated()
    assert {v.dtype for v in ema.module.state_dict().values() if v.is_floating_point()} == {torch.float16}
    ref = {
        k: v.numpy().astype(np.float16) for k, v in ema.module.state_dict().items() if v.is_floating_point()
    }
    for step in (2, 3):
        _perturb(model, step)
        ema.update(model)
        d = 0.99 * (1 - math.exp(-step / 3.0))
        for k, v in model.state_dict().items():
            if v.is_floating_point():
                scaled = (ref[k].astype(np.float32) * np.float32(d)).astype(np.float16)  # ema *= d
                ref[k] = (scaled.astype(np.float32) + np.float32(1 - d) * v.numpy()).astype(np.float16)
        ema.validated()  # stays fp16
    got = ema.module.state_dict()
    for k, v in ref.items():
        assert got[k].dtype == torch.float16
        diff = np.abs(got[k].float().numpy() - v.astype(np.float32))
        ulp = np.spacing(np.abs(v)).astype(np.float32)  # one fp16 step at each value
        assert (diff <= 2 * ulp).all() and (diff == 0).mean() > 0.999, k
    fp32 = ModelEMA(model, decay=0.99, tau=3.0).module.state_dict()  # the fp32 average of the same steps differs
    assert any(not torch.equal(got[k].float(), fp32[k]) for k in ref)  # by fp16 rounding


@pytest.mark.parametrize(
    "requested, device, amp_dtype, expected",
    [
        (True, "cuda", torch.float16, True),  # train_dual.py on a GPU with AMP
        (True, "cuda", torch.bfloat16, False),
        (True, "cuda", None, False),
        (True, "cpu", torch.float16, False),  # the official's validation keeps float32 on a CPU
        (False, "cuda", torch.float16, False),
    ],
)
def test_the_ema_turns_fp16_only_where_the_officials_does(requested, device, amp_dtype, expected):
    assert fp16_as_official(requested, torch.device(device), amp_dtype) is expected
