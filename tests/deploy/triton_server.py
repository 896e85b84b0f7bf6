"""A real Triton Inference Server for the tests: the ``tritonserver`` binary that NVIDIA's ``nvidia-pytriton``
wheel bundles (Triton 2.51 in pytriton 0.7.0), run on this CPU machine.

That wheel bundles Triton's Python backend only, not its ONNX Runtime or TensorRT backends, so the tests serve
y9's repository (written by ``y9 triton``) with one change: the model's ``platform: "onnxruntime_onnx"`` line is
replaced by ``backend: "python"`` and ``1/model.py`` runs the same ``1/model.onnx`` with onnxruntime inside the
server. Everything else of the configuration (names, data types, dims, max_batch_size, dynamic batching,
instance groups, the y9_metadata parameter) is y9's, checked by the server when it loads the model.

The wheel is not installed into the venv (it pins numpy<2, and the venv has numpy 2): ``make setup`` downloads
it and a numpy 1.26 wheel with ``pip download --no-deps`` into ``.venv/wheels/``. The Python-backend stub of
Triton 2.51 is built against numpy 1.x: with numpy 2 it returns empty output tensors (seen here: "cannot
reshape array of size 0"), so the stub runs in a small environment made here: a venv whose own site-packages
hold numpy 1.26 and whose ``.pth`` file adds this venv's site-packages (for onnxruntime) after it.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from pathlib import Path

PYTRITON_WHEEL_GLOB = "nvidia_pytriton-*.whl"
NUMPY1_WHEEL_GLOB = "numpy-1.*.whl"

PYTHON_MODEL = '''\
"""Triton Python-backend model: runs 1/model.onnx with onnxruntime (written by y9's tests)."""
import json
from pathlib import Path

import numpy as np
import onnxruntime
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        here = Path(args["model_repository"]) / args["model_version"]
        self.session = onnxruntime.InferenceSession(str(here / "model.onnx"), providers=["CPUExecutionProvider"])
        self.input = config["input"][0]["name"]
        self.outputs = [o["name"] for o in config["output"]]

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, self.input).as_numpy()
            values = self.session.run(self.outputs, {self.input: x})
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor(n, v) for n, v in zip(self.outputs, values)]))
        return responses
'''


def find_wheels() -> tuple[Path, Path] | None:
    """(the nvidia-pytriton wheel, a numpy 1.x wheel) from ``sys.prefix/wheels``, or None when one is missing."""
    folder = Path(sys.prefix) / "wheels"
    pytriton = sorted(folder.glob(PYTRITON_WHEEL_GLOB))
    numpy1 = sorted(folder.glob(NUMPY1_WHEEL_GLOB))
    return (pytriton[-1], numpy1[-1]) if pytriton and numpy1 else None


def stub_environment(numpy_wheel: Path, dest: Path) -> Path:
    """A venv (no pip) holding numpy 1.x, then this venv's packages; returns its ``bin`` folder."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(dest)], check=True, timeout=120)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = dest / "lib" / version / "site-packages"
    with zipfile.ZipFile(numpy_wheel) as zf:
        zf.extractall(site)
    mine = next(p for p in map(Path, sys.path) if p.name == "site-packages" and p.is_relative_to(sys.prefix))
    (site / "zz_y9_venv.pth").write_text(f"{mine}\n")
    return dest / "bin"


def unpack_server(wheel: Path, dest: Path) -> Path:
    """Extract tritonserver, its backends and bundled libraries; install the Python-backend stub of this
    interpreter's version. Returns the folder holding ``bin/``, ``backends/`` and ``libs/``."""
    with zipfile.ZipFile(wheel) as zf:
        for member in zf.namelist():
            if member.startswith(("pytriton/tritonserver/", "nvidia_pytriton.libs/")):
                zf.extract(member, dest)
    server = dest / "pytriton" / "tritonserver"
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    stub = server / "python_backend_stubs" / version / "triton_python_backend_stub"
    if not stub.is_file():
        raise FileNotFoundError(f"{wheel.name} has no Python-backend stub for Python {version}")
    target = server / "backends" / "python" / "triton_python_backend_stub"
    shutil.copyfile(stub, target)
    for exe in (server / "bin" / "tritonserver", target):
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (dest / "libs").symlink_to(dest / "nvidia_pytriton.libs")
    return dest


def as_python_backend(model_dir: Path) -> None:
    """Swap the platform line of a y9 ONNX model folder for Triton's Python backend running that ONNX."""
    config = model_dir / "config.pbtxt"
    text = config.read_text()
    assert 'platform: "onnxruntime_onnx"' in text
    config.write_text(text.replace('platform: "onnxruntime_onnx"', 'backend: "python"'))
    (model_dir / "1" / "model.py").write_text(PYTHON_MODEL)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TritonServer:
    """``tritonserver`` on 127.0.0.1 (free HTTP and gRPC ports), started and stopped by the test itself."""

    def __init__(self, unpacked: Path, repository: Path, log: Path, python_bin: Path | None = None) -> None:
        self.unpacked, self.repository, self.log_path = unpacked, repository, log
        self.python_bin = python_bin or Path(sys.executable).parent
        self.http_port, self.grpc_port = _free_port(), _free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"grpc://127.0.0.1:{self.grpc_port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def start(self, timeout: float = 90.0) -> TritonServer:
        server = self.unpacked / "pytriton" / "tritonserver"
        env = dict(os.environ)
        # the server's bundled libraries, and this interpreter's libpython for the Python-backend stub
        libs = [str(self.unpacked / "libs"), sysconfig.get_config_var("LIBDIR"), env.get("LD_LIBRARY_PATH")]
        env["LD_LIBRARY_PATH"] = ":".join(filter(None, libs))
        env["PATH"] = f"{self.python_bin}:{env.get('PATH', '')}"  # the Python-backend stub's environment
        cmd = [
            str(server / "bin" / "tritonserver"), f"--model-repository={self.repository}",
            f"--backend-directory={server / 'backends'}", "--http-address=127.0.0.1", "--grpc-address=127.0.0.1",
            f"--http-port={self.http_port}", f"--grpc-port={self.grpc_port}", "--allow-metrics=false",
            "--exit-timeout-secs=2", "--log-verbose=0",
        ]  # fmt: skip
        self._log_fh = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, stdout=self._log_fh, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"tritonserver exited with status {self.proc.returncode}:\n{self.log()[-4000:]}"
                )
            try:
                with urllib.request.urlopen(f"http://{self.http_url}/v2/health/ready", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"tritonserver was not ready after {timeout:.0f} s:\n{self.log()[-4000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if getattr(self, "_log_fh", None) is not None:
            self._log_fh.close()

    def __enter__(self) -> TritonServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
