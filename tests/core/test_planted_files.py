"""Files y9 keeps for itself (locks, run-folder logs) are never a door into the user's files (issue 57, item 1):
a symbolic link, hard link, FIFO or foreign file planted under their names is refused in one sentence naming it,
its target is left byte for byte, and nothing of it is printed."""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import pytest

from tests.conftest import TEST_DATA, run_y9
from y9core.errors import OutputError
from y9core.files.append_file import AppendFile
from y9core.files.output_file import claim_output_file, lock_path
from y9core.files.run_dir import LOCK_NAME, RunLock

SECRET = "chapter 1: my thesis, the only copy\n"
IMAGE = sorted(TEST_DATA.glob("*.jpg"))[0]


@pytest.fixture
def thesis(tmp_path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    path = home / "thesis.txt"
    path.write_text(SECRET)
    return path


def _planted(kind: str, at: Path, target: Path) -> None:
    if kind == "symlink":
        at.symlink_to(target)
    elif kind == "hardlink":
        os.link(target, at)
    else:
        os.mkfifo(at)


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo"])
def test_a_planted_run_folder_lock_is_refused_and_its_target_kept(tmp_path, thesis, kind):
    run = tmp_path / "run"
    run.mkdir()
    _planted(kind, run / LOCK_NAME, thesis)
    warned: list[str] = []
    with pytest.raises(OutputError) as err:
        RunLock(run, warn=warned.append).acquire()
    assert str(run / LOCK_NAME) in str(err.value) and "expected y9's own lock file" in str(err.value)
    assert SECRET.strip() not in str(err.value) and not warned
    assert thesis.read_text() == SECRET


def test_a_planted_output_file_lock_is_refused_and_nothing_of_it_printed(tmp_path, thesis):
    out = tmp_path / "x" / "lk.onnx"
    out.parent.mkdir()
    lock_path(out).symlink_to(thesis)
    with pytest.raises(OutputError, match="symbolic link"), claim_output_file(out, what="output ONNX file"):
        pass
    assert thesis.read_text() == SECRET and lock_path(out).is_symlink() and not out.exists()


def test_a_foreign_plain_file_under_a_lock_name_is_neither_quoted_nor_replaced(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / LOCK_NAME).write_text(SECRET)
    warned: list[str] = []
    with pytest.raises(OutputError, match="not a y9 lock") as err:
        RunLock(run, warn=warned.append).acquire()
    assert SECRET.strip() not in str(err.value) and not warned
    assert (run / LOCK_NAME).read_text() == SECRET


def test_a_lock_left_by_a_dead_y9_process_is_still_taken_over(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / LOCK_NAME).write_text("pid 999999 on host since 2026-01-01 00:00:00 (y9 train)\n")
    warned: list[str] = []
    with RunLock(run, warn=warned.append):
        assert (run / LOCK_NAME).read_text().startswith(f"pid {os.getpid()} ")
    assert len(warned) == 1 and "took over" in warned[0] and "pid 999999" in warned[0]


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo"])
@pytest.mark.parametrize("fresh", [True, False])
def test_a_planted_log_is_refused_before_anything_is_written(tmp_path, thesis, kind, fresh):
    log = tmp_path / "predictions.jsonl"
    _planted(kind, log, thesis)
    with pytest.raises(OutputError, match="expected y9's own log"):
        AppendFile(log, fresh=fresh)
    assert thesis.read_text() == SECRET


def test_export_beside_a_planted_lock_link_exits_2_and_keeps_the_target(tmp_path, thesis, capsys):
    from y9train.checkpoints.load import save_checkpoint
    from y9train.models import build_model

    pt = save_checkpoint(build_model("gelan-t", nc=2).eval(), tmp_path / "m.pt", imgsz=64)
    out = tmp_path / "x" / "lk.onnx"
    out.parent.mkdir()
    lock_path(out).symlink_to(thesis)
    code = run_y9(["export", pt, "-o", out, "--imgsz", "64", "--no-check", "--no-simplify"])
    said = capsys.readouterr()
    assert code == 2 and f"error: {lock_path(out)} is a symbolic link" in said.err
    assert SECRET.strip() not in said.out + said.err
    assert thesis.read_text() == SECRET and not out.exists()


def test_predict_with_exist_ok_refuses_a_planted_predictions_log(tmp_path, thesis, capsys):
    from tests.deploy.runtime_support import export_tiny_onnx

    tiny = export_tiny_onnx(tmp_path / "tiny.onnx")
    args = ["predict", IMAGE, "-m", tiny, "--project", tmp_path, "--name", "line1", "--device", "cpu"]
    assert run_y9(args) == 0
    log = tmp_path / "line1" / "predictions.jsonl"
    log.unlink()
    log.symlink_to(thesis)
    capsys.readouterr()
    assert run_y9([*args, "--exist-ok"]) == 2
    err = capsys.readouterr().err
    assert f"error: {log} is a symbolic link" in err and SECRET.strip() not in err
    assert thesis.read_text() == SECRET


def test_inspect_with_exist_ok_refuses_a_planted_audit_log(tmp_path, thesis, capsys):
    from tests.deploy.fixed_onnx import crafted_frame, fixed_boxes_onnx
    from tests.deploy.test_inspection import BOXES, NAMES, RULES

    fixed_boxes_onnx(tmp_path / "fixed.onnx", BOXES, NAMES)
    (tmp_path / "rules.yaml").write_text(RULES)
    part = tmp_path / "part.png"
    cv2.imwrite(str(part), crafted_frame({(0, 0): 0.9}))
    args = ["inspect", part, "--model", tmp_path / "fixed.onnx", "--rules", tmp_path / "rules.yaml",
            "--project", tmp_path, "--name", "audit", "--device", "cpu"]  # fmt: skip
    assert run_y9(args) in (0, 1)
    log = tmp_path / "audit" / "audit.jsonl"
    log.unlink()
    log.symlink_to(thesis)
    capsys.readouterr()
    assert run_y9([*args, "--exist-ok"]) == 2
    err = capsys.readouterr().err
    assert f"{log} is a symbolic link" in err and SECRET.strip() not in err
    assert thesis.read_text() == SECRET


def test_results_csv_is_never_written_through_a_planted_temporary(tmp_path, thesis):
    from y9train.reports.reporting import read_csv, write_results_csv

    (tmp_path / "results.csv.tmp").symlink_to(thesis)  # the temporary name of earlier versions
    write_results_csv(tmp_path / "results.csv", [{"epoch": 1, "loss": 0.5}])
    assert thesis.read_text() == SECRET
    assert read_csv(tmp_path / "results.csv") == [{"epoch": 1.0, "loss": 0.5}]


def test_a_label_file_planted_as_a_link_is_replaced_not_followed(tmp_path, thesis):
    from tests.deploy.runtime_support import export_tiny_onnx

    tiny = export_tiny_onnx(tmp_path / "tiny.onnx")
    args = ["predict", IMAGE, "-m", tiny, "--project", tmp_path, "--name", "o", "--save-txt", "--device", "cpu"]
    assert run_y9(args) == 0
    (label,) = (tmp_path / "o" / "labels").iterdir()
    label.unlink()
    label.symlink_to(thesis)
    assert run_y9([*args, "--exist-ok"]) == 0
    assert thesis.read_text() == SECRET
