"""Every script in samples/ runs, on small inputs, as its docstring says (issue 44 item 4): a sample that a user
copies first must not write nothing and exit 0. The scripts run in this process (``runpy``, as ``__main__``, with
their own argv and folder: no interpreter and torch start per run), except where the process's own report is what
is tested (a ``sys.exit`` message on stderr)."""

from __future__ import annotations

import os
import subprocess
import sys

import cv2
import pytest

from tests.conftest import REPO, TEST_DATA, python_output

SAMPLES = REPO / "samples"
IMAGES = sorted(TEST_DATA.glob("*.jpg"))
#: samples run by another test (the file that runs them)
ELSEWHERE = {"demo.py": REPO / "tests" / "deploy" / "test_embedded_model.py"}
RUN_HERE = {"quickstart.py", "drone_video.py", "inspection_line.py"}


def _run(script: str, *args, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, str(SAMPLES / script), *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def _run_here(script: str, *args, cwd) -> subprocess.CompletedProcess:
    """``python samples/SCRIPT ARGS`` in this process, in ``cwd`` (``tests.conftest.python_output``)."""
    return python_output([str(SAMPLES / script), *args], cwd=cwd)


@pytest.fixture(scope="module")
def model():
    from y9deploy.default_model import default_model_path

    return default_model_path()


def test_every_sample_is_run_by_a_test():
    scripts = {p.name for p in SAMPLES.glob("*.py")}
    assert scripts == RUN_HERE | set(ELSEWHERE)
    for name, test in ELSEWHERE.items():
        assert f'"samples" / "{name}"' in test.read_text()


def test_quickstart_writes_the_annotated_image_into_a_new_folder(model, tmp_path):
    res = _run_here("quickstart.py", model, IMAGES[0], "--out", "out/deep/annotated.jpg", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    img = cv2.imread(str(tmp_path / "out/deep/annotated.jpg"))
    assert img is not None and img.shape == cv2.imread(str(IMAGES[0])).shape
    assert "detections; annotated image written to out/deep/annotated.jpg" in res.stdout


@pytest.mark.parametrize("stride", [1, 2])
def test_drone_video_writes_its_video_into_a_missing_folder_at_the_sources_speed(model, tmp_path, stride):
    writer = cv2.VideoWriter(str(tmp_path / "clip.mp4"), cv2.VideoWriter_fourcc(*"mp4v"), 12, (320, 240))
    for p in IMAGES[:3] * 2:
        writer.write(cv2.resize(cv2.imread(str(p)), (320, 240)))
    writer.release()
    res = _run_here("drone_video.py", model, "clip.mp4", "--out", "out/tracked.mp4", "--track", "bytetrack",
                    "--stride", stride, "--count-line", "0,120,320,120", cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    cap = cv2.VideoCapture(str(tmp_path / "out" / "tracked.mp4"))
    frames, fps = int(cap.get(cv2.CAP_PROP_FRAME_COUNT)), cap.get(cv2.CAP_PROP_FPS)
    cap.release()
    assert frames == 6 // stride and fps == pytest.approx(12 / stride)
    assert res.stdout.count("frame ") == 6 // stride and "tracks [" in res.stdout


def test_drone_video_says_when_it_cannot_write(model, tmp_path):
    writer = cv2.VideoWriter(str(tmp_path / "clip.mp4"), cv2.VideoWriter_fourcc(*"mp4v"), 12, (64, 48))
    writer.write(cv2.resize(cv2.imread(str(IMAGES[0])), (64, 48)))
    writer.release()
    (tmp_path / "taken").write_text("a file where the folder should be")
    res = _run("drone_video.py", model, "clip.mp4", "--out", "taken/out.mp4", cwd=tmp_path)
    assert res.returncode == 1 and res.stderr.startswith("error: cannot write taken/out.mp4: its folder cannot be made")


def test_inspection_line_passes_and_fails_parts(model, tmp_path):
    parts = tmp_path / "parts"
    parts.mkdir()
    for p in IMAGES[:3]:
        (parts / p.name).write_bytes(p.read_bytes())
    ok = _run_here("inspection_line.py", model, parts, "--max-defects", "1000", cwd=tmp_path)
    assert ok.returncode == 0 and ok.stdout.strip().endswith("3/3 parts passed"), ok.stderr
    strict = _run_here("inspection_line.py", model, parts, "--max-defects", "0", "--min-conf", "0.3", cwd=tmp_path)
    assert strict.returncode == 1 and "FAIL" in strict.stdout
