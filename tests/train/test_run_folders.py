"""Training run folders follow y9core.files.run_dir's rule: numbered by default, a named one that holds a run is refused
unless exist_ok, one writer per folder; a resumed run writes only into the folder of the last.pt given, even when
the run was copied or moved (the folder recorded inside is history)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.train.trainer_fixtures import coco_pair, one_thread, tiny_config  # noqa: F401
from y9core.errors import ModelFileError, OutputError
from y9train.checkpoints.load import read_checkpoint
from y9train.loop.trainer import Trainer


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A finished one-epoch run (with validation): runs/a, started in its folder with a relative data.yaml path
    (the tests resume it from another working folder)."""
    import os

    import torch

    tmp_path = tmp_path_factory.mktemp("finished")
    data = coco_pair(tmp_path)
    threads, here = torch.get_num_threads(), os.getcwd()
    torch.set_num_threads(1)
    os.chdir(tmp_path)
    try:
        first = Trainer(tiny_config(data.relative_to(tmp_path), tmp_path, name="a", epochs=1)).fit()
    finally:
        os.chdir(here)
        torch.set_num_threads(threads)
    assert first.save_dir == tmp_path / "runs" / "a" and first.best is not None
    return first.save_dir


def test_plots_false_writes_the_files_but_no_pictures(finished_run):
    names = {p.name for p in finished_run.iterdir()}
    assert {"results.csv", "steps.csv", "metrics.json", "per_class.csv", "confusion_matrix.csv"} <= names
    assert not [n for n in names if n.endswith((".png", ".jpg"))], names


def test_a_copied_run_resumes_into_its_own_folder_and_the_original_stays_byte_identical(finished_run, tmp_path):
    original = finished_run
    before = _files(original)
    copy = tmp_path / "elsewhere" / "b"
    shutil.copytree(original, copy)
    notes = []
    resumed = Trainer.from_checkpoint(copy / "weights" / "last.pt", {"epochs": 2})
    resumed.reporter.info = notes.append
    resumed.reporter.warn = notes.append
    result = resumed.fit()
    assert _files(original) == before  # not one byte of the original run changed
    assert result.save_dir == copy and result.last == copy / "weights" / "last.pt"
    assert read_checkpoint(copy / "weights" / "last.pt")["train"]["epoch"] == 1  # epoch 2 written into the copy
    assert result.best is not None and result.best.parent == copy / "weights"
    assert any(f"writing into {copy} (the run was recorded in {original}, which is left alone)" in n for n in notes)
    assert not any("best.pt" in n and "missing" in n for n in notes)  # best.pt found beside the last.pt given
    config = read_checkpoint(copy / "weights" / "last.pt")["train"]["config"]
    assert config["save_dir"] == str(copy)
    assert config["data"] == str(original.parent.parent / "data" / "data.yaml")  # absolute: found from anywhere


def test_a_last_pt_outside_a_run_folder_is_refused(finished_run, tmp_path):
    loose = tmp_path / "last.pt"
    shutil.copy(finished_run / "weights" / "last.pt", loose)
    with pytest.raises(ModelFileError, match="expected RUN/weights/last.pt"):
        Trainer.from_checkpoint(loose, {"epochs": 2}).fit()


def test_runs_are_numbered_and_a_named_run_is_not_overwritten(tmp_path):
    data = coco_pair(tmp_path)
    options = dict(epochs=1, val=False, save=True)
    cfg = tiny_config(data, tmp_path, **options)
    for want in ("exp", "exp2"):
        run = Trainer(tiny_config(data, tmp_path, name=None, **options)).fit()
        assert run.save_dir == tmp_path / "runs" / want
    named = tiny_config(data, tmp_path, name="exp", **options)
    before = _files(tmp_path / "runs" / "exp")
    refused = Trainer(named)
    with pytest.raises(OutputError, match=r"runs/exp \(--name\) already holds \d+ files: .*of an earlier run.*--exist-ok"):
        refused.fit()
    assert not hasattr(refused, "model")  # refused before the set-up (model, data), not after it
    assert _files(tmp_path / "runs" / "exp") == before
    assert cfg.name == "run"  # tiny_config's own default is a named run


HOLD = """
import sys, time
from y9core.files.run_dir import RunLock
RunLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(60)
"""


def test_a_second_writer_of_one_run_folder_is_refused(tmp_path):
    data = coco_pair(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / "runs" / "same")], stdout=subprocess.PIPE,
                            text=True, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "held"
        cfg = tiny_config(data, tmp_path, name="same", exist_ok=True, epochs=1, val=False)
        with pytest.raises(OutputError, match=f"runs/same is being written by another y9 process \\(pid {proc.pid} "):
            Trainer(cfg).fit()
        assert sorted(p.name for p in (tmp_path / "runs" / "same").iterdir()) == [".y9.lock"]
    finally:
        proc.kill()
        proc.wait()
