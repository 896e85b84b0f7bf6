"""y9 predict: images, folders and videos -> annotated outputs and JSON/CSV equal to Detector.predict."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import TEST_DATA, run_y9
from tests.deploy.runtime_support import export_tiny_onnx
from y9deploy import Detector
from y9deploy.pipelines.sources.frame_reader import VideoReader

IMAGES = [TEST_DATA / "000000000036.jpg", TEST_DATA / "000000000042.jpg"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return export_tiny_onnx(tmp_path_factory.mktemp("tiny") / "tiny.onnx", imgsz=(96, 128))


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A folder: the two test images, a nested copy of one, and a 5-frame video."""
    root = tmp_path_factory.mktemp("src")
    for p in IMAGES:
        shutil.copy(p, root / p.name)
    (root / "nested").mkdir()
    shutil.copy(IMAGES[0], root / "nested" / IMAGES[0].name)  # same file name: outputs must not collide
    (root / "notes.txt").write_text("ignored")
    frame = cv2.resize(cv2.imread(str(IMAGES[1])), (160, 120))
    writer = cv2.VideoWriter(str(root / "clip.mp4"), cv2.VideoWriter_fourcc(*"mp4v"), 10, (160, 120))
    for k in range(5):
        writer.write(np.roll(frame, 8 * k, axis=1))
    writer.release()
    return root


def test_video_reader_stride(source):
    with VideoReader(source / "clip.mp4") as r:
        assert (r.width, r.height, r.frame_count) == (160, 120, 5)
        assert [i for i, _ in r] == [0, 1, 2, 3, 4]
    every2 = VideoReader(source / "clip.mp4", stride=2)
    assert every2.expected_frames == 3 and [i for i, _ in every2] == [0, 2, 4]
    assert [i for i, _ in VideoReader(source / "clip.mp4", max_frames=2)] == [0, 1]
    with pytest.raises(FileNotFoundError):
        VideoReader(source / "missing.mp4")
    with pytest.raises(ValueError, match="could not open"):
        VideoReader(source / "notes.txt")


def test_predict_folder_writes_outputs_equal_to_detector(tiny, source, tmp_path):
    from y9cli.app import app

    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["predict", str(source), "--model", str(tiny), "--conf", "0.5", "--iou", "0.4",
                                   "--project", str(tmp_path), "--name", "out", "--vid-stride", "2"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "6 frames (3 images, 1 video)" in res.output
    names = sorted(p.name for p in out.iterdir())
    assert names == ["000000000036.jpg", "000000000036_1.jpg", "000000000042.jpg", "clip.mp4",
                     "predictions.csv", "predictions.json", "predictions.jsonl"]  # fmt: skip
    for p in IMAGES:
        annotated = cv2.imread(str(out / p.name))
        original = cv2.imread(str(p))
        assert annotated.shape == original.shape and not np.array_equal(annotated, original)
    data = json.loads((out / "predictions.json").read_text())
    assert data["names"] == ["c0", "c1", "c2"]
    results = {(Path(r["source"]).relative_to(source).as_posix(), r["frame"]): r for r in data["results"]}
    assert set(results) == {("000000000036.jpg", None), ("000000000042.jpg", None), ("nested/000000000036.jpg", None),
                            ("clip.mp4", 0), ("clip.mp4", 2), ("clip.mp4", 4)}  # fmt: skip
    with Detector(tiny, conf=0.5, iou=0.4) as det:
        for p in IMAGES:
            want = det.predict(p)
            got = results[(p.name, None)]["detections"]
            assert len(got) == len(want) > 0
            np.testing.assert_allclose([d["xyxy"] for d in got], want.xyxy, atol=1e-4)
            assert [d["class_id"] for d in got] == want.class_id.tolist()
        frames = [f for _, f in VideoReader(source / "clip.mp4", stride=2)]
        for i, f in zip((0, 2, 4), frames):
            assert len(results[("clip.mp4", i)]["detections"]) == len(det.predict(f))
    with open(out / "predictions.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == sum(len(r["detections"]) for r in data["results"])
    assert set(rows[0]) == {"source", "frame", "class_id", "class_name", "confidence", "x1", "y1", "x2", "y2"}
    with VideoReader(out / "clip.mp4") as r:
        assert (r.width, r.height, r.frame_count) == (160, 120, 3)


def test_predict_single_image_without_output_options_saves_to_a_new_numbered_folder(tiny, tmp_path):
    from y9cli.app import app

    for folder in ("predict", "predict2"):  # run twice: both results kept
        res = CliRunner().invoke(app, ["predict", str(IMAGES[0]), "-m", str(tiny), "--project", str(tmp_path)])
        assert res.exit_code == 0, res.output
        assert "1 frame (1 image, 0 videos)" in res.output
        assert f"saved to {tmp_path / folder} (predictions.jsonl" in res.output
        assert sorted(p.name for p in (tmp_path / folder).iterdir()) == [
            IMAGES[0].name, "predictions.csv", "predictions.json", "predictions.jsonl"]  # fmt: skip
    res = CliRunner().invoke(app, ["predict", str(IMAGES[0]), "-m", str(tiny), "--project", str(tmp_path), "--no-save"])
    assert res.exit_code == 0 and "saved to" not in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["predict", "predict2"]


def test_predict_into_a_named_folder_twice_refuses_then_appends_with_exist_ok(tiny, tmp_path, capsys):
    args = ["predict", str(IMAGES[0]), "-m", str(tiny), "--project", str(tmp_path), "--name", "line1"]
    assert run_y9(args) == 0
    first = {p.name: p.read_bytes() for p in (tmp_path / "line1").iterdir()}
    capsys.readouterr()
    assert run_y9(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: output folder {tmp_path / 'line1'} (--name) already holds 4 files: ")
    assert "--exist-ok" in err and len(err.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in (tmp_path / "line1").iterdir()} == first  # untouched
    assert run_y9([*args, "--exist-ok"]) == 0
    out = capsys.readouterr()
    assert "holds 4 files: " in out.err and "predictions.jsonl and .csv are appended to" in out.err
    names = sorted(p.name for p in (tmp_path / "line1").iterdir())
    assert names == [IMAGES[0].name, f"{IMAGES[0].stem}_1.jpg", "predictions.csv", "predictions.json",
                     "predictions.jsonl"]  # fmt: skip
    assert (tmp_path / "line1" / IMAGES[0].name).read_bytes() == first[IMAGES[0].name]
    lines = (tmp_path / "line1" / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 2 and lines[0] == first["predictions.jsonl"].decode().strip()
    rows = (tmp_path / "line1" / "predictions.csv").read_text().splitlines()
    assert rows[0].startswith("source,") and sum(r.startswith("source,") for r in rows) == 1
    assert len(json.loads((tmp_path / "line1" / "predictions.json").read_text())["results"]) == 2


def test_the_old_save_dir_option_still_works_with_a_note(tiny, tmp_path):
    from y9cli.app import app

    res = CliRunner().invoke(app, ["predict", str(IMAGES[0]), "-m", str(tiny), "--save-dir", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert f"note: --save-dir is deprecated and will be removed in the next release; use --project {tmp_path} " \
           "--name o." in res.output  # fmt: skip
    assert (tmp_path / "o" / "predictions.json").exists()
    res = CliRunner().invoke(app, ["predict", str(IMAGES[0]), "-m", str(tiny), "--save-dir", str(tmp_path / "p"),
                                   "--name", "x"])  # fmt: skip
    assert res.exit_code != 0 and "were both given" in str(res.exception)


def test_predict_into_a_folder_another_process_writes_is_refused(tiny, tmp_path, capsys):
    import subprocess
    import sys

    from tests.conftest import REPO

    hold = "import sys, time\nfrom y9core.files.run_dir import RunLock\nRunLock(sys.argv[1]).acquire()\nprint('held', flush=True)\ntime.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", hold, str(tmp_path / "busy")], stdout=subprocess.PIPE, text=True,
                            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "held"
        assert run_y9(["predict", IMAGES[0], "-m", tiny, "--project", tmp_path, "--name", "busy"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: {tmp_path / 'busy'} is being written by another y9 process (pid {proc.pid} on ")
        assert len(err.splitlines()) == 1
        assert [p.name for p in (tmp_path / "busy").iterdir()] == [".y9.lock"]  # nothing written
    finally:
        proc.kill()
        proc.wait()


def test_predict_bad_source(tiny, tmp_path):
    from y9deploy.pipelines.predict.run import predict_source

    with pytest.raises(FileNotFoundError, match="does not exist"):
        predict_source(tmp_path / "missing", tiny)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no image"):
        predict_source(tmp_path / "empty", tiny)
    with pytest.raises(FileNotFoundError):
        predict_source(IMAGES[0], tmp_path / "missing.onnx")
