"""Hostile images and videos (issue 34 "Why": decompression bombs, silent input damage): each is refused from its
header or its decode with one sentence naming the file, skipped and reported like an unreadable file, and the
commands keep their memory bounded (the bomb cases stay under 500 MB, measured in the child process)."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from tests.conftest import TEST_DATA
from tests.deploy.runtime_support import export_tiny_onnx
from tests.reliability.bounded_run import run_y9
from tests.reliability.hostile_images import jpeg, jpeg_bomb, png_bomb, scrambled_jpeg
from tests.train.data_fixtures import COCO_36, coco_pair_dataset
from y9core.data.image_check import verify_images
from y9core.errors import ImageFileError
from y9core.images.read import (
    DEFAULT_MAX_PIXELS,
    EXTRA_BYTES,
    MAX_BYTES_PER_PIXEL,
    MAX_PIXELS_ENV,
    decode_image,
    max_image_pixels,
)

GOOD = sorted(TEST_DATA.glob("*.jpg"))[:3]
BOUND_MB = 500


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return export_tiny_onnx(
        tmp_path_factory.mktemp("tiny") / "tiny.onnx", imgsz=(96, 128), dynamic_batch=True
    )


def hostile_folder(folder: Path) -> dict[str, str]:
    """Three good photos and the hostile files of issue 34; returns name -> the start of each one's reason."""
    folder.mkdir(parents=True, exist_ok=True)
    for p in GOOD:
        shutil.copy(p, folder / p.name)
    src = COCO_36.read_bytes()
    files = {
        "bomb60k.jpg": (jpeg_bomb(60000, 60000), "has 60000x60000 = 3,600,000,000 pixels, more than the limit of "
                                                 "178,956,970 (a decompression bomb"),
        "bomb30k.jpg": (jpeg_bomb(30000, 30000), "has 30000x30000 = 900,000,000 pixels, more than the limit"),
        "bomb.png": (png_bomb(20000, 20000), "has 20000x20000 = 400,000,000 pixels, more than the limit"),
        "cut.jpg": (src[: len(src) // 2], "is a JPEG cut short (no end-of-image marker)"),
        "scrambled.jpg": (scrambled_jpeg(src), "has corrupt JPEG data (libjpeg: 'Corrupt JPEG data"),
        "cut.png": (cv2.imencode(".png", cv2.imread(str(COCO_36)))[1].tobytes()[:5000],
                    "is a PNG cut short (no IEND chunk)"),
    }  # fmt: skip
    for name, (data, _) in files.items():
        (folder / name).write_bytes(data)
    return {name: reason for name, (_, reason) in files.items()}


def test_each_hostile_file_is_refused_with_its_reason(tmp_path):
    expected = hostile_folder(tmp_path)
    for name, start in expected.items():
        with pytest.raises(ImageFileError) as info:
            decode_image(tmp_path / name)
        assert info.value.reason.startswith(start), (name, info.value.reason)
        assert str(info.value) == f"image {tmp_path / name} {info.value.reason}."
    for p in GOOD:
        assert np.array_equal(decode_image(tmp_path / p.name), cv2.imread(str(p)))


def test_the_limit_is_documented_default_and_can_be_raised_or_lowered(tmp_path, monkeypatch):
    monkeypatch.delenv(MAX_PIXELS_ENV, raising=False)
    assert max_image_pixels() == DEFAULT_MAX_PIXELS == 178_956_970
    photo = GOOD[0]
    h, w = cv2.imread(str(photo)).shape[:2]
    monkeypatch.setenv(MAX_PIXELS_ENV, str(h * w - 1))
    with pytest.raises(ImageFileError, match=f"more than the limit of {h * w - 1:,}"):
        decode_image(photo)
    monkeypatch.setenv(MAX_PIXELS_ENV, str(h * w))
    assert decode_image(photo).shape[:2] == (h, w)
    monkeypatch.setenv(MAX_PIXELS_ENV, "1e9")
    assert max_image_pixels() == 1_000_000_000
    for bad in ("many", "0", "-5", "1.5"):
        monkeypatch.setenv(MAX_PIXELS_ENV, bad)
        with pytest.raises(ValueError, match=f"{MAX_PIXELS_ENV}='{bad}'; expected a positive whole number"):
            max_image_pixels()


def test_predict_goes_on_past_every_hostile_file_in_bounded_memory(tiny, tmp_path):
    src = tmp_path / "src"
    expected = hostile_folder(src)
    run = run_y9(["predict", str(src), "-m", str(tiny), "--save-dir", str(tmp_path / "out")], tmp_path)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr  # 1: inputs were skipped
    assert run.peak_mb < BOUND_MB, run.peak_mb
    text = " ".join((run.stdout + run.stderr).split())
    assert "3 frames (3 images, 0 videos)" in text and f"{len(expected)} skipped" in text
    for name, start in expected.items():
        assert f"skipped {src / name}: image {src / name} {start}" in text, name
    final = json.loads((tmp_path / "out" / "predictions.json").read_text())
    assert sorted(Path(r["source"]).name for r in final["results"]) == sorted(p.name for p in GOOD)
    assert sorted(Path(s["source"]).name for s in final["skipped"]) == sorted(expected)
    assert "Corrupt JPEG data" not in run.stderr.replace("(libjpeg: 'Corrupt JPEG data", "")


def test_a_lowered_limit_from_the_command_line_skips_the_photos(tiny, tmp_path):
    run = run_y9(["--max-image-pixels", "1000", "predict", str(GOOD[0]), "-m", str(tiny)], tmp_path)
    assert run.returncode == 2, run.stderr  # the only input cannot be read: an error, no empty run folder (issue 44)
    assert "more than the limit of 1,000" in " ".join((run.stdout + run.stderr).split())
    assert not (tmp_path / "runs").exists()


def test_data_check_and_the_training_scan_skip_them_in_bounded_memory(tmp_path, caplog):
    data = coco_pair_dataset(tmp_path / "d")
    expected = hostile_folder(tmp_path / "d" / "images" / "train")
    run = run_y9(["data", "check", str(data), "--no-cache"], tmp_path)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert run.peak_mb < BOUND_MB, run.peak_mb
    text = " ".join(run.stdout.split())
    for name, start in expected.items():
        assert f"skipped {tmp_path / 'd' / 'images' / 'train' / name}: it {start}" in text, name
    folder = tmp_path / "d" / "images" / "train"
    verdicts = verify_images([folder / n for n in sorted(expected)], workers=2)
    assert [v.hw for v in verdicts] == [None] * len(expected)
    assert all(v.reason.startswith(expected[n]) for v, n in zip(verdicts, sorted(expected)))


def test_inspect_gives_a_refused_image_the_error_verdict(tiny, tmp_path):
    from y9deploy.pipelines.inspection.run import run_inspection

    parts = tmp_path / "parts"
    parts.mkdir()
    shutil.copy(GOOD[0], parts / "ok.jpg")
    (parts / "bomb.jpg").write_bytes(jpeg_bomb(60000, 60000))
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - {name: any, max: 1000}\n")
    verdicts = []
    summary = run_inspection(parts, tiny, rules, audit_dir=tmp_path / "audit", on_item=verdicts.append)
    assert summary.errors == 1 and summary.items == 2
    bad = next(v for v in verdicts if v.item.endswith("bomb.jpg"))
    assert (
        bad.verdict == "error" and "60000x60000 = 3,600,000,000 pixels, more than the limit" in bad.reasons[0]
    )


def corrupt_video(path: Path, frames: int = 60) -> Path:
    """An mp4 whose middle third of compressed data is zeroed (its index, at the end, intact)."""
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 30, (64, 48))
    rng = np.random.default_rng(0)
    for _ in range(frames):
        writer.write(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8))
    writer.release()
    data = bytearray(path.read_bytes())
    index = data.find(b"moov")
    data[index // 3 : 2 * index // 3] = bytes(index // 3)
    path.write_bytes(bytes(data))
    return path


def test_a_video_with_a_corrupt_middle_says_how_many_frames_were_read(tiny, tmp_path, caplog):
    from y9deploy.pipelines.predict.run import predict_source
    from y9deploy.pipelines.sources.capture import VideoReader

    video = corrupt_video(tmp_path / "line.mp4")
    cap = cv2.VideoCapture(str(video))
    decodable = 0
    for _ in range(60):  # the reference: every position read with OpenCV itself
        decodable += bool(cap.read()[0])
    assert 0 < decodable < 60
    warnings: list[str] = []
    summary = predict_source(video, tiny, save_dir=tmp_path / "out", on_warning=warnings.append)
    short = (
        f"only {decodable} of the 60 frames of {video} could be decoded (the file is cut short or corrupt)"
    )
    assert summary.frames == decodable and summary.exit_code == 1
    assert any(w.startswith(short) for w in warnings) and summary.skipped[0][1].startswith(short)
    with caplog.at_level(logging.WARNING, logger="y9deploy"):
        assert len(list(VideoReader(video))) == decodable
    assert short in caplog.text


def test_a_file_far_larger_than_its_pixels_need_is_not_read(tmp_path):
    path = tmp_path / "padded.jpg"
    path.write_bytes(jpeg(8, 8))
    os.truncate(path, EXTRA_BYTES + 64 * MAX_BYTES_PER_PIXEL + 1)  # sparse: nothing is written
    with pytest.raises(
        ImageFileError, match=r"has 67,109,377 bytes for a 8x8 JPEG image, more than the 67,109,376"
    ):
        decode_image(path)
