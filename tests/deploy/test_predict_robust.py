"""y9 predict never loses results: a corrupt file is skipped and counted (exit 1), Ctrl-C half way leaves the
frames done on disk (exit 130), a save-dir in the source is refused with the inputs untouched; --batch reaches the
backend as batches; --classes by name and --class-conf equal the Detector's own filtering."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import REPO, TEST_DATA
from tests.deploy.runtime_support import export_tiny_onnx
from y9deploy import Detector
from y9deploy.pipelines.predict.results import read_jsonl
from y9deploy.runtime.backends.onnxruntime_backend import OnnxRuntimeBackend

IMAGES = [TEST_DATA / "000000000036.jpg", TEST_DATA / "000000000042.jpg"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return export_tiny_onnx(
        tmp_path_factory.mktemp("tiny") / "tiny.onnx", imgsz=(96, 128), dynamic_batch=True
    )


def digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}  # fmt: skip


def test_corrupt_file_is_skipped_counted_and_exits_1(tiny, tmp_path):
    from y9cli.app import app

    src = tmp_path / "src"
    src.mkdir()
    for p in IMAGES:
        shutil.copy(p, src / p.name)
    (src / "broken.jpg").write_bytes(IMAGES[0].read_bytes()[:200])  # a truncated JPEG header: undecodable
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["predict", str(src), "-m", str(tiny), "--project", str(tmp_path), "--name", "out"])
    assert res.exit_code == 1, res.output
    assert "2 frames (2 images, 0 videos)" in res.output and "1 skipped" in res.output
    assert f"skipped {src / 'broken.jpg'}" in res.output
    assert " 3/3 " in res.output  # the bar ends full: the skipped image was gone through too
    lines = read_jsonl(out / "predictions.jsonl")
    assert sorted(Path(r["source"]).name for r in lines) == sorted(p.name for p in IMAGES)
    with Detector(tiny) as det:
        for r in lines:
            assert len(r["detections"]) == len(det.predict(r["source"]))
    final = json.loads((out / "predictions.json").read_text())
    assert [Path(s["source"]).name for s in final["skipped"]] == ["broken.jpg"]
    ok = CliRunner().invoke(app, ["predict", str(IMAGES[0]), "-m", str(tiny), "--no-save"])
    assert ok.exit_code == 0


def test_sigint_half_way_leaves_the_frames_done_on_disk(tiny, tmp_path):
    src = tmp_path / "many"
    src.mkdir()
    base = cv2.resize(cv2.imread(str(IMAGES[0])), (128, 96))
    for k in range(1500):
        cv2.imwrite(str(src / f"img{k:05d}.jpg"), np.roll(base, k, axis=1))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "y9cli", "predict", str(src), "-m", str(tiny), "--project", str(tmp_path),
           "--name", "out", "--no-images"]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    jsonl = out / "predictions.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if jsonl.exists() and len(read_jsonl(jsonl)) >= 20:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stdout + stderr
    assert stderr.strip().splitlines()[-1].startswith(f"interrupted (Ctrl-C): kept {out} (predictions.jsonl, .csv")
    lines = read_jsonl(jsonl)
    assert 20 <= len(lines) < 1500
    names = [Path(r["source"]).name for r in lines]
    assert names == [f"img{k:05d}.jpg" for k in range(len(lines))]  # every frame done, in order
    with Detector(tiny) as det:
        for r in lines[:3] + lines[-2:]:
            want = det.predict(r["source"])
            np.testing.assert_allclose(np.array([d["xyxy"] for d in r["detections"]]).reshape(-1, 4), want.xyxy,
                                       atol=1e-3)  # fmt: skip
    rows = (out / "predictions.csv").read_text().splitlines()
    assert len(rows) - 1 == sum(len(r["detections"]) for r in lines)
    assert len(json.loads((out / "predictions.json").read_text())["results"]) == len(lines)


def test_save_dir_in_the_source_is_refused_and_inputs_untouched(tiny, tmp_path):
    from y9cli.app import app

    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    for p in IMAGES:
        shutil.copy(p, src / p.name)
    shutil.copy(IMAGES[0], src / "sub" / IMAGES[0].name)
    before = digest(src)
    for project, name, why in ((src, None, "is inside the input folder"), (src, "sub", "is inside the input folder"),
                               (src, "new_out", "is inside the input folder"), (src, ".", "is the input"),
                               (tmp_path, "src", "is the input")):  # fmt: skip
        res = CliRunner().invoke(app, ["predict", str(src), "-m", str(tiny), "--project", str(project),
                                       *(["--name", name] if name else []), "--exist-ok"])  # fmt: skip
        assert isinstance(res.exception, ValueError), res.output
        assert why in str(res.exception) and str(src) in str(res.exception)
    single = CliRunner().invoke(app, ["predict", str(src / IMAGES[0].name), "-m", str(tiny), "--project",
                                      str(tmp_path), "--name", "src", "--exist-ok"])  # fmt: skip
    assert isinstance(single.exception, ValueError) and "would replace it" in str(single.exception)
    assert digest(src) == before and not (src / "new_out").exists()


def test_batch_classes_by_name_and_class_conf(tiny, tmp_path, monkeypatch):
    from y9cli.app import app

    batches: list[int] = []
    infer = OnnxRuntimeBackend.infer

    def spy(self, blob, extras=None):
        batches.append(int(blob.shape[0]))
        return infer(self, blob, extras)

    monkeypatch.setattr(OnnxRuntimeBackend, "infer", spy)
    src = tmp_path / "src"
    src.mkdir()
    for k in range(5):
        shutil.copy(IMAGES[k % 2], src / f"i{k}.jpg")
    out = tmp_path / "out"
    args = ["predict", str(src), "-m", str(tiny), "--project", str(tmp_path), "--name", "out", "--no-images", "--batch", "2",
            "--classes", "c0,2", "--class-conf", "c2=0.7", "--conf", "0.3"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert batches == [2, 2, 1]  # 5 images, 2 per call
    lines = read_jsonl(out / "predictions.jsonl")
    with Detector(tiny) as det:
        conf = np.array([0.3, 0.3, 0.7])
        for r in lines:
            want = det.predict(r["source"], conf=conf, classes=[0, 2])
            assert [d["class_id"] for d in r["detections"]] == want.class_id.tolist()
            np.testing.assert_allclose([d["confidence"] for d in r["detections"]], want.confidence, atol=1e-5)
        everything = sum(len(det.predict(r["source"], conf=0.3)) for r in lines)
    kept = sum(len(r["detections"]) for r in lines)
    assert 0 < kept < everything  # the filters did something
    assert {d["class_id"] for r in lines for d in r["detections"]} <= {0, 2}
    bad = CliRunner().invoke(app, ["predict", str(src), "-m", str(tiny), "--classes", "dog", "--no-save"])
    assert isinstance(bad.exception, ValueError) and "'dog' is not a class" in str(bad.exception)
    bad = CliRunner().invoke(app, ["predict", str(src), "-m", str(tiny), "--class-conf", "c1:0.5", "--no-save"])
    assert isinstance(bad.exception, ValueError) and "CLASS=VALUE" in str(bad.exception)


def test_a_ready_detector_keeps_its_own_options_unless_the_run_gives_others(tiny, tmp_path):
    """``predict_source`` with a ``Detector`` made by the caller: per-class thresholds fill the other classes with the
    Detector's ``conf`` (not a default of their own), ``conf`` given to the run applies to it, and a device or input
    size (the Detector's own, fixed when it was made) is refused rather than ignored."""
    import io

    from y9deploy.pipelines.predict.run import predict_source

    def run(det, **options) -> list[list[int]]:
        out = io.StringIO()
        predict_source(IMAGES[0], det, jsonl_stream=out, **options)
        return [[d["class_id"] for d in json.loads(line)["detections"]] for line in out.getvalue().splitlines()]

    with Detector(tiny, conf=0.2) as det:
        want = det.predict(IMAGES[0], conf=np.array([0.2, 0.2, 0.6])).class_id.tolist()
        assert len(want) > 0 and want != det.predict(IMAGES[0], conf=0.6).class_id.tolist()  # the rule tells apart
        assert run(det, class_conf={"c2": 0.6}) == [want]
        assert run(det, conf=0.6) == [det.predict(IMAGES[0], conf=0.6).class_id.tolist()]
        for option in ({"device": "cpu"}, {"imgsz": 96}):
            with pytest.raises(ValueError, match=f"{next(iter(option))}=.*with a ready Detector"):
                run(det, **option)
