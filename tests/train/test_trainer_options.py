"""Trainer options that must visibly act: label smoothing (and its decay) reaching the loss, gradient clipping,
gradient checkpointing (same loss, less memory), accumulation to the nominal batch, close-mosaic, early stopping,
bf16 autocast with channels_last. Tiny runs on the two COCO images in tests/data.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from tests.train.trainer_fixtures import coco_pair, one_thread, tiny_config  # noqa: F401
from y9train.loop.trainer import Trainer
from y9train.loss import DetectionLoss
from y9train.models import build_model
from y9train.reports.reporting import read_csv


def _grad_norm(params) -> float:
    norms = [torch.linalg.vector_norm(p.grad.float()) for p in params if p.grad is not None]
    return float(torch.linalg.vector_norm(torch.stack(norms)))


def test_label_smoothing_reaches_the_loss_and_decays_linearly_to_zero(tmp_path):
    data = coco_pair(tmp_path)

    def run(eps, decay):
        seen = []
        cfg = tiny_config(data, tmp_path, epochs=2, val=False, save=False,
                          hyp={"label_smoothing": eps, "label_smoothing_decay": decay})  # fmt: skip
        trainer = Trainer(cfg, callbacks={"on_step_end": [lambda t: seen.append(
            (t.epoch + t.batch_index / t.nb, t.loss_fn.label_smoothing, float(t.last_parts["cls"])))]})  # fmt: skip
        trainer.fit()
        return seen

    decayed, constant, off = run(0.2, True), run(0.2, False), run(0.0, False)
    assert [t for t, _, _ in decayed] == [0.0, 0.5, 1.0, 1.5]  # 2 batches per epoch, 2 epochs
    assert [e for _, e, _ in decayed] == pytest.approx([0.2 * (1 - t / 2) for t, _, _ in decayed])
    assert [e for _, e, _ in constant] == [0.2] * 4
    # same weights, same first batch: the smoothing changes the class loss the optimiser sees
    assert decayed[0][2] == pytest.approx(constant[0][2])
    assert abs(constant[0][2] - off[0][2]) > 1e-3 * abs(off[0][2])


def test_clipping_bounds_the_gradient_norm_and_changes_the_update(tmp_path):
    data = coco_pair(tmp_path)

    def run(clip, name):
        seen = []
        cfg = tiny_config(data, tmp_path, name=name, epochs=1, val=False, hyp={"clip_grad": clip})
        trainer = Trainer(cfg, callbacks={"on_before_optimizer_step": [
            lambda t: seen.append((float(t.last_grad_norm), _grad_norm(t.params)))]})  # fmt: skip
        result = trainer.fit()
        return seen, trainer.model.state_dict(), read_csv(result.save_dir / "steps.csv")

    clipped, w_clipped, steps = run(1.0, "clip")
    free, w_free, _ = run(0.0, "free")
    assert len(clipped) == 2
    for (pre, post), (pre_free, post_free) in zip(clipped, free):
        assert pre > 10.0  # an untrained model's gradients are far above the limit
        assert post <= 1.0 * (1 + 1e-4) and post == pytest.approx(1.0, rel=1e-3)
        assert post_free == pytest.approx(pre_free, rel=1e-5)  # no clipping: only measured
    assert clipped[0][0] == pytest.approx(free[0][0], rel=1e-5)  # same first step before clipping
    assert [s["grad_norm"] for s in steps] == pytest.approx(
        [pre for pre, _ in clipped], rel=1e-6
    )  # logged pre-clip
    key = "model.0.conv.weight"
    assert not torch.allclose(w_clipped[key], w_free[key])


def test_accumulation_to_the_nominal_batch_steps_once_per_four_batches_and_at_epoch_end(tmp_path):
    data = coco_pair(tmp_path)
    cfg = tiny_config(data, tmp_path, epochs=2, val=False, hyp={"nbs": 8})  # batch 2 -> accumulate 4
    result = Trainer(cfg).fit()
    assert result.steps == 2  # 2 batches per epoch < 4: the epoch-end flush steps once per epoch
    steps = read_csv(result.save_dir / "steps.csv")
    assert [s["step"] for s in steps] == [0, 1, 1, 2]
    assert [math.isnan(s["grad_norm"]) for s in steps] == [True, False, True, False]
    again = Trainer(dataclasses.replace(cfg, exist_ok=True, save_dir=None)).fit()  # same folder, a new run
    assert again.save_dir == result.save_dir and len(read_csv(again.save_dir / "steps.csv")) == 4


def test_close_mosaic_turns_mosaic_off_for_the_last_epochs_and_patience_stops_early(tmp_path):
    data = coco_pair(tmp_path)
    seen = []
    cfg = tiny_config(data, tmp_path, epochs=3, val=False, save=False, hyp={"close_mosaic": 1})
    Trainer(cfg, callbacks={"on_step_end": [lambda t: seen.append((t.epoch, t.train_ds.mosaic))]}).fit()
    assert seen == [(0, True), (0, True), (1, True), (1, True), (2, False), (2, False)]

    # lr ~ 0: the fitness cannot improve after the first epoch, so patience 1 stops after epoch 2 of 5
    cfg = tiny_config(
        data, tmp_path, name="patience", epochs=5, hyp={"patience": 1, "lr0": 1e-12, "mosaic": 0.0}
    )
    result = Trainer(cfg).fit()
    assert result.stopped_early and result.epochs_run == 2 and result.best_epoch == 1
    assert [r["epoch"] for r in read_csv(result.save_dir / "results.csv")] == [1, 2]


def test_grad_checkpointing_option_gives_the_same_step(tmp_path):
    data = coco_pair(tmp_path)
    runs = {}
    for ckpt in (False, True):
        seen: list[float] = []
        cfg = tiny_config(data, tmp_path, epochs=1, val=False, save=False, grad_checkpointing=ckpt)
        trainer = Trainer(cfg, callbacks={"on_step_end": [
            lambda t, seen=seen: seen.extend(float(v) for v in t.last_parts.values())]})  # fmt: skip
        trainer.fit()
        assert trainer.model.grad_checkpointing is ckpt
        runs[ckpt] = (seen, trainer.model.state_dict())
    assert runs[True][0] == pytest.approx(runs[False][0], rel=1e-4)  # both steps' loss terms
    for key, value in runs[False][1].items():
        torch.testing.assert_close(runs[True][1][key], value, rtol=1e-4, atol=1e-5, msg=key)


def _peak_cpu_bytes(fn) -> int:
    """Peak of (bytes allocated - bytes freed) through torch's CPU allocator while ``fn`` runs, from the
    profiler's memory events (``profile_memory=True``), relative to the start."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted(
        (e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"
    )
    live = peak = 0
    for _, nbytes in events:
        live += nbytes
        peak = max(peak, live)
    return peak


@pytest.mark.parametrize("name", ["gelan-t", "yolov9-t"])
def test_grad_checkpointing_same_loss_and_gradients_with_lower_peak_memory(name):
    labels = torch.tensor([[0, 0, 12, 20, 70, 90], [1, 2, 60, 40, 150, 120], [1, 1, 100, 100, 150, 140]])
    x = torch.rand(2, 3, 160, 160, generator=torch.Generator().manual_seed(0))
    out = {}
    for ckpt in (False, True):
        torch.manual_seed(0)
        model = build_model(name, nc=3).train().set_grad_checkpointing(ckpt)
        loss_fn = DetectionLoss.from_model(model)
        box = {}

        def step(model=model, loss_fn=loss_fn, box=box):
            total, _ = loss_fn(model(x), labels.float())
            total.backward()
            box["loss"] = float(total.detach())

        peak = _peak_cpu_bytes(step)
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        out[ckpt] = (box["loss"], grads, peak, model.state_dict()["model.2.cv1.bn.running_mean"].clone())
    (loss0, g0, peak0, bn0), (loss1, g1, peak1, bn1) = out[False], out[True]
    assert loss1 == pytest.approx(loss0, rel=1e-4)
    assert g0.keys() == g1.keys()
    for k in g0:
        torch.testing.assert_close(g1[k], g0[k], rtol=1e-3, atol=1e-5, msg=k)
    torch.testing.assert_close(bn1, bn0)  # running stats updated once, not again by the re-computation
    assert peak1 < 0.7 * peak0, (peak0, peak1)  # measured: gelan-t 34.2 -> 14.9 MB, yolov9-t 46.3 -> 17.9 MB


def test_bf16_autocast_and_channels_last_on_cpu(tmp_path):
    data = coco_pair(tmp_path)
    dtypes = []

    def probe(t):
        dtypes.append(
            t.train_model(torch.zeros(1, 3, 64, 64).to(memory_format=torch.channels_last))[0][0].dtype
        )

    cfg = tiny_config(data, tmp_path, epochs=1, val=False, save=False, amp="bf16", channels_last=True)
    trainer = Trainer(cfg)
    result = trainer.fit()
    assert trainer.amp_dtype is torch.bfloat16 and trainer.scaler is None
    assert trainer.model.model[0].conv.weight.is_contiguous(memory_format=torch.channels_last)
    assert all(math.isfinite(result.history[0][k]) for k in ("train/box", "train/cls", "train/dfl"))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        probe(trainer)
    assert dtypes == [torch.bfloat16]
    with pytest.raises(ValueError, match="amp=fp16 needs a CUDA device"):
        Trainer(tiny_config(data, tmp_path, amp="fp16", val=False, save=False)).fit()


def test_init_fp16_round_starts_from_fp16_rounded_weights_and_the_cpu_ema_stays_fp32(tmp_path):
    data = coco_pair(tmp_path)
    models = {}
    for flag in (False, True):
        cfg = tiny_config(data, tmp_path, name=f"r{flag}", hyp={"init_fp16_round": flag, "ema_fp16": True},
                          val=False, save=False, seed=0)  # fmt: skip
        trainer = Trainer(cfg)
        trainer.setup()
        models[flag] = {k: v.clone() for k, v in trainer.model.state_dict().items()}
        assert not trainer.ema.fp16_from_validation  # fp16 EMA only where the official has it: CUDA with fp16
    rounded, plain = models[True], models[False]
    for k, v in plain.items():
        if v.is_floating_point():
            assert rounded[k].dtype == torch.float32
            assert torch.equal(rounded[k], v.half().float()), k  # the same fresh weights, rounded once
    assert any(not torch.equal(rounded[k], v) for k, v in plain.items() if v.is_floating_point())
