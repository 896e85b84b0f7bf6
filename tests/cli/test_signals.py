"""SIGINT and SIGTERM reach y9 in real `y9` processes: one line says what was kept and the command that goes on;
training writes last.pt at a consistent point (the last finished epoch, as logged); predict finishes its files and
summary; a signal after a command finished ends it quietly (no traceback from the interpreter's shutdown)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, TEST_DATA
from tests.train.data_fixtures import coco_pair_dataset


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "Y9_CACHE_DIR": str(tmp_path / "cache"),
            "COLUMNS": "200"}  # fmt: skip


def _start(args: list[str], tmp_path: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "y9cli", *map(str, args)], cwd=tmp_path, env=_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def _wait_until(proc: subprocess.Popen, ready, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the process ended before the signal: {proc.communicate()}"
        if ready():
            return
        time.sleep(0.02)
    proc.kill()
    pytest.fail("the process never reached the point to interrupt")


def _maps_torch(pid: int) -> bool:
    try:
        return "libtorch" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _collect(stream) -> list[str]:
    """The lines of ``stream`` as they come, read by a thread (the list grows while the process runs)."""
    import threading

    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(stream.readline, "")), daemon=True).start()
    return lines


def _last_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    return stderr.strip().splitlines()[-1]


@pytest.fixture
def checkpoint(tmp_path):
    import shutil

    from y9deploy.default_model import default_model_path

    return shutil.copy(default_model_path(), tmp_path / "a.pt")


def test_sigint_during_export_says_nothing_was_written_and_how_to_export_again(checkpoint, tmp_path):
    proc = _start(["export", checkpoint, "-o", "out.onnx", "--imgsz", "64"], tmp_path)
    _wait_until(proc, lambda: _maps_torch(proc.pid))  # torch loaded: the export is under way
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert _last_line(err) == (
        "interrupted (Ctrl-C): nothing was written (out.onnx is written last, whole or not at all); to export again: "
        f"y9 export {checkpoint} -o out.onnx --imgsz 64."
    )
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == ["a.pt"]  # no partial or temporary


def test_sigterm_after_an_epoch_keeps_that_epoch_and_says_how_to_resume(tmp_path):
    from y9train.checkpoints.load import read_checkpoint
    from y9train.reports.reporting import read_csv

    data = coco_pair_dataset(tmp_path / "data")
    proc = _start(["train", "--data", data, "--model", "gelan-t", "--imgsz", "64", "--epochs", "30", "--batch", "2",
                   "--workers", "0", "--device", "cpu", "--no-val", "plots=false"], tmp_path)  # fmt: skip
    lines = _collect(proc.stdout)
    _wait_until(proc, lambda: any(" done in " in line for line in lines))
    proc.send_signal(signal.SIGTERM)
    err = proc.stderr.read()
    proc.wait(timeout=120)
    time.sleep(0.2)  # the reader thread takes the last lines
    assert proc.returncode == 143, err
    run = tmp_path / "runs" / "train" / "exp"
    logged = sum(" done in " in line for line in lines)  # epochs the log reported finished
    last = read_checkpoint(run / "weights" / "last.pt")["train"]
    assert last["epoch"] + 1 == logged == len(read_csv(run / "results.csv"))  # last.pt is not behind the log
    assert _last_line(err) == (
        f"interrupted (SIGTERM): kept {Path('runs/train/exp/weights/last.pt')} (epoch {logged} of 30), best.pt and "
        f"results.csv in {Path('runs/train/exp')}; to resume: y9 train --resume runs/train/exp."
    )
    assert not list(run.rglob("*.tmp")) and not (run / ".y9.lock").exists()


def test_sigint_before_the_first_epoch_says_nothing_can_be_resumed(tmp_path):
    data = coco_pair_dataset(tmp_path / "data")
    args = ["train", "--data", data, "--model", "gelan-t", "--imgsz", "64", "--epochs", "1", "--batch", "2",
            "--workers", "0", "--device", "cpu", "--no-val", "--name", "one", "plots=false"]  # fmt: skip
    proc = _start(args, tmp_path)
    _wait_until(proc, lambda: (tmp_path / "runs" / "train" / "one" / "steps.csv").exists())  # set up, training
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert _last_line(err) == (
        f"interrupted (Ctrl-C): no epoch had finished, so {Path('runs/train/one')} holds nothing to resume; to start "
        f"again: y9 {' '.join(map(str, args))} --exist-ok."
    )


def test_sigterm_during_predict_finishes_the_files_and_the_summary(tmp_path):
    import cv2

    from tests.deploy.fixed_onnx import fixed_boxes_onnx
    from y9deploy.pipelines.predict.results import read_jsonl

    model = fixed_boxes_onnx(tmp_path / "m.onnx", [[10, 10, 4, 4]], ["a"])
    src = tmp_path / "src"
    src.mkdir()
    one = tmp_path / "one.png"
    cv2.imwrite(str(one), cv2.resize(cv2.imread(str(TEST_DATA / "000000000036.jpg")), (64, 48)))
    for k in range(3000):
        (src / f"i{k:04d}.png").symlink_to(one)
    proc = _start(["predict", src, "-m", model, "--no-images", "--name", "p"], tmp_path)
    jsonl = tmp_path / "runs" / "p" / "predictions.jsonl"
    _wait_until(proc, lambda: jsonl.exists() and len(read_jsonl(jsonl)) >= 5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    done = len(read_jsonl(jsonl))
    assert 5 <= done < 3000
    assert out.startswith(f"{done} frames ({done} images, 0 videos)")
    assert _last_line(err) == (
        f"interrupted (SIGTERM): kept {Path('runs/p')} (predictions.jsonl, .csv and .json with the {done} frames "
        f"done); to go on: y9 predict {src} -m {model} --no-images --project runs --name p --resume."
    )
    import json

    assert len(json.loads((tmp_path / "runs" / "p" / "predictions.json").read_text())["results"]) == done
    # issue 44 item 6: the printed command works when pasted, and does only the frames left
    import shlex

    pasted = shlex.split(_last_line(err).split("to go on: ", 1)[1].rstrip("."))
    assert pasted[0] == "y9"
    again = subprocess.run([sys.executable, "-m", "y9cli", *pasted[1:]], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300, env=_env(tmp_path))  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"{3000 - done} frames ({3000 - done} images, 0 videos)")
    assert f"{done} frames done by the earlier run left out (--resume)" in again.stdout
    sources = [r["source"] for r in read_jsonl(jsonl)]
    assert len(sources) == len(set(sources)) == 3000  # every image once


LATE = """
import atexit, sys, time
def slow_shutdown():  # like torch's atexit handlers after an export
    print("in atexit", flush=True)
    time.sleep(30)
atexit.register(slow_shutdown)
sys.argv = ["y9", "--help"]
from y9cli.app import main
main()
"""


def test_a_signal_after_the_command_finished_ends_it_quietly(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", LATE], cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    seen = _collect(proc.stdout)
    _wait_until(proc, lambda: "in atexit\n" in seen, timeout=60)
    proc.send_signal(signal.SIGINT)
    err = proc.stderr.read()
    proc.wait(timeout=10)
    assert proc.returncode == 0 and err == "", err  # the command's status, no traceback
    assert any("Usage: y9" in line for line in seen)
