"""Run ``y9`` as a user does, in a child process under resource limits, and measure its peak memory.

The peak is the child's own ``VmHWM`` (the high-water mark of its resident memory since it started), which the child
writes to a file at exit: ``ru_maxrss`` of a child cannot be used, since Linux starts it at the parent's resident
size at the fork (a pytest process with torch loaded is larger than the limit under test).

Limits: ``address_space`` (RLIMIT_AS: a decode that would need gigabytes fails instead of taking the machine's
memory, should a check regress) and ``file_size`` (RLIMIT_FSIZE, the ``ulimit -f`` of issue 34, with SIGXFSZ
ignored as Python does, so a write past the limit fails with EFBIG instead of killing the process).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO

_CHILD = """
import atexit, runpy, sys

def _write_peak(path):
    with open("/proc/self/status") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    with open(path, "w") as out:
        out.write(str(kb))

atexit.register(_write_peak, sys.argv.pop(1))
sys.argv[0] = "y9"
runpy.run_module("y9cli", run_name="__main__", alter_sys=True)
"""


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    peak_mb: float  # the child's resident-memory high-water mark

    @property
    def errors(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("error: ")]


def run_y9(
    args: list[str],
    workdir: Path,
    *,
    address_space: int | None = 3 << 30,
    file_size: int | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
    code: Path = REPO,
) -> Run:
    """``y9 ARGS`` in a child process (cwd ``workdir``) under the given limits (bytes); ``code``: the checkout whose
    y9 runs (another one for a before/after comparison). A run past ``timeout`` seconds is killed (returncode -9)."""

    def limits() -> None:
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        if file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    peak_file = workdir / f".peak-{os.getpid()}-{len(list(workdir.glob('.peak-*')))}"
    child_env = {
        **os.environ,
        "PYTHONPATH": str(code),
        "OMP_NUM_THREADS": "1",
        "COLUMNS": "200",
        **(env or {}),
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, str(peak_file), *args],
            cwd=workdir, env=child_env, capture_output=True, text=True, timeout=timeout, preexec_fn=limits,
        )  # fmt: skip
        returncode, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        returncode, stdout, stderr = (
            -9,
            _text(exc.stdout),
            _text(exc.stderr) + f"\n(killed after {timeout:g} s)",
        )
    peak = int(peak_file.read_text()) / 1024 if peak_file.is_file() else float("nan")
    peak_file.unlink(missing_ok=True)
    return Run(returncode, stdout, stderr, peak)


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else data or ""
