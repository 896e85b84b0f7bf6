"""A full disk, played by a file-size limit (``ulimit -f``: RLIMIT_FSIZE in the child, SIGXFSZ ignored) (issue 34
"Why"): training and predict stop with one sentence naming the file that could not be written and why; nothing
written before is lost or left half written: JSON lines stay whole, annotated copies are whole or absent, the
previous last.pt still loads, no temporary file is left."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import cv2
import pytest

from tests.conftest import REPO, TEST_DATA, y9_output
from tests.deploy.runtime_support import export_tiny_onnx
from tests.reliability.bounded_run import run_y9
from tests.train.data_fixtures import coco_pair_dataset

EFBIG = (
    "the file would exceed the file-size limit (ulimit -f) or the file system's largest file (errno EFBIG)."
)
PHOTOS = sorted(TEST_DATA.glob("*.jpg"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return export_tiny_onnx(
        tmp_path_factory.mktemp("tiny") / "tiny.onnx", imgsz=(96, 128), dynamic_batch=True
    )


def no_temporaries(folder: Path) -> bool:
    return not [p for p in folder.rglob("*") if ".tmp" in p.name]


def test_appended_lines_stay_whole_at_the_limit(tmp_path):
    """y9core.files.append_file itself, under a 1000-byte limit: the write that crosses it is cut back."""
    code = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
        from y9core.files.append_file import AppendFile
        f = AppendFile({str(tmp_path / "log.jsonl")!r}, fresh=True)
        try:
            for k in range(100):
                f.append('{{"k": %d, "pad": "%s"}}\\n' % (k, "x" * 50))
        except OSError as exc:
            print(exc.errno, exc.filename)
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["27", str(tmp_path / "log.jsonl")]  # EFBIG, naming the file
    text = (tmp_path / "log.jsonl").read_text()
    lines = text.splitlines()
    assert text.endswith("\n") and [json.loads(s)["k"] for s in lines] == list(range(len(lines)))
    assert 0 < len(text) <= 1000 and len(text) + len(lines[0]) + 1 > 1000  # every line that fitted, then none


def test_predict_stops_naming_the_jsonl_file_and_keeps_whole_lines(tiny, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for p in PHOTOS:
        shutil.copy(p, src / p.name)
    out = tmp_path / "out"
    run = run_y9(["predict", str(src), "-m", str(tiny), "--save-dir", str(out), "--no-images"], tmp_path,
                 file_size=30_000)  # fmt: skip
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert run.errors == [f"error: cannot use {out / 'predictions.jsonl'}: {EFBIG}"], run.stderr
    lines = (out / "predictions.jsonl").read_text().splitlines()
    done = [json.loads(s)["source"] for s in lines]  # every line parses: none is half written
    assert 0 < len(done) < len(PHOTOS) and done == [str(src / p.name) for p in PHOTOS[: len(done)]]
    final = json.loads((out / "predictions.json").read_text())  # built from the whole lines done
    assert [r["source"] for r in final["results"]] == done
    assert no_temporaries(out)


def test_predict_stops_naming_the_annotated_copy_it_could_not_write(tiny, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for p in PHOTOS[:3]:
        shutil.copy(p, src / p.name)
    out = tmp_path / "out"
    run = run_y9(["predict", str(src), "-m", str(tiny), "--save-dir", str(out)], tmp_path, file_size=100_000)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    first = out / PHOTOS[0].name  # its annotated copy is about 200 kB
    assert run.errors == [f"error: cannot use {first}: {EFBIG}"], run.stderr
    assert not first.exists() and no_temporaries(out)  # no copy cut short under the name
    assert [json.loads(s)["source"] for s in (out / "predictions.jsonl").read_text().splitlines()] == [
        str(src / PHOTOS[0].name)
    ]


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """One finished epoch of a tiny run: its folder (last.pt about 40 MB, best.pt about 10 MB). Trained in this
    process (no limit applies to it: only the resume below runs in a child under ``ulimit -f``)."""
    root = tmp_path_factory.mktemp("fsize")
    data = coco_pair_dataset(root / "data")
    args = ["train", "--data", str(data), "--model", "gelan-t", "--epochs", "1", "--imgsz", "64", "--batch", "2",
            "--device", "cpu", "--workers", "0", "--project", str(root / "runs"), "--name", "a"]  # fmt: skip
    run = y9_output(*args)
    assert run.returncode == 0, run.stderr
    return root / "runs" / "a"


def test_training_stops_naming_last_pt_and_the_previous_last_pt_still_loads(trained_run):
    from y9train.checkpoint import load_checkpoint

    last = trained_run / "weights" / "last.pt"
    before = last.read_bytes()
    results_before = (trained_run / "results.csv").read_text()
    run = run_y9(["train", "--resume", str(last), "--epochs", "2"], trained_run.parent, address_space=None,
                 file_size=20 << 20)  # fmt: skip
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert run.errors == [f"error: cannot use {last}: {EFBIG}"], run.stderr
    assert last.read_bytes() == before  # the previous good file is kept whole
    assert load_checkpoint(last) is not None
    assert (trained_run / "results.csv").read_text() == results_before  # epoch 2 is not recorded as done
    steps = (trained_run / "steps.csv").read_text()
    assert steps.endswith("\n") and all(len(r.split(",")) == 9 for r in steps.splitlines())
    assert no_temporaries(trained_run)
    assert cv2.imread(str(trained_run / "results.png")) is not None
