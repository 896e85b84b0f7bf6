"""``ema_tau: 0`` (y9's default): the EMA's time constant follows the schedule's length (``optim.resolve_ema_tau``).

With the official tau of 2000 the ramp ``decay * (1 - exp(-updates / tau))`` ends a 520-step run (DeepPCB split,
40 epochs, batch 32) at a decay of 0.23: the "EMA" is the latest weights, and the per-epoch mAP swings with them
(docs/training.md, "Reading the outputs"). The auto rule makes the final average span about the last 10% of any run's steps.
"""

from __future__ import annotations

import io
import math

import pytest
import torch

from tests.train.trainer_fixtures import coco_pair, one_thread, tiny_config  # noqa: F401  (fixture)
from y9train.loop.trainer import Trainer
from y9train.optimisation.ema import ModelEMA
from y9train.optimisation.hyp import Hyp, load_hyp
from y9train.optimisation.optim import AUTO_EMA_TAU_MAX, planned_steps, resolve_auto, resolve_ema_tau
from y9train.reports.reporting import Reporter


def test_auto_tau_from_the_planned_steps():
    hyp = Hyp()
    assert hyp.ema_tau == 0.0  # the default recipe asks for auto
    steps = planned_steps(40, 800, 32, 64)  # DeepPCB split: 40 epochs * ceil(800 / 64)
    assert steps == 520
    got, note = resolve_ema_tau(hyp, steps=steps)
    assert got.ema_tau == round(520 / math.log(52), 1) == 131.6 and got.ema_decay == hyp.ema_decay
    assert note == (
        "ema_tau auto -> 131.6 (the EMA averages about the last 10% of 520 planned steps; decay 0.981 at the last step)"
    )
    assert resolve_ema_tau(hyp, steps=1_000_000)[0].ema_tau == AUTO_EMA_TAU_MAX == 2000.0
    assert resolve_ema_tau(hyp, steps=3)[0].ema_tau == round(3 / math.log(2), 1)  # at least a 2-step window
    assert resolve_ema_tau(hyp, steps=0)[0].ema_tau > 0
    for explicit in (Hyp(ema_tau=77.0), load_hyp("official")):  # a positive tau is never overridden
        assert resolve_ema_tau(explicit, steps=steps) == (explicit, None)
    assert load_hyp("official").ema_tau == 2000.0


def _average_of(steps: int, tau: float, value) -> float:
    """The real ModelEMA over a one-weight model whose weight at update t is ``value(t)``: the final average."""
    model = torch.nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(0.0)
        ema = ModelEMA(model, 0.9999, tau)
        for t in range(steps):
            model.weight.fill_(value(t))
            ema.update(model)
    return float(ema.module.weight)


@pytest.mark.parametrize("steps", [40, 520, 6000])
def test_the_final_average_spans_the_last_tenth_of_any_run(steps):
    """Whatever the run's length, its last 10% of steps carry 60-80% of the final EMA and its first half under
    1%; with the official tau (2000) a 520-step run's last 10% carry over 90% (the EMA is the latest weights)."""
    hyp, _ = resolve_auto(Hyp(), epochs=steps, train_images=64, batch=64)  # one optimiser step per epoch
    last_tenth = _average_of(steps, hyp.ema_tau, lambda t: float(t >= steps - steps // 10))
    first_half = _average_of(steps, hyp.ema_tau, lambda t: float(t < steps // 2))
    assert 0.6 < last_tenth < 0.8 and first_half < 0.01
    if steps == 520:
        assert _average_of(steps, 2000.0, lambda t: float(t >= steps - steps // 10)) > 0.9


def test_trainer_builds_its_ema_with_the_resolved_tau_and_keeps_it_on_resume(tmp_path):
    data = coco_pair(tmp_path)
    out = io.StringIO()
    from rich.console import Console

    reporter = Reporter(True, Console(file=out, width=300, highlight=False))
    cfg = tiny_config(data, tmp_path, val=False, epochs=1, hyp={"ema_tau": 0.0})
    trainer = Trainer(cfg, reporter=reporter)
    result = trainer.fit()
    steps = planned_steps(cfg.epochs, 3, cfg.batch, cfg.hyp.nbs)  # 3 train images
    tau = resolve_ema_tau(Hyp(), steps=steps)[0].ema_tau
    assert trainer.ema.tau == tau == trainer.config.hyp.ema_tau
    assert f"ema_tau auto -> {tau:g} (the EMA averages about the last 10% of {steps} planned steps" in out.getvalue()
    resumed = Trainer.from_checkpoint(result.last, {"epochs": 5})
    assert resumed.config.hyp.ema_tau == tau  # decided once, not re-decided for the longer schedule
    resumed.setup()
    assert resumed.ema.tau == tau


def test_an_fp16_ema_trains_saves_loads_and_resumes_in_the_trainer(tmp_path):
    """The trainer with its EMA turned fp16 (what ``ema_fp16`` does from the first validation on a GPU with fp16
    autocast; forced here on a CPU run): it updates in fp16, last.pt holds the fp16 EMA and loads as a float32
    model, and a resume restarts the EMA in float32 (as the official's resume)."""
    from y9train.checkpoint import load_checkpoint
    from y9train.checkpoints.load import read_checkpoint

    def to_fp16(t):
        t.ema.fp16_from_validation = True
        t.ema.validated()

    cfg = tiny_config(coco_pair(tmp_path), tmp_path, val=False, epochs=2, hyp={"ema_tau": 3.0})
    trainer = Trainer(cfg, callbacks={"on_train_start": [to_fp16]})
    result = trainer.fit()
    assert trainer.ema.updates > 0 and next(trainer.ema.module.parameters()).dtype == torch.float16
    stored = read_checkpoint(result.last)["model"]
    assert {v.dtype for v in stored.values() if v.is_floating_point()} == {torch.float16}
    model = load_checkpoint(result.last)
    assert all(p.dtype == torch.float32 and torch.isfinite(p).all() for p in model.parameters())
    assert torch.equal(model.model[0].conv.weight, stored["model.0.conv.weight"].float())
    resumed = Trainer.from_checkpoint(result.last, {"epochs": 3})
    again = resumed.fit()
    assert next(resumed.ema.module.parameters()).dtype == torch.float32 and len(again.history) == 3


@pytest.mark.parametrize("requested", [True, False])
def test_the_run_log_names_the_ema_path_it_took(tmp_path, requested):
    """``ema_fp16`` asked for on a CPU: the log says it is off here and why, and the EMA stays float32; not asked
    for: the log says nothing about it."""
    from rich.console import Console

    out = io.StringIO()
    cfg = tiny_config(coco_pair(tmp_path), tmp_path, val=False, epochs=1, hyp={"ema_fp16": requested})
    trainer = Trainer(cfg, reporter=Reporter(True, Console(file=out, width=300, highlight=False)))
    trainer.setup()
    assert trainer.ema.fp16_from_validation is False
    said = "ema_fp16: off here (it needs a CUDA device under fp16 autocast); the EMA stays float32" in out.getvalue()
    assert said is requested and ("ema_fp16" in out.getvalue()) is requested
