"""The trainer's own record of its fixed costs (``startup.json``, ``y9train.timing.startup``): every phase from process start
to the first step, the first epochs' figures, the label cache seen as hit / miss by the run, the optimiser's imports
done in a thread."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

from tests.train.trainer_fixtures import coco_pair
from y9train.data import load_data_yaml
from y9train.loop.hooks import TrainHooks
from y9train.loop.result import TrainResult
from y9train.optimisation.hyp import TrainConfig
from y9train.setup.data import build_run_data
from y9train.timing.startup import SETUP_PHASES, BackgroundImports, StartupClock


def check_startup_record(result: TrainResult, *, label_cache: str = "miss") -> dict:
    """The checks of a run's ``startup.json`` (a run of at least two epochs with validation; test_trainer.py's
    uninterrupted run calls it, so that no run is trained for it alone)."""
    rec = json.loads((Path(result.save_dir) / "startup.json").read_text())
    phases, totals = rec["phases"], rec["totals"]
    assert set(SETUP_PHASES) | {"first_batch", "first_step", "first_epoch", "second_epoch"} <= set(phases)
    assert all(v >= 0 for v in phases.values())
    # the laps add up: everything before the first step, then the step itself
    before = sum(phases.get(k, 0.0) for k in ("process", *SETUP_PHASES, "first_batch"))
    assert totals["to_first_step"] == pytest.approx(before, abs=1e-3)
    assert totals["through_first_step"] == pytest.approx(before + phases["first_step"], abs=1e-3)
    # the first epoch's time (results.csv) holds its first batch wait and its first step
    assert phases["first_epoch"] == pytest.approx(result.history[0]["time_s"], abs=1e-3)
    assert phases["first_epoch"] >= phases["first_batch"] + phases["first_step"]
    assert phases["second_epoch"] == pytest.approx(result.history[1]["time_s"], abs=1e-3)
    assert phases["first_validation"] == pytest.approx(result.history[0]["val_s"], abs=1e-3)
    assert rec["facts"]["train_label_cache"] == label_cache and rec["facts"]["image_cache"] == "none"
    return rec


def test_the_runs_label_cache_is_hit_then_invalidated_by_a_changed_label_file(tmp_path, monkeypatch):
    monkeypatch.delenv("Y9_CACHE_DIR", raising=False)
    data = coco_pair(tmp_path)
    cfg = TrainConfig(data=str(data), imgsz=160, batch=2, workers=0)

    def states() -> tuple[str, str]:
        clock = StartupClock(process_seconds=None)
        build_run_data(cfg, load_data_yaml(data), TrainHooks(), workers=0, report_skip=print, clock=clock)
        assert {"train_labels", "train_images", "val_labels", "val_images", "loaders"} <= set(clock.phases)
        return clock.facts["train_label_cache"], clock.facts["val_label_cache"]

    assert states() == ("miss", "miss")
    assert states() == ("hit", "hit")
    label = tmp_path / "data" / "labels" / "train" / "a.txt"
    label.write_text(label.read_text() + "0 0.5 0.5 0.1 0.1\n")  # one more box: size and mtime change
    assert states() == ("miss", "hit")
    assert states() == ("hit", "hit")


def test_background_imports_import_in_their_thread_and_join(tmp_path, monkeypatch):
    (tmp_path / "y9_probe_module.py").write_text("import threading\nTHREAD = threading.current_thread().name\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "y9_probe_module", raising=False)
    imports = BackgroundImports(("y9_probe_module", "y9_no_such_module")).start()
    imports.join()  # a module that fails is left to fail where the run imports it
    assert sys.modules["y9_probe_module"].THREAD == "y9-imports" != threading.current_thread().name
    BackgroundImports(("y9_probe_module",)).join()  # never started: nothing to wait for


def test_clock_laps_accumulate_and_split():
    clock = StartupClock(process_seconds=2.0)
    clock.lap("imports")
    clock.lap("imports")
    clock.lap_split({"train_labels": 0.5, "train_images": 0.25})
    assert clock.phases["process"] == 2.0 and clock.phases["train_labels"] == 0.5
    assert clock.phases["train_images"] >= 0.25 and "_split" not in clock.phases
    assert clock.epoch(0, {"time_s": 4.0, "val_s": 1.0}) and clock.epoch(1, {"time_s": 2.0})
    assert not clock.epoch(2, {"time_s": 2.0})
    assert clock.to_dict()["totals"]["first_over_second_epoch"] == 2.0
