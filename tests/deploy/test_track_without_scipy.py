"""``y9 predict video --track`` on a box without scipy (the torch-free ``[onnx]`` install) says why in one sentence
and exits with status 2: the video reader's thread is stopped before the error leaves (it aborted with
"terminate called without an active exception", status 134, when the interpreter exited under a running read)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import cv2

from tests.conftest import REPO, TEST_DATA

BLOCKED_RUN = textwrap.dedent("""
    import runpy, sys
    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "scipy"):
                raise ImportError(f"No module named {name!r}")
    sys.meta_path.insert(0, Block())
    sys.argv = ["y9", *sys.argv[1:]]
    runpy.run_module("y9cli", run_name="__main__")
""")


def test_track_without_scipy_exits_2_with_the_sentence(embedded_export, tmp_path):
    video = tmp_path / "video.mp4"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"mp4v"), 10, (320, 240))
    frames = sorted(TEST_DATA.glob("*.jpg"))
    for i in range(40):
        writer.write(cv2.resize(cv2.imread(str(frames[i % len(frames)])), (320, 240)))
    writer.release()
    onnx = embedded_export()
    env = {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    for _ in range(2):  # it aborted 3 runs of 3
        done = subprocess.run([sys.executable, "-c", BLOCKED_RUN, "predict", str(video), "-m", str(onnx), "--track",
                               "--project", str(tmp_path / "runs")], capture_output=True, text=True, timeout=120,
                              cwd=tmp_path, env=env)  # fmt: skip
        assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
        assert "tracking needs scipy" in done.stderr and "terminate called" not in done.stderr
