"""The torch-free deployment box for real (issue 44, "Done when" line 3): a virtual environment holding only what
``pip install 'y9[onnx]'`` installs (the base dependencies and the ``onnx`` extra, read from pyproject.toml), where
``import torch`` fails, runs ``y9 val model.onnx`` and gets the numbers this process gets.

The environment is made once and kept (``$Y9_TEST_VENVS``, else ~/.cache/y9-tests), named by a digest of the
requirements and the interpreter, so later runs pay nothing. With Y9_SHARED set (CI) a failure to make it fails the
test; on a user's box without network it is skipped."""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, TEST_DATA, y9_output


def _requirements() -> list[str]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["onnx"]]


def _cannot(message: str) -> None:
    if os.environ.get("Y9_SHARED"):
        pytest.fail(message)
    pytest.skip(message)


def _onnx_only_venv() -> Path:
    reqs = _requirements()
    key = hashlib.sha256("\n".join([sys.version, *reqs]).encode()).hexdigest()[:12]
    root = Path(os.environ.get("Y9_TEST_VENVS") or Path.home() / ".cache" / "y9-tests")
    venv = root / f"onnx-extra-{key}"
    python = venv / "bin" / "python"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"onnx-extra-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / "ready").is_file():
            base = getattr(sys, "_base_executable", sys.executable)
            made = subprocess.run([base, "-m", "venv", "--clear", str(venv)], capture_output=True, text=True)
            if made.returncode != 0:
                _cannot(f"cannot make a venv at {venv}: {made.stderr[-1000:]}")
            pip = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *reqs],
                                 capture_output=True, text=True, timeout=900)  # fmt: skip
            if pip.returncode != 0:
                _cannot(f"pip install of y9[onnx]'s requirements failed: {pip.stderr[-2000:]}")
            (venv / "ready").write_text("\n".join(reqs) + "\n")
    return python


def _all_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("all "))


def test_y9_val_of_an_onnx_runs_where_only_the_onnx_extra_is_installed(embedded_export, tmp_path):
    python = _onnx_only_venv()
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "Y9_CACHE_DIR": str(tmp_path / "cache")}
    probe = subprocess.run([str(python), "-c", "import torch"], capture_output=True, text=True, env=env)
    assert probe.returncode != 0 and "No module named 'torch'" in probe.stderr  # truly no torch there
    onnx = embedded_export()
    args = ["val", "--data", str(TEST_DATA / "coco8.yaml"), "--model", str(onnx), "--workers", "0"]
    res = subprocess.run([str(python), "-m", "y9cli", *args, "--project", str(tmp_path / "box")], cwd=tmp_path,
                         capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert "faster-coco-eval" not in res.stderr  # the evaluator is there: no 'install ...' sentence
    here = y9_output(*args, "--project", str(tmp_path / "here"))
    assert here.returncode == 0, here.stderr
    assert _all_line(res.stdout) == _all_line(here.stdout)  # the same numbers as with torch installed
    assert (tmp_path / "box" / "val" / "metrics.json").is_file()
