"""Checkpoints written in the background (``TrainConfig.async_save``, ``y9train.checkpoints.writer``): the same files
as a synchronous run, from a snapshot the next epoch cannot change; a failed write ends the run with the same error
and leaves no temporary file; ``fit`` waits for a pending write before it returns or re-raises.
"""

from __future__ import annotations

import errno
import os
import threading
import time

import pytest
import torch

import y9train.loop.trainer as trainer_module
from tests.train.trainer_fixtures import TIMING_KEYS, coco_pair, one_thread, tiny_config  # noqa: F401
from y9train.checkpoints.load import read_checkpoint
from y9train.checkpoints.writer import CheckpointWriter
from y9train.loop.state import snapshot_run, write_run
from y9train.loop.trainer import Trainer
from y9train.reports.reporting import read_csv

#: entries that name the run's own folder or the option under test (they differ between the two runs)
_RUN_KEYS = {"project", "save_dir", "async_save"}


def _assert_same(a, b, where: str = "") -> None:
    """Nested payloads equal: tensors exactly (dtype, shape, bytes), numbers and strings by value; wall-clock
    columns and the run's folder / async_save option skipped; nan equals nan."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert isinstance(b, dict), where
        keys = set(a) - TIMING_KEYS - _RUN_KEYS
        assert keys == set(b) - TIMING_KEYS - _RUN_KEYS, where
        for k in keys:
            _assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and a != a:
        assert isinstance(b, float) and b != b, where
    else:
        assert a == b, where


def test_async_and_sync_runs_write_the_same_checkpoints(tmp_path):
    data = coco_pair(tmp_path)
    results = {}
    for async_save in (False, True):
        cfg = tiny_config(data, tmp_path, name="run", project=str(tmp_path / f"runs-{async_save}"), epochs=2,
                          async_save=async_save, hyp={"close_mosaic": 1})  # fmt: skip
        results[async_save] = Trainer(cfg).fit()
    sync, bg = results[False], results[True]
    assert bg.last is not None and bg.best is not None and bg.epochs_run == 2
    read = {}
    for attr in ("last", "best"):
        a, b = read[attr] = read_checkpoint(getattr(sync, attr)), read_checkpoint(getattr(bg, attr))
        assert a["digest"] == b["digest"]  # the sha256 of every tensor, in payload order
        _assert_same(a, b, attr)
    assert read["last"][1]["train"]["epoch"] == 1  # bg.last, as read above
    rows = [[{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in read_csv(res.save_dir / "results.csv")]
            for res in (sync, bg)]  # fmt: skip
    assert len(rows[1]) == 2
    _assert_same(rows[0], rows[1], "results.csv")


def test_the_written_file_holds_the_snapshot_not_the_later_state(tmp_path):
    """The snapshot is a copy: the model, EMA and optimiser change while the write is held back, the file does not."""
    trainer = Trainer(tiny_config(coco_pair(tmp_path), tmp_path, name="snap"))
    trainer.setup()

    def step(value: float) -> None:
        for p in trainer.params:
            p.grad = torch.full_like(p, value)
        trainer.optimizer.step()
        trainer.ema.update(trainer.model)

    step(1.0)  # the optimiser has moments now
    snap = snapshot_run(trainer, 0, {"epoch": 1}, improved=True)
    raw = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    ema = {k: v.clone() for k, v in trainer.ema.module.state_dict().items()}
    moments = {
        i: {k: v.clone() for k, v in s.items()} for i, s in trainer.optimizer.state_dict()["state"].items()
    }

    started, release = threading.Event(), threading.Event()

    def held_back(s):
        started.set()
        assert release.wait(60)
        write_run(s)

    writer = CheckpointWriter()
    writer.submit(held_back, snap)
    assert started.wait(60) and writer.busy
    with torch.no_grad():
        for p in trainer.model.parameters():
            p.add_(0.5)
    step(-3.0)  # in place: parameters, exp_avg, exp_avg_sq, step counters, EMA
    release.set()
    writer.close()

    payload = read_checkpoint(trainer.save_dir / "weights" / "last.pt")
    changed = trainer.model.state_dict()
    assert any(not torch.equal(raw[k], changed[k]) for k in raw)  # the trainer did move on
    for k in raw:
        assert torch.equal(payload["train"]["model"][k], raw[k]), k
        assert torch.equal(payload["model"][k], ema[k]), k
    saved = payload["train"]["optimizer"]["state"]
    assert saved.keys() == moments.keys()
    for i in moments:
        for k in moments[i]:
            assert torch.equal(saved[i][k], moments[i][k]), (i, k)
    best = read_checkpoint(trainer.save_dir / "weights" / "best.pt")
    assert all(torch.equal(best["model"][k], ema[k]) for k in ema)


def _full_disk_on(target: str, monkeypatch) -> None:
    """``os.replace`` onto ``target`` fails with ENOSPC (the temporary file was written; the rename is refused)."""
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if os.path.basename(dst) == target:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)


def test_a_failed_background_write_ends_the_run_with_the_same_error(tmp_path, monkeypatch):
    data = coco_pair(tmp_path)
    _full_disk_on("last.pt", monkeypatch)
    errors = {}
    for async_save in (False, True):
        cfg = tiny_config(data, tmp_path, name="full", project=str(tmp_path / f"runs-{async_save}"), epochs=2,
                          async_save=async_save, val=False)  # fmt: skip
        with pytest.raises(OSError) as info:
            Trainer(cfg).fit()
        errors[async_save] = info.value
        weights = tmp_path / f"runs-{async_save}" / "full" / "weights"
        assert sorted(p.name for p in weights.iterdir()) == []  # no temporary file, no last.pt
    sync, bg = errors[False], errors[True]
    assert (bg.errno, bg.strerror) == (sync.errno, sync.strerror) == (errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert bg.filename == sync.filename.replace("runs-False", "runs-True")
    assert bg.filename.endswith(os.path.join("full", "weights", "last.pt"))


def test_fit_waits_for_a_pending_write_when_training_is_interrupted(tmp_path, monkeypatch):
    """KeyboardInterrupt while epoch 1's files are still being written: they are on disk when fit re-raises."""
    real = trainer_module.write_run

    def slow_write(snap):
        time.sleep(1.0)
        real(snap)

    monkeypatch.setattr(trainer_module, "write_run", slow_write)

    def interrupt(trainer):
        if trainer.epoch == 1:
            raise KeyboardInterrupt

    cfg = tiny_config(coco_pair(tmp_path), tmp_path, name="cut", epochs=2, val=False)
    trainer = Trainer(cfg, callbacks={"on_epoch_start": [interrupt]})
    with pytest.raises(KeyboardInterrupt):
        trainer.fit()
    state = read_checkpoint(tmp_path / "runs" / "cut" / "weights" / "last.pt")["train"]
    assert state["epoch"] == 0 and len(state["history"]) == 1
    assert [r["epoch"] for r in read_csv(tmp_path / "runs" / "cut" / "results.csv")] == [1]
    assert not trainer.writer.busy


def test_a_training_error_is_not_replaced_by_a_failed_background_write(tmp_path, monkeypatch):
    """Epoch 1's write fails (ENOSPC) while epoch 2 raises: the training error propagates, the write's is reported."""
    real_replace = os.replace

    def full_disk(src, dst, *a, **k):
        if str(dst).endswith("last.pt"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        return real_replace(src, dst, *a, **k)

    monkeypatch.setattr(os, "replace", full_disk)
    warned: list[str] = []

    def boom(trainer):
        if trainer.epoch == 1:
            trainer.reporter.warn = warned.append  # what the trainer reports from here on
            raise RuntimeError("training failed")

    cfg = tiny_config(coco_pair(tmp_path), tmp_path, name="both", epochs=2, val=False)
    trainer = Trainer(cfg, callbacks={"on_epoch_start": [boom]})
    with pytest.raises(RuntimeError, match="training failed"):
        trainer.fit()
    assert len(warned) == 1 and "background checkpoint write failed too: OSError" in warned[0]
    assert "No space left on device" in warned[0] and not trainer.writer.busy
