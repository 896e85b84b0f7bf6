"""y9core.files.run_dir: numbered run folders taken atomically, explicit folders refused over earlier results or inputs,
single output files refused over inputs, and one writer per folder (real processes where concurrency is the point)."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO
from y9core.errors import OutputError
from y9core.files.run_dir import (
    LOCK_NAME,
    RunLock,
    check_output_file,
    earlier_files,
    next_run_dir,
    resolve_output_dir,
)


def test_next_run_dir_numbers_like_the_yolo_tools(tmp_path):
    made = [next_run_dir(tmp_path / "runs", "predict") for _ in range(3)]
    assert [p.name for p in made] == ["predict", "predict2", "predict3"]
    assert all(p.is_dir() and not any(p.iterdir()) for p in made)
    made[1].rmdir()  # a gap is filled first
    assert next_run_dir(tmp_path / "runs", "predict").name == "predict2"


def _take(args):
    root, barrier_file = args
    while not os.path.exists(barrier_file):  # start together
        time.sleep(0.001)
    return str(next_run_dir(root, "val"))


def test_processes_started_together_never_share_a_run_dir(tmp_path):
    go = tmp_path / "go"
    with mp.get_context("fork").Pool(6) as pool:
        pending = pool.map_async(_take, [(str(tmp_path / "runs"), str(go))] * 12)
        time.sleep(0.3)
        go.write_text("")
        got = pending.get(timeout=60)
    assert len(set(got)) == 12
    assert sorted(os.path.basename(p) for p in got) == sorted(["val"] + [f"val{k}" for k in range(2, 13)])


def test_explicit_folder_with_results_is_refused_unless_exist_ok(tmp_path):
    out = tmp_path / "out"
    first = resolve_output_dir(out, task="predict")
    assert first.path == out and not first.numbered and first.earlier == () and first.reuse_note("x") is None
    (out / "predictions.jsonl").write_text("{}\n")
    (out / "a.jpg").write_bytes(b"x")
    with pytest.raises(OutputError, match=r"out \(--save-dir\) already holds 2 files: a.jpg, predictions.jsonl of an "
                                          r"earlier run.*--exist-ok"):  # fmt: skip
        resolve_output_dir(out, task="predict", option="--save-dir")
    again = resolve_output_dir(out, task="predict", exist_ok=True)
    assert again.earlier == ("a.jpg", "predictions.jsonl")
    assert again.reuse_note("they are appended to") == (
        f"{out} holds 2 files: a.jpg, predictions.jsonl of an earlier run; they are appended to."
    )
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / LOCK_NAME).write_text("")  # a left lock file is not a result
    assert resolve_output_dir(tmp_path / "empty", task="predict").earlier == ()
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="is a file; expected a folder"):
        resolve_output_dir(tmp_path / "file", task="predict", exist_ok=True)


def test_output_folder_inside_or_equal_to_an_input_is_refused(tmp_path):
    src = tmp_path / "images"
    (src / "sub").mkdir(parents=True)
    with pytest.raises(OutputError, match="is inside the input folder"):
        resolve_output_dir(src / "out", task="predict", inputs=[src])
    with pytest.raises(OutputError, match="is the input"):
        resolve_output_dir(src, task="predict", inputs=[src], exist_ok=True)
    assert not (src / "out").exists()
    # the numbered default inside a source folder is refused and leaves no empty folder behind
    with pytest.raises(OutputError, match="is inside the input folder"):
        resolve_output_dir(None, task="predict", project=src / "runs", inputs=[src])
    assert not (src / "runs" / "predict").exists()
    # a source folder that is itself an earlier run folder: the new numbered folder is beside it, fine
    first = next_run_dir(tmp_path / "runs", "predict")
    assert resolve_output_dir(None, task="predict", project=tmp_path / "runs", inputs=[first]).path.name == "predict2"


def test_single_output_file_rules(tmp_path):
    ckpt = tmp_path / "a.pt"
    ckpt.write_bytes(b"weights")
    with pytest.raises(OutputError, match="is the input"):
        check_output_file(ckpt, inputs=[ckpt], exist_ok=True)
    os.link(ckpt, tmp_path / "hard.pt")  # another name of the same file
    with pytest.raises(OutputError, match="is the input"):
        check_output_file(tmp_path / "hard.pt", inputs=[ckpt], exist_ok=True)
    (tmp_path / "link.pt").symlink_to(ckpt)
    with pytest.raises(OutputError, match="is the input"):
        check_output_file(tmp_path / "link.pt", inputs=[ckpt], exist_ok=True)
    (tmp_path / "old.onnx").write_bytes(b"x")
    with pytest.raises(OutputError, match="already exists .*add --exist-ok to replace it"):
        check_output_file(tmp_path / "old.onnx", inputs=[ckpt])
    assert check_output_file(tmp_path / "old.onnx", inputs=[ckpt], exist_ok=True) == tmp_path / "old.onnx"
    with pytest.raises(OutputError, match="is a folder; expected a file name"):
        check_output_file(tmp_path, exist_ok=True)
    assert check_output_file(tmp_path / "new.onnx", inputs=[ckpt]) == tmp_path / "new.onnx"
    assert ckpt.read_bytes() == b"weights"


HOLD = """
import sys, time
from y9core.files.run_dir import RunLock
lock = RunLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(60)
"""


def _holder(folder):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_is_refused_naming_the_holder(tmp_path):
    proc = _holder(tmp_path / "run")
    try:
        with pytest.raises(OutputError, match=rf"run is being written by another y9 process \(pid {proc.pid} on "):
            RunLock(tmp_path / "run").acquire()
    finally:
        proc.kill()
        proc.wait()


def test_a_lock_left_by_a_killed_writer_is_taken_over_with_a_warning(tmp_path):
    proc = _holder(tmp_path / "run")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert (tmp_path / "run" / LOCK_NAME).exists()  # left behind by the kill
    warnings = []
    with RunLock(tmp_path / "run", warn=warnings.append) as lock:
        assert lock.held and f"pid {proc.pid} on" in (lock.taken_over or "")
        assert len(warnings) == 1 and "took over" in warnings[0]
        with pytest.raises(OutputError, match=f"pid {os.getpid()} on"):  # one writer, even in one process
            RunLock(tmp_path / "run").acquire()
    assert not (tmp_path / "run" / LOCK_NAME).exists()  # released cleanly: nothing left
    assert earlier_files(tmp_path / "run") == []
    with RunLock(tmp_path / "run") as again:
        assert again.taken_over is None


def _contend(args):
    folder, go, out = args
    while not os.path.exists(go):
        time.sleep(0.001)
    try:
        with RunLock(folder):
            time.sleep(2)  # longer than the others take to start
            with open(out, "a") as fh:
                fh.write(f"{os.getpid()}\n")
        return "ran"
    except OutputError:
        return "refused"


def test_writers_started_together_exactly_one_proceeds(tmp_path):
    go = tmp_path / "go"
    with mp.get_context("fork").Pool(4) as pool:
        pending = pool.map_async(_contend, [(str(tmp_path / "run"), str(go), str(tmp_path / "log"))] * 4)
        time.sleep(0.3)
        go.write_text("")
        got = pending.get(timeout=60)
    assert sorted(got) == ["ran", "refused", "refused", "refused"]
    assert len((tmp_path / "log").read_text().splitlines()) == 1
