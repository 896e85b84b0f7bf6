"""A run's account of its wall clock (``timing.json``, ``y9train.timing.run_timing``): the phases add up to the process's age,
the record of a whole ``y9 train`` process reaches its exit as measured from outside (test_trainer.py's command-line
run calls ``check_timing_record``), and ``fit`` leaves no loader worker behind to hold the exit (issue 48: the
interpreter's exit waited on persistent workers with pinned memory on a GPU machine)."""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path

import pytest

from tests.train.trainer_fixtures import coco_pair, one_thread, tiny_config  # noqa: F401
from y9train.loop.trainer import Trainer
from y9train.timing.run_timing import END_PHASES, EPOCH_PHASES, START_KEYS, RunTiming
from y9train.timing.startup import StartupClock


def check_timing_record(run: Path, wall: float, *, epochs: int) -> dict:
    """The checks of ``run/timing.json`` written by a whole command-line process that took ``wall`` seconds,
    measured by its parent from before its start to after its exit."""
    rec = json.loads((run / "timing.json").read_text())
    assert [row["epoch"] for row in rec["epochs"]] == list(range(1, epochs + 1))
    assert set(rec["start"]) == {*START_KEYS, "run_folder"} and set(rec["end"]) == {*END_PHASES, "return"}
    parts = (sum(rec["start"].values()) + sum(row[k] for row in rec["epochs"] for k in EPOCH_PHASES)
             + sum(rec["end"].values()) + rec["after_fit"])  # fmt: skip
    assert all(v >= 0 for v in [*rec["start"].values(), *rec["end"].values(), rec["after_fit"]])
    assert rec["totals"]["accounted"] == pytest.approx(parts, abs=0.01)
    # a chain of laps: at the last write (the interpreter's exit begun), the parts are the process's whole age
    assert abs(rec["totals"]["unaccounted"]) < 0.05
    assert rec["exit_started"] == pytest.approx(rec["totals"]["process_age"], abs=0.05)
    # what no record from inside can hold is the interpreter's teardown after it: 0.3-3.1 s on the 2-core box by
    # load (torch's objects); a loader left to the exit added about 5 s a worker on a GPU machine
    assert 0 <= wall - rec["totals"]["accounted"] < 5.0, (wall, rec["totals"])
    assert rec["epoch_totals"]["train"] == pytest.approx(sum(r["train"] for r in rec["epochs"]), abs=0.01)
    return rec


def test_laps_chain_from_the_startup_clock_and_unknown_phases_are_refused():
    clock = StartupClock(process_seconds=1.5)
    time.sleep(0.01)
    clock.lap("model")
    timing = RunTiming(clock)
    time.sleep(0.02)
    timing.setup_done()  # from the clock's last lap, not from when timing was made
    assert timing.run_folder >= 0.02
    timing.start_epoch(0)
    time.sleep(0.01)
    assert timing.lap("train") >= 0.01
    timing.lap("validate")
    timing.start_epoch(1)  # what ran since the last lap of epoch 1 is epoch 1's "end"
    timing.lap("train")
    timing.lap("loaders")
    timing.fit_returned()
    rec = timing.to_dict()
    assert [r["epoch"] for r in rec["epochs"]] == [1, 2]
    assert rec["start"]["process"] == 1.5 and rec["start"]["model"] >= 0.01
    assert set(rec["end"]) == {"loaders", "return"}
    total = 1.5 + clock.phases["model"] + timing.run_folder
    total += sum(r[k] for r in timing.epochs for k in EPOCH_PHASES) + sum(timing.end.values())
    assert timing.total() == pytest.approx(total, abs=1e-9)
    with pytest.raises(ValueError, match="timing phase 'warmup' is unknown"):
        timing.lap("warmup")
    assert "2 epochs" in timing.summary() and "loaders" not in timing.summary()  # under 0.05 s: not listed


def test_fit_shuts_its_loader_workers_down(tmp_path):
    data = coco_pair(tmp_path)  # 3 train images, batch 1: three batches, two persistent workers
    cfg = tiny_config(data, tmp_path, epochs=2, batch=1, workers=2)
    trainer = Trainer(cfg)
    before = {p.pid for p in multiprocessing.active_children()}  # another test's, in this test process

    def ours() -> list:
        return [p for p in multiprocessing.active_children() if p.pid not in before]

    seen = []
    trainer.add_callback("on_epoch_end", lambda t: seen.append(len(ours())))
    trainer.fit()
    assert seen[0] >= 2  # the workers lived through the epochs (persistent) ...
    assert ours() == []  # ... and are gone when fit returns: nothing holds the exit
    rec = json.loads((trainer.save_dir / "timing.json").read_text())
    assert [r["epoch"] for r in rec["epochs"]] == [1, 2] and "loaders" in rec["end"]
    assert rec["after_fit"] is None  # a library call: no exit to record
