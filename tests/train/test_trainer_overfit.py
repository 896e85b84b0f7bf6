"""Overfitting: gelan-t trained on four NEU steel-defect images (no augmentation) must detect them far better than
before training, while the loss falls. Measured on the 2-core dev box, seeds 0, 1, 2: before training mAP50 0.116,
mAP50-95 0.103 (the untrained model with prior head biases: one image is a single whole-frame box); after 16 epochs
mAP50 0.667 for every seed and mAP50-95 0.42-0.67; the total training loss falls from ~10.4 to ~1.1 (epoch 1 -> 16).
Again with torch 2.13.0 (2026-12-05): seed 0 mAP50 0.584 / mAP50-95 0.459, seed 1 0.667 / 0.500, loss ratio
0.11-0.13: the bounds below (0.45, +0.3, +0.15, 0.35) hold with room. Cut to 12 epochs (2026-12-05, session 23,
for the suite's time): seed 0 mAP50 0.667 / mAP50-95 0.583, seed 1 0.521 / 0.489, loss ratio 0.13-0.18; about 42 s
with one thread, two runs side by side. Back to 16 epochs (2026-12-06, session 26): at 12 this dev box's CPU gave
mAP50 0.333 (on 725e1fb too: a CPU's kernels change the trajectory of so short a run), under the 0.45 bound; at 16 it
passes there (67 s alone, one thread). At 96 px instead of 128 (2026-12-06, issue 54, for the suite's time: the
cost per step is mostly the network's convolutions and the optimiser): 12 epochs chosen on seeds 0 and 1 (mAP50 0.667
/ 0.667, mAP50-95 0.533 / 0.667), then seeds 2, 3, 4, not used to choose: mAP50 0.667 each, mAP50-95 0.634 / 0.634 /
0.534, loss ratio 0.11-0.13, before training 0.115 / 0.102; 43-46 s user CPU per run (loadavg 3-7) against 74 s at
128 px and 16 epochs (seed 0, loadavg 7-10), the test's body run as a script with a seed. With the class ids of the
training samples shifted by one (a trainer taught the wrong classes), this test fails (checked once). At 64 px, 6
epochs of 32 batches (2026-12-07, issue 54e, for the suite's time; the same 192 optimiser steps, half the epochs'
validations and checkpoint writes): fewer steps do not learn enough (12 epochs of 8 batches: mAP50 0.252 at 96 px,
0.278 at 64 px; with lr0 0.01, 0.147), the image size hardly changes the cost (64 px, 12 epochs of 16 batches: 46.4 s
user CPU). Chosen on seeds 0 and 1 (mAP50 0.667 / 0.667, mAP50-95 0.650 / 0.667), then seeds 2 and 3, not used to
choose: mAP50 0.667 / 0.667, mAP50-95 0.650 / 0.633, loss ratio 0.13-0.15, before training 0.112 / 0.101; 38-39 s
user CPU a run (loadavg 5-9) against 46-49 s for 96 px and 12 epochs of 16 batches. It still fails on a broken
trainer: lr0 1e-9 (lr0 0 is refused) mAP50 0.067, loss ratio 0.84; box and dfl gains 0 (nothing learns where
boxes are) mAP50 0.112, no gain. The box (IoU) gain alone at 0 passes (mAP50 0.667; at 96 px and 12 epochs of 16
batches too: 0.667 / 0.484): the DFL term alone learns the boxes here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import shared_path
from tests.train.trainer_fixtures import one_thread  # noqa: F401
from y9train.loop.trainer import Trainer
from y9train.optimisation.hyp import Hyp, TrainConfig
from y9train.reports.validate import run_validation

pytestmark = pytest.mark.slow

IMAGES = ("crazing_1", "crazing_5", "inclusion_2", "patches_15")  # 1 + 2 + 3 + 2 boxes, 3 classes


def test_gelan_t_overfits_four_neu_images(tmp_path):
    root = shared_path("datasets", "neu-det-mini")
    files = [str(root / "images" / "train" / f"{name}.jpg") for name in IMAGES]
    (tmp_path / "train.txt").write_text("\n".join(files * 32) + "\n")  # 32 batches of 4 per epoch
    (tmp_path / "val.txt").write_text("\n".join(files) + "\n")
    names = yaml.safe_load((root / "data.yaml").read_text())["names"]
    data = tmp_path / "data.yaml"
    data.write_text(yaml.safe_dump({"path": ".", "train": "train.txt", "val": "val.txt", "names": names}))
    no_aug = dict(
        mosaic=0.0, mixup=0.0, scale=0.0, translate=0.0, hsv_h=0.0, hsv_s=0.0, hsv_v=0.0, fliplr=0.0
    )
    hyp = Hyp(optimizer="adamw", lr0=0.003, lrf=0.01, schedule="cosine", warmup_epochs=1.0, warmup_min_iters=0,
              nbs=4, ema_decay=0.9, ema_tau=10.0, close_mosaic=0, **no_aug)  # fmt: skip
    cfg = TrainConfig(data=str(data), model="gelan-t", imgsz=64, epochs=6, batch=4, workers=0,
                      project=str(tmp_path / "runs"), verbose=False, plots=False, hyp=hyp)  # fmt: skip
    before = {}

    def baseline(trainer):
        res = run_validation(trainer.ema.module, trainer.val_loader, device=trainer.device, nc=6)
        before.update(res.metrics)

    result = Trainer(cfg, callbacks={"on_train_start": [baseline]}).fit()
    first, last = result.history[0], result.history[-1]

    def total(r):
        return r["train/box"] + r["train/cls"] + r["train/dfl"]

    assert total(last) < 0.35 * total(first), (total(first), total(last))
    assert before["map50"] < 0.2
    assert last["metrics/map50"] >= 0.45 and last["metrics/map50"] >= before["map50"] + 0.3, (before, last)
    assert last["metrics/map50_95"] > before["map50_95"] + 0.15
    assert Path(result.best).is_file() and result.best_fitness >= last["metrics/fitness"] - 1e-9
