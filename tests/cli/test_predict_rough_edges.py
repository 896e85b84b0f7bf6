"""``y9 predict``'s rough edges of issue 44 (items 5, 7, 9, 10): what a new user hits in the first hour."""

from __future__ import annotations

import json

import cv2
import pytest

from tests.checkpoint_reads import read_each_checkpoint_once
from tests.conftest import TEST_DATA, y9_output

IMAGES = sorted(TEST_DATA.glob("*.jpg"))


@pytest.fixture(scope="module", autouse=True)
def _embedded_model_read_once():
    """The embedded model (these commands' default) read once for the module: each command still makes its own
    Detector and run (tests/checkpoint_reads.py)."""
    with pytest.MonkeyPatch.context() as patch:
        yield read_each_checkpoint_once(patch)


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_without_a_model_it_says_it_uses_the_demonstration_model(here):
    res = y9_output("predict", IMAGES[0], "--no-save")
    assert res.returncode == 0, res.stderr
    assert "note: no --model given: using the embedded demonstration model" in res.stderr
    with_model = y9_output("predict", IMAGES[0], "--no-save", "-m", __import__("y9").default_model_path())
    assert "demonstration model" not in with_model.stderr


def test_a_txt_list_of_image_paths_is_a_source(here):
    (here / "imgs").mkdir()
    for p in IMAGES[:3]:
        (here / "imgs" / p.name).write_bytes(p.read_bytes())
    (here / "imgs" / "val.txt").write_text(f"{IMAGES[2].name}\n{IMAGES[0].name}\n")  # relative to the list's folder
    res = y9_output("predict", "imgs/val.txt")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("2 frames (2 images, 0 videos)")
    lines = [json.loads(line) for line in (here / "runs/predict/predictions.jsonl").read_text().splitlines()]
    assert [line["source"] for line in lines] == [f"imgs/{IMAGES[2].name}", f"imgs/{IMAGES[0].name}"]
    (here / "bad.txt").write_text("gone.jpg\n")
    bad = y9_output("predict", "bad.txt")
    assert bad.returncode == 2 and "bad.txt line 1 names gone.jpg, which does not exist" in bad.stderr


@pytest.mark.parametrize("source", ["missing.jpg", "http://127.0.0.1:9/x.jpg", "broken.mp4", "broken.jpg"])
def test_a_source_that_fails_leaves_no_run_folder(here, source):
    (here / "broken.mp4").write_bytes(b"not a video")
    (here / "broken.jpg").write_bytes(b"not an image")
    res = y9_output("predict", source, "--save-txt", "--save-json")
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.count("error:") == 1 and "warning" not in res.stderr  # one sentence, said once
    assert not (here / "runs").exists()
    (here / "runs").mkdir()  # a project folder the user made stays
    assert y9_output("predict", source).returncode == 2 and list((here / "runs").iterdir()) == []


def test_track_alone_means_bytetrack(here):
    writer = cv2.VideoWriter("clip.mp4", cv2.VideoWriter_fourcc(*"mp4v"), 10, (320, 240))
    for p in IMAGES[:3]:
        writer.write(cv2.resize(cv2.imread(str(p)), (320, 240)))
    writer.release()
    for args in (["clip.mp4", "--track"], ["--track", "clip.mp4"], ["clip.mp4", "--track", "--conf", "0.3"]):
        res = y9_output("predict", *args, "--no-images", "--exist-ok", "--name", "t")
        assert res.returncode == 0, res.stderr
        first = json.loads((here / "runs/t/predictions.jsonl").read_text().splitlines()[-3])
        assert first["detections"] and all("track_id" in d for d in first["detections"])
    assert y9_output("predict", "clip.mp4", "--track", "botsort", "--no-save").returncode == 0


def test_resume_goes_on_after_the_last_frame_done(here):
    """issue 44 item 6: the command Ctrl-C prints (--resume) does not redo a video's frames (test_signals.py pastes
    it after a real SIGTERM on a folder of images)."""
    writer = cv2.VideoWriter("clip.mp4", cv2.VideoWriter_fourcc(*"mp4v"), 10, (320, 240))
    for p in IMAGES[:6]:
        writer.write(cv2.resize(cv2.imread(str(p)), (320, 240)))
    writer.release()
    first = y9_output("predict", "clip.mp4", "--name", "r", "--max-frames", "2", "--no-images")  # stopped early
    assert first.returncode == 0, first.stderr
    again = y9_output("predict", "clip.mp4", "--name", "r", "--no-images", "--resume")
    assert again.returncode == 0, again.stderr
    assert "2 frames done by the earlier run left out (--resume)" in again.stdout
    assert again.stdout.startswith("4 frames (0 images, 1 video)")
    lines = [json.loads(line) for line in (here / "runs/r/predictions.jsonl").read_text().splitlines()]
    assert [line["frame"] for line in lines] == list(range(6))  # every frame once, in order
    assert len(json.loads((here / "runs/r/predictions.json").read_text())["results"]) == 6
    refused = y9_output("predict", "clip.mp4", "--resume")
    assert refused.returncode == 2 and "--resume goes on with a named run folder" in refused.stderr
