"""Recipes (``--hyp default`` / ``--hyp official``) and their switches: recipe loading by name, the official
recipe's values, ``optimizer: auto``, the warmup accumulation ramp, the epoch-end rule, the per-epoch LR step, the
AMP dtype and the class-bias prior. The official trainer's semantics are stated in each test (train_dual.py of the
official YOLOv9, read for the facts); real tiny runs count the optimiser steps the trainer takes."""

from __future__ import annotations

import dataclasses
import io
import math

import numpy as np
import pytest
import torch
import yaml

from tests.train.trainer_fixtures import coco_pair, one_thread, tiny_config  # noqa: F401  (fixture)
from y9train.checkpoints.load import read_checkpoint
from y9train.loop.trainer import Trainer
from y9train.optimisation.hyp import CONFIGS_DIR, DEFAULT_HYP_PATH, Hyp, TrainConfig, load_hyp, resolve_hyp
from y9train.optimisation.optim import (
    AUTO_SGD_STEPS,
    AccumulationRule,
    LRController,
    build_optimizer,
    planned_steps,
    resolve_optimizer,
)
from y9train.reports.reporting import Reporter
from y9train.run.train import build_config

CPU = torch.device("cpu")

# data/hyps/hyp.scratch-high.yaml of the official YOLOv9, the keys y9 has (obj, obj_pw, cls_pw, iou_t, anchor_t,
# fl_gamma are YOLOv5-era keys its loss does not read; perspective 0.0 is y9's only behaviour)
SCRATCH_HIGH = {
    "lr0": 0.01, "lrf": 0.01, "momentum": 0.937, "weight_decay": 0.0005, "warmup_epochs": 3.0,
    "warmup_momentum": 0.8, "warmup_bias_lr": 0.1, "box": 7.5, "cls": 0.5, "dfl": 1.5, "hsv_h": 0.015,
    "hsv_s": 0.7, "hsv_v": 0.4, "degrees": 0.0, "translate": 0.1, "scale": 0.9, "shear": 0.0, "flipud": 0.0,
    "fliplr": 0.5, "mosaic": 1.0, "mixup": 0.15,
}  # fmt: skip
# train_dual.py's behaviour: SGD, linear LambdaLR stepped per epoch, nbs 64, warmup max(3 epochs, 100 batches),
# clip 10, EMA 0.9999 / 2000, the fp16 GradScaler, the official assigner, the accumulation ramp, dropped
# epoch-end gradients, bias prior at 640, the loss inside the fp16 autocast, the fp16 EMA after its first validation
# and the fp16 rounding of the starting weights; copy_paste 0.3 pastes segments only (a no-op on box labels: 0.0 here)
OFFICIAL_TRAINER = {
    "optimizer": "sgd", "schedule": "linear", "lr_step": "epoch", "nbs": 64, "warmup_min_iters": 100,
    "clip_grad": 10.0, "ema_decay": 0.9999, "ema_tau": 2000.0, "amp_dtype": "fp16", "assigner": "official",
    "warmup_accumulate_ramp": True, "epoch_end": "drop", "bias_prior_imgsz": 640, "copy_paste": 0.0,
    "label_smoothing": 0.0, "aux_weight": 0.25, "multi_scale": False, "loss_fp16": True, "ema_fp16": True,
    "init_fp16_round": True,
}  # fmt: skip


# ---------------------------------------------------------------------------------------------- recipes by name
def test_recipe_names_resolve_to_the_bundled_files_and_paths_pass_through(tmp_path):
    assert resolve_hyp("official") == CONFIGS_DIR / "hyp-official.yaml"
    assert resolve_hyp("default") == DEFAULT_HYP_PATH and resolve_hyp(None) == DEFAULT_HYP_PATH
    mine = tmp_path / "mine.yaml"
    mine.write_text("lr0: 0.02\n")
    assert resolve_hyp(mine) == mine and resolve_hyp(str(mine)) == mine
    assert load_hyp("default") == Hyp()
    assert load_hyp("official").assigner == "official"
    cfg = build_config(data="d.yaml", model="gelan-t", hyp_file="official", overrides=["mixup=0"])
    assert cfg.hyp.epoch_end == "drop" and cfg.hyp.mixup == 0.0  # the recipe, then the overrides
    with pytest.raises(
        FileNotFoundError, match=r"officail does not exist; .*recipe name \(default, official\)"
    ):
        load_hyp("officail")


def test_official_recipe_holds_the_official_values_and_names_every_key():
    raw = yaml.safe_load((CONFIGS_DIR / "hyp-official.yaml").read_text())
    assert set(raw) == {f.name for f in dataclasses.fields(Hyp)}  # nothing silently left at y9's defaults
    hyp = load_hyp("official")
    assert {k: getattr(hyp, k) for k in SCRATCH_HIGH} == SCRATCH_HIGH
    assert {k: getattr(hyp, k) for k in OFFICIAL_TRAINER} == OFFICIAL_TRAINER


def test_default_recipe_is_the_measured_one():
    hyp = load_hyp("default")
    assert (hyp.optimizer, hyp.scale, hyp.mixup, hyp.close_mosaic) == ("auto", 0.5, 0.0, 15)
    assert (hyp.assigner, hyp.epoch_end, hyp.lr_step, hyp.warmup_accumulate_ramp) == (
        "y9",
        "step",
        "batch",
        False,
    )
    assert (hyp.amp_dtype, hyp.bias_prior_imgsz) == ("auto", 0)
    assert (hyp.loss_fp16, hyp.ema_fp16, hyp.init_fp16_round) == (False, False, False)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"assigner": "tood"}, "assigner='tood'; expected one of y9, official"),
        ({"epoch_end": "keep"}, "epoch_end='keep'; expected one of step, drop"),
        ({"lr_step": "step"}, "lr_step='step'; expected one of batch, epoch"),
        ({"amp_dtype": "fp8"}, "amp_dtype='fp8'; expected one of auto, bf16, fp16"),
        ({"bias_prior_imgsz": -32}, "bias_prior_imgsz=-32; expected a value >= 0"),
        ({"optimizer": "adam"}, "optimizer='adam'; expected one of auto, sgd, adamw"),
    ],
)
def test_bad_switch_values_get_one_sentence(values, message):
    with pytest.raises(ValueError) as info:
        Hyp(**values)
    assert message in str(info.value) and "\n" not in str(info.value)


# ---------------------------------------------------------------------------------------------- optimizer: auto
def test_optimizer_auto_switches_at_10000_planned_steps():
    hyp = Hyp()  # auto; the recipe's sgd values: lr0 0.01, momentum 0.937, warmup_bias_lr 0.1
    # planned steps = epochs * ceil(images / max(batch, nbs)): 1000 images, batch 32, nbs 64 -> 16 per epoch
    assert planned_steps(40, 1000, 32, 64) == 640 and planned_steps(10, 1000, 128, 64) == 80
    below, note = resolve_optimizer(hyp, epochs=9_999, train_images=64, batch=16)  # 9,999 steps
    assert (below.optimizer, below.lr0, below.momentum, below.warmup_bias_lr) == ("adamw", 0.001, 0.9, 0.0)
    assert (
        note == "optimizer auto -> adamw lr0=0.001 momentum=0.9 warmup_bias_lr=0 (9999 planned steps < 10000)"
    )
    at, note = resolve_optimizer(hyp, epochs=10_000, train_images=64, batch=16)  # 10,000 steps
    assert (at.optimizer, at.lr0, at.momentum, at.warmup_bias_lr) == ("sgd", 0.01, 0.937, 0.1)
    assert "10000 planned steps >= 10000" in note and AUTO_SGD_STEPS == 10_000
    assert dataclasses.replace(below, optimizer="auto", lr0=0.01, momentum=0.937, warmup_bias_lr=0.1) == hyp
    for explicit in ("sgd", "adamw"):  # never overridden, whatever the schedule length
        for epochs in (1, 100_000):
            h = Hyp(optimizer=explicit, lr0=0.004, momentum=0.95)
            assert resolve_optimizer(h, epochs=epochs, train_images=64, batch=16) == (h, None)
    with pytest.raises(ValueError, match="optimizer=auto reached build_optimizer"):
        build_optimizer(torch.nn.Conv2d(3, 4, 1), hyp, batch=16, device=CPU)


def test_trainer_resolves_auto_once_prints_it_and_stores_it_for_resume(tmp_path):
    data = coco_pair(tmp_path)
    out = io.StringIO()
    from rich.console import Console

    reporter = Reporter(True, Console(file=out, width=300, highlight=False))
    cfg = tiny_config(data, tmp_path, val=False, hyp={"optimizer": "auto", "lr0": 0.02})
    result = Trainer(cfg, reporter=reporter).fit()
    # 3 images, batch 2, nbs 2: 1 epoch * ceil(3 / 2) = 2 planned steps
    assert "optimizer auto -> adamw lr0=0.001 momentum=0.9 warmup_bias_lr=0 (2 planned steps < 10000)" in (
        out.getvalue()
    )
    resumed = Trainer.from_checkpoint(result.last, {"epochs": 2})
    assert (resumed.config.hyp.optimizer, resumed.config.hyp.lr0) == (
        "adamw",
        0.001,
    )  # decided, not re-decided
    resumed.setup()
    assert isinstance(resumed.optimizer, torch.optim.AdamW) and resumed.optimizer.param_groups[0]["lr"] > 0


# ---------------------------------------------------------------------------------------------- accumulation
def official_step_batches(nb: int, epochs: int, nw: int, nbs: int, batch: int) -> list[int]:
    """train_dual.py's loop, from its semantics: ``last_opt_step = -1`` once before the epochs; per batch
    ``ni = i + nb * epoch``; while ``ni <= nw`` ``accumulate = max(1, round(np.interp(ni, [0, nw], [1, nbs /
    batch])))`` (else ``max(round(nbs / batch), 1)``); a step when ``ni - last_opt_step >= accumulate``; the
    gradients left at an epoch's end are zeroed at the next epoch's start (no step)."""
    accumulate, last, steps = max(round(nbs / batch), 1), -1, []
    for epoch in range(epochs):
        for i in range(nb):
            ni = i + nb * epoch
            if ni <= nw:
                accumulate = max(1, np.interp(ni, [0, nw], [1, nbs / batch]).round())
            if ni - last >= accumulate:
                steps.append(ni)
                last = ni
    return steps


def rule_step_batches(rule: AccumulationRule, nb: int, epochs: int) -> list[int]:
    last, steps = -1, []
    for ni in range(nb * epochs):
        if rule.steps(ni, last, ni % nb == nb - 1):
            steps.append(ni)
            last = ni
    return steps


@pytest.mark.parametrize(("nb", "epochs", "nw", "nbs", "batch"), [(7, 30, 100, 64, 8), (31, 6, 100, 64, 32),
                         (5, 12, 17, 64, 4), (40, 4, 100, 64, 128), (9, 20, 27, 50, 6)])  # fmt: skip
def test_ramp_and_drop_take_the_official_steps(nb, epochs, nw, nbs, batch):
    hyp = Hyp(nbs=nbs, warmup_accumulate_ramp=True, epoch_end="drop")
    rule = AccumulationRule.from_hyp(hyp, batch, nw)
    steps = rule_step_batches(rule, nb, epochs)
    assert steps == official_step_batches(nb, epochs, nw, nbs, batch)
    for ni in range(nw + 1):
        assert rule.accumulate(ni) == max(1, np.interp(ni, [0, nw], [1, nbs / batch]).round())
    assert rule.replay(nb, nb * epochs) == (steps[-1], len(steps))  # what a resume continues from


@pytest.mark.parametrize(("nb", "accumulate"), [(7, 4), (8, 4), (5, 1), (3, 5)])
def test_default_rule_is_y9s_every_accumulate_batches_and_at_the_epoch_end(nb, accumulate):
    """y9 (no ramp, epoch_end step): a step after batch i of an epoch when (i + 1) % accumulate == 0 or i is the
    epoch's last batch."""
    rule = AccumulationRule.from_hyp(Hyp(nbs=16 * accumulate), 16, nw=50)
    expected = [e * nb + i for e in range(4) for i in range(nb) if (i + 1) % accumulate == 0 or i == nb - 1]
    assert rule_step_batches(rule, nb, 4) == expected


def _record_steps(trainer: Trainer) -> dict[str, list]:
    seen: dict[str, list] = {"steps": [], "grads_at_epoch_end": []}
    trainer.add_callback("on_before_optimizer_step", lambda t: seen["steps"].append(t.iteration))
    trainer.add_callback(
        "on_epoch_end", lambda t: seen["grads_at_epoch_end"].append(any(p.grad is not None for p in t.params))
    )
    return seen


# 3 train images, batch 1: 3 batches per epoch, 3 epochs; nbs 4 (accumulate 4), warmup max(1 epoch, 4) = 4 batches
RUN = {"nbs": 4, "warmup_epochs": 1.0, "warmup_min_iters": 4, "optimizer": "sgd", "close_mosaic": 0}


def test_official_switches_in_a_real_run_steps_lr_dropped_gradients_and_resume(tmp_path):
    """One uninterrupted run with the official switches (ramp + drop + per-epoch lr), 9 batches, then the same run
    interrupted in epoch 2 and resumed:
    1. accumulate(ni) = 1, 2, 2 (2.5 rounds to even), 3, 4, then 4; steps after batches 0, 2 and 6 (the official
       loop above); the pending gradients of batches 3-5 and 7-8 are dropped (zeroed, no step) at the epoch ends;
    2. lr constant within an epoch after warmup: warmup ends in epoch 1 (batch 4) at lr0 * lf(1), batch 5 keeps
       it, and epoch 2 trains at what the scheduler set at epoch 1's end, lr0 * lf(1);
    3. the resumed run knows the last step was after batch 2 (replayed from the counters), so batch 3 does not
       step (3 - 2 < accumulate 3); its result equals the uninterrupted run's."""
    data = coco_pair(tmp_path)
    hyp = {**RUN, "warmup_accumulate_ramp": True, "epoch_end": "drop", "lr_step": "epoch"}
    trainer = Trainer(tiny_config(data, tmp_path, name="full", epochs=3, batch=1, val=False, hyp=hyp))
    seen = _record_steps(trainer)
    full = trainer.fit()
    assert seen["steps"] == official_step_batches(3, 3, 4, 4, 1) == [0, 2, 6] and full.steps == 3
    assert seen["grads_at_epoch_end"] == [False, False, False]  # zeroed: nothing reaches the next epoch
    rows = _steps_csv(full.save_dir)
    lf = [(1 - e / 3) * (1 - 0.01) + 0.01 for e in range(3)]
    expected = [
        np.interp(ni, [0, 4], [0.0, 0.01 * lf[ni // 3]]) if ni < 4 else 0.01 * lf[max(ni // 3 - 1, 1)]
        for ni in range(9)
    ]
    assert expected[6] == expected[5]  # the lag: epoch 2 at lf(1)
    assert [r["lr"] for r in rows] == pytest.approx(expected, rel=1e-6)
    assert [r["step"] for r in rows] == [1, 1, 2, 2, 2, 2, 3, 3, 3]

    def interrupt(trainer):
        if trainer.epoch == 1:
            raise KeyboardInterrupt

    cut = Trainer(tiny_config(data, tmp_path, name="cut", epochs=3, batch=1, val=False, hyp=hyp),
                  callbacks={"on_step_end": [interrupt]})  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        cut.fit()
    resumed = Trainer.from_checkpoint(cut.save_dir / "weights" / "last.pt")
    seen = _record_steps(resumed)
    result = resumed.fit()
    assert seen["steps"] == [6] and result.steps == full.steps == 3
    a, b = read_checkpoint(full.last), read_checkpoint(result.last)
    for key in a["model"]:
        assert torch.equal(a["train"]["model"][key], b["train"]["model"][key]), key


def test_y9_switches_in_a_real_run_step_at_epoch_ends_and_lr_per_batch(tmp_path):
    """Same run with y9's switches: accumulate 4 > 3 batches, so one (partial) step at each epoch's end; the lr
    follows the schedule at fractional epochs t = ni / 3 (warmup towards lr0 * lf(t))."""
    data = coco_pair(tmp_path)
    trainer = Trainer(tiny_config(data, tmp_path, epochs=3, batch=1, val=False, hyp=RUN))
    seen = _record_steps(trainer)
    result = trainer.fit()
    assert seen["steps"] == [2, 5, 8] and result.steps == 3
    rows = _steps_csv(result.save_dir)
    lf = [(1 - (ni / 3) / 3) * (1 - 0.01) + 0.01 for ni in range(9)]
    expected = [np.interp(ni, [0, 4], [0.0, 0.01 * lf[ni]]) if ni < 4 else 0.01 * lf[ni] for ni in range(9)]
    assert [r["lr"] for r in rows] == pytest.approx(expected, rel=1e-6)
    assert len({r["lr"] for r in rows[4:6]}) == 2  # changes within an epoch


def _steps_csv(save_dir) -> list[dict[str, float]]:
    import csv

    with (save_dir / "steps.csv").open() as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def test_lr_per_epoch_follows_the_official_warmup_and_lambdalr():
    """Official (train_dual.py): during warmup (ni <= nw) lr = interp(ni, [0, nw], [bias: warmup_bias_lr | others:
    0, initial_lr * lf(epoch)]); afterwards the lr the LambdaLR set at the previous epoch's end. Its constructor's
    step is undone by ``scheduler.last_epoch = start_epoch - 1`` and ``scheduler.step()`` runs after each epoch's
    batches, so an epoch e after warmup trains at initial_lr * lf(e - 1) (the optimiser state in the official's
    epoch checkpoints holds lf(e) after epoch e), and the epoch where warmup ends keeps its last warmup value."""
    hyp = Hyp(optimizer="sgd", lr_step="epoch", warmup_epochs=1.5, warmup_min_iters=0, lrf=0.05)
    nb, epochs = 6, 5
    opt = build_optimizer(torch.nn.Conv2d(3, 4, 1), hyp, batch=16, device=CPU)
    ctl = LRController(opt, hyp, epochs, nb)
    nw = 9

    def lf(e):
        return (1 - e / epochs) * (1.0 - 0.05) + 0.05

    for ni in range(nb * epochs):
        epoch = ni // nb
        ctl.step(ni, epoch + (ni % nb) / nb)
        lrs = {g["name"]: g["lr"] for g in opt.param_groups}
        if ni <= nw:
            assert lrs["bias"] == pytest.approx(np.interp(ni, [0, nw], [0.1, 0.01 * lf(epoch)]))
            assert lrs["weights"] == pytest.approx(np.interp(ni, [0, nw], [0.0, 0.01 * lf(epoch)]))
        else:
            set_by_scheduler = epoch - 1 if epoch > nw // nb else epoch
            assert lrs == pytest.approx(dict.fromkeys(lrs, 0.01 * lf(set_by_scheduler)))


# ---------------------------------------------------------------------------------------------- amp, bias prior
def test_amp_mode_explicit_option_wins_else_the_recipe_on_gpus():
    official = load_hyp("official")
    assert TrainConfig(hyp=official).amp_mode("cuda") == "fp16"  # fp16 + GradScaler, as train_dual.py
    assert TrainConfig(hyp=official).amp_mode("cpu") == "off"  # auto is off on CPU whatever the recipe
    assert TrainConfig(hyp=official, amp="bf16").amp_mode("cuda") == "bf16"
    assert TrainConfig(hyp=official, amp="off").amp_mode("cuda") == "off"
    assert TrainConfig().amp_mode("cuda") == "auto"


@pytest.mark.parametrize(("prior", "imgsz"), [(640, 160), (0, 160), (320, 160)])
def test_class_bias_prior_uses_bias_prior_imgsz(tmp_path, prior, imgsz):
    """Class logits start at log(5 / nc / (S / stride)^2): S = bias_prior_imgsz (official: 640), or the
    training size when 0; box logits start at 1."""
    data = coco_pair(tmp_path)
    trainer = Trainer(tiny_config(data, tmp_path, imgsz=imgsz, val=False, save=False,
                                  hyp={"bias_prior_imgsz": prior}))  # fmt: skip
    trainer.setup()
    head, size = trainer.model.head, prior or imgsz
    for box, cls in head.heads():
        for b, c, s in zip(box, cls, head.stride_values, strict=True):
            want = math.log(5 / 80 / (size / s) ** 2)
            assert torch.allclose(c[-1].bias[:80].double(), torch.full((80,), want, dtype=torch.float64))
            assert torch.all(b[-1].bias == 1.0)


def test_y9_train_cli_takes_a_recipe_name(tmp_path):
    from typer.testing import CliRunner

    from y9cli.app import app

    data = coco_pair(tmp_path)
    args = ["train", "--data", str(data), "--model", "gelan-t", "--imgsz", "64", "--epochs", "1", "--batch", "2",
            "--workers", "0", "--no-val", "--device", "cpu", "--project", str(tmp_path), "--name", "run", "plots=false"]  # fmt: skip
    res = CliRunner().invoke(app, [*args, "--hyp", "official", "warmup_min_iters=1"])
    assert res.exit_code == 0, res.output
    stored = read_checkpoint(tmp_path / "run" / "weights" / "last.pt")["train"]["config"]["hyp"]
    assert {k: stored[k] for k in OFFICIAL_TRAINER} == {**OFFICIAL_TRAINER, "warmup_min_iters": 1}
    res = CliRunner().invoke(app, [*args, "--hyp", "officail"])
    assert res.exit_code != 0
    message = res.output + str(res.exception or "")
    assert "officail does not exist" in message and "recipe name (default, official)" in message
