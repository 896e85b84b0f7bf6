"""The trainer end to end on CPU: the ``y9 train`` command on coco8 writes last/best checkpoints; an interrupted run
resumes to exactly the result of an uninterrupted one; ``y9 train --resume`` continues a finished run.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time

import cv2
import pytest
import torch
from typer.testing import CliRunner

from tests.conftest import REPO, shared_path
from tests.train.test_run_timing import check_timing_record
from tests.train.test_startup import check_startup_record
from tests.train.trainer_fixtures import coco_pair, one_thread, tiny_config, without_timing  # noqa: F401
from y9train.checkpoint import load_checkpoint
from y9train.checkpoints.load import read_checkpoint
from y9train.loop.state import find_last_checkpoint
from y9train.loop.trainer import Trainer
from y9train.reports.reporting import read_csv


def test_y9_train_cli_on_coco8_writes_last_and_best_then_resumes(tmp_path):
    data = shared_path("datasets", "coco8", "data.yaml")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "y9cli", "train", "--data", str(data), "--model", "gelan-t",
           "--imgsz", "160", "--epochs", "2", "--batch", "4", "--project", str(tmp_path), "--name", "run"]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    check_timing_record(run, wall, epochs=2)  # every second of the process, to its exit (test_run_timing.py)
    last, best = run / "weights" / "last.pt", run / "weights" / "best.pt"
    state = read_checkpoint(last)["train"]  # torch.load(weights_only=True) reads the whole training state
    assert state["epoch"] == 1 and len(state["history"]) == 2
    assert state["step"] == 2  # coco8: 4 images = one batch per epoch; the partial accumulation is flushed
    assert isinstance(state["rng"]["numpy"]["keys"], torch.Tensor)
    model = load_checkpoint(best)
    assert model.name == "gelan-t" and model.nc == 80
    assert read_checkpoint(best).get("train") is None  # best.pt holds the EMA weights only
    rows = read_csv(run / "results.csv")
    assert [r["epoch"] for r in rows] == [1, 2]
    assert all(math.isfinite(r["train/box"]) and math.isfinite(r["metrics/map50_95"]) for r in rows)
    steps = read_csv(run / "steps.csv")
    assert [s["iteration"] for s in steps] == [0, 1]
    assert all(math.isfinite(s["grad_norm"]) and s["grad_norm"] > 0 for s in steps)
    assert (run / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the final validation's files: the best epoch's (best.pt), named in metrics.json; the first batches and labels
    report = json.loads((run / "metrics.json").read_text())
    best_epoch = int(max(rows, key=lambda r: r["metrics/fitness"])["epoch"])
    assert report["validated"]["epoch"] == best_epoch and report["validated"]["weights"] == "weights/best.pt"
    assert report["metrics"]["map50_95"] == pytest.approx(rows[best_epoch - 1]["metrics/map50_95"], abs=1e-6)
    assert len(report["per_class"]) == 80 and report["evaluator"].startswith("faster-coco-eval")
    for name in ("per_class.csv", "curves.json", "confusion_matrix.csv", "PR_curve.png", "F1_curve.png",
                 "confusion_matrix.png", "labels.jpg", "train_batch0.jpg", "train_batch1.jpg"):  # fmt: skip
        assert (run / name).stat().st_size > 0, name
    assert cv2.imread(str(run / "train_batch0.jpg")).shape == (320, 320, 3)  # 4 images of 160 px: 2 x 2 tiles
    assert "2/2 epochs, 2 optimiser steps" in proc.stdout
    assert "\x1b[" not in proc.stdout  # not a terminal: plain lines, no progress bar
    assert "epoch 2/2 done" in proc.stdout

    # --resume with a run folder continues it: one more epoch, the finished epochs unchanged (no pictures this time:
    # those of the first run are checked above)
    from y9cli.app import app

    res = CliRunner().invoke(app, ["train", "--resume", str(run), "--workers", "0", "epochs=3", "plots=false"])
    assert res.exit_code == 0, res.output
    state = read_checkpoint(last)["train"]
    assert state["epoch"] == 2 and state["step"] == 3
    again = read_csv(run / "results.csv")
    assert without_timing(again[:2]) == without_timing(rows) and again[2]["epoch"] == 3


def _run_config(tmp_path, name):
    data = coco_pair(tmp_path)
    return tiny_config(data, tmp_path, name=name, epochs=3, hyp={"close_mosaic": 1})


def test_interrupted_run_resumes_to_the_uninterrupted_result(tmp_path):
    full = Trainer(_run_config(tmp_path, "full")).fit()
    assert full.epochs_run == 3 and full.steps == 6  # 3 train images, batch 2: 2 batches (= steps) per epoch
    facts = check_startup_record(full)["facts"]  # the run's own record of its fixed costs (test_startup.py)
    assert facts["train_images"] == 3 and facts["val_images"] == 1

    def interrupt(trainer):
        if trainer.epoch == 1 and trainer.batch_index == 0:
            raise KeyboardInterrupt

    cut = Trainer(_run_config(tmp_path, "cut"), callbacks={"on_step_end": [interrupt]})
    with pytest.raises(KeyboardInterrupt):
        cut.fit()
    last = tmp_path / "runs" / "cut" / "weights" / "last.pt"
    saved = read_checkpoint(last)["train"]
    assert saved["epoch"] == 0 and saved["step"] == 2 and len(saved["history"]) == 1  # epoch 1 kept

    resumed = Trainer.from_checkpoint(last).fit()
    assert resumed.epochs_run == 3 and resumed.steps == 6
    assert without_timing(resumed.history) == without_timing(full.history)
    a, b = read_checkpoint(full.last), read_checkpoint(resumed.last)
    for key in a["model"]:  # EMA weights, raw weights: identical on CPU
        assert torch.equal(a["model"][key], b["model"][key]), key
        assert torch.equal(a["train"]["model"][key], b["train"]["model"][key]), key
    opt_a, opt_b = a["train"]["optimizer"]["state"], b["train"]["optimizer"]["state"]
    assert opt_a.keys() == opt_b.keys()
    assert all(torch.equal(opt_a[k][n], opt_b[k][n]) for k in opt_a for n in opt_a[k])  # AdamW (auto) moments
    assert a["train"]["ema_updates"] == b["train"]["ema_updates"] == 6
    steps_full = read_csv(full.save_dir / "steps.csv")
    steps_resumed = read_csv(resumed.save_dir / "steps.csv")
    assert steps_full == steps_resumed  # the interrupted epoch's rows were dropped, then rewritten


def test_find_last_checkpoint_picks_the_newest_run(tmp_path):
    for i, name in enumerate(["exp", "exp2"]):
        p = tmp_path / name / "weights" / "last.pt"
        p.parent.mkdir(parents=True)
        p.write_bytes(b"x")
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
    assert find_last_checkpoint(tmp_path) == tmp_path / "exp2" / "weights" / "last.pt"
    with pytest.raises(FileNotFoundError, match="no weights/last.pt under"):
        find_last_checkpoint(tmp_path / "exp" / "nothing")
