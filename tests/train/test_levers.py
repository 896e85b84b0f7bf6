"""Steadiness levers (``Hyp``; docs/training.md, "Steadiness levers"), each at today's behaviour by default:
``ema_window`` (the span the auto EMA averages) and ``average_epochs`` (the mean of the last epochs' EMA weights);
``lrf`` (final learning rate) and ``close_mosaic`` are tested in test_optim.py and test_trainer_options.py."""

from __future__ import annotations

import math

import pytest
import torch

from tests.train.trainer_fixtures import coco_pair, one_thread, tiny_config  # noqa: F401 - fixture
from y9train.checkpoints.load import read_checkpoint
from y9train.loop.trainer import Trainer
from y9train.optimisation.ema import ModelEMA
from y9train.optimisation.hyp import Hyp, load_hyp
from y9train.optimisation.optim import resolve_ema_tau
from y9train.optimisation.weight_average import EpochAverage


def test_levers_are_off_by_default_and_in_both_recipes():
    assert (Hyp().ema_window, Hyp().average_epochs) == (0.1, 0)
    for recipe in ("default", "official"):
        hyp = load_hyp(recipe)
        assert hyp.average_epochs == 0 and hyp.ema_window == 0.1
    with pytest.raises(ValueError, match="ema_window"):
        Hyp(ema_window=0.0)
    with pytest.raises(ValueError, match="average_epochs"):
        Hyp(average_epochs=-1)


def _final_share(steps: int, tau: float, last: int) -> float:
    """The share of the real ModelEMA's final average that comes from the last ``last`` of ``steps`` updates."""
    model = torch.nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(0.0)
        ema = ModelEMA(model, 0.9999, tau)
        for t in range(steps):
            model.weight.fill_(float(t >= steps - last))
            ema.update(model)
    return float(ema.module.weight)


def test_ema_window_sets_the_span_of_the_final_average():
    """The auto tau makes the last update's decay ``1 - 1 / (window * S)``; the real ModelEMA's final average then
    draws most of its weight (60-95%) from the last ``window`` of the steps, and a wider window leaves less to the
    very last steps."""
    steps, tail = 600, []
    for window in (0.05, 0.1, 0.3):
        hyp, _ = resolve_ema_tau(Hyp(ema_window=window), steps=steps)
        assert hyp.ema_tau == round(steps / math.log(window * steps), 1)
        last_decay = hyp.ema_decay * (1 - math.exp(-steps / hyp.ema_tau))
        assert 1 - last_decay == pytest.approx(1 / (window * steps), rel=0.02)
        assert 0.6 <= _final_share(steps, hyp.ema_tau, round(window * steps)) <= 0.95
        tail.append(_final_share(steps, hyp.ema_tau, 15))  # the last 2.5% of the steps
    assert tail[0] > tail[1] > tail[2]


def _states(n: int, seed: int = 0) -> list[dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    return [
        {"w": torch.randn(3, 4, generator=g), "bn.running_var": torch.rand(4, generator=g) + 0.5,
         "bn.num_batches_tracked": torch.tensor(10 * (i + 1))}
        for i in range(n)
    ]  # fmt: skip


class _Holder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(3, 4))
        self.bn = torch.nn.BatchNorm1d(4)


def test_epoch_average_is_the_mean_of_the_last_epochs():
    epochs, count = 6, 3
    states = _states(epochs)
    module, avg = _Holder(), EpochAverage(count, epochs)
    for e, st in enumerate(states):
        module.load_state_dict(st, strict=False)
        applied = avg.take(e, module)
        assert applied == (e == epochs - 1)
        if e == 3:  # mid-window: a resumed run continues the same sum
            resumed = EpochAverage(count, epochs)
            assert resumed.load(avg.state_dict())
            assert not EpochAverage(count, epochs + 2).load(avg.state_dict())  # other epochs: a fresh window
    want = torch.stack([st["w"].double() for st in states[-count:]]).mean(0).float()
    torch.testing.assert_close(module.w.detach(), want, rtol=0, atol=1e-7)
    var = torch.stack([st["bn.running_var"].double() for st in states[-count:]]).mean(0).float()
    torch.testing.assert_close(module.bn.running_var, var, rtol=0, atol=1e-7)
    assert int(module.bn.num_batches_tracked) == 60  # integers: the latest
    # the resumed copy, fed the remaining epochs, ends with the same weights
    other = _Holder()
    for e, st in enumerate(states[4:], start=4):
        other.load_state_dict(st, strict=False)
        resumed.take(e, other)
    assert torch.equal(other.w, module.w)
    off = EpochAverage(0, epochs)
    assert not off.take(epochs - 1, module) and off.state_dict() is None


def test_a_run_ends_with_the_mean_of_its_last_epochs_ema_weights(tmp_path):
    """average_epochs=2 over a 2-epoch run: last.pt (and the last validation) hold (EMA after epoch 1 + EMA after
    epoch 2) / 2, the EMA weights taken at the last step of each epoch; last.pt keeps the running sum for a resume."""
    cfg = tiny_config(coco_pair(tmp_path), tmp_path, epochs=2, val=False, hyp={"average_epochs": 2})
    seen = []

    def at_epoch_end(trainer):
        if trainer.batch_index == trainer.nb - 1:
            seen.append({k: v.detach().double().clone() for k, v in trainer.ema.module.state_dict().items()})

    trainer = Trainer(cfg, callbacks={"on_step_end": [at_epoch_end]})
    result = trainer.fit()
    assert len(seen) == 2
    payload = read_checkpoint(result.last)
    final, state = payload["model"], payload["train"]["average"]
    assert state["taken"] == 2 and state["first"] == 0
    changed = 0
    for k, v in final.items():
        if v.is_floating_point():
            torch.testing.assert_close(v.double(), ((seen[0][k] + seen[1][k]) / 2).to(v.dtype).double(), msg=k)
            changed += not torch.equal(seen[1][k], seen[0][k])
        else:
            assert torch.equal(v, seen[1][k].to(v.dtype))
    assert changed > 0  # the two epochs' EMA weights differ: the mean is not either of them
