"""A resumed run writes its full report whatever its fitness did (issue 57, item 5): after a stop and ``--resume``,
epochs that never beat the best one before the stop still end with metrics.json, per_class.csv and results.csv."""

from __future__ import annotations

import shutil

from tests.train.test_run_folders import finished_run  # noqa: F401 - the module's one-epoch run
from tests.train.trainer_fixtures import coco_pair, one_thread, tiny_config  # noqa: F401
from y9train.loop.trainer import Trainer

REPORT = ("metrics.json", "per_class.csv", "confusion_matrix.csv")


def test_a_resumed_run_that_never_beats_its_best_still_writes_its_report(finished_run, tmp_path):  # noqa: F811
    import json

    copy = tmp_path / "b"
    shutil.copytree(finished_run, copy)
    for name in REPORT:
        (copy / name).unlink()  # as a run stopped before its end left them: not written yet
    resumed = Trainer.from_checkpoint(copy / "weights" / "last.pt", {"epochs": 2})
    resumed.best_fitness = float("inf")  # the best before the stop: no resumed epoch can beat it
    resumed.fit()
    assert resumed.best_epoch == 0 and len(resumed.history) == 2
    assert all((copy / name).is_file() for name in REPORT), sorted(p.name for p in copy.iterdir())
    about = json.loads((copy / "metrics.json").read_text())
    assert about["validated"]["epoch"] == 2 and about["validated"]["weights"] == "weights/last.pt"
