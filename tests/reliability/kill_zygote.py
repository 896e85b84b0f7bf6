"""A fork server for the kill trials: ``python -m tests.reliability.kill_zygote`` imports y9's command line, the
trainer and torch once, then forks one child per request; each child is a real process that installs its kill point
(``kill_child.install``) and runs ``y9 ARGS`` the way ``kill_child`` does in a fresh interpreter, and dies by the
SIGKILL its kill point sends (or ends with its exit status). Only the interpreter's start and the imports (~5 s of
CPU per ``y9 train`` process: python, torch, torch._dynamo through torch.optim) are paid once instead of per run.

The server runs no torch computation itself (no thread pool to inherit) and is started with the environment of
``kill_harness.child_env`` (one thread, fixed hash seed, the test's cache folder).

Protocol, one JSON line each way: the request ``{"kill", "args", "cwd", "stdout", "stderr"}`` (the two files the
child's output goes to), the answers ``{"pid": N}`` once the child runs, then ``{"status": S}`` (``os.waitstatus_to_
exitcode``: the exit status, or minus the signal that ended it). ``Zygote`` is the client.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import subprocess
import sys
import time
import traceback
from pathlib import Path


def _child(request: dict) -> None:
    """In the forked child: output to the request's files, the kill point, then ``y9 ARGS``; never returns: its
    SystemExit ends the interpreter as a ``y9`` process ends (exit handlers, threads joined, files flushed)."""
    code = 1
    try:
        os.chdir(request["cwd"])
        for fd, name in ((1, "stdout"), (2, "stderr")):
            out = os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(out, fd)
            os.close(out)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        from tests.reliability.kill_child import install
        from y9cli.app import main

        install(request["kill"])
        sys.argv = ["y9", *request["args"]]
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - the child ends here, with its traceback on its stderr
        traceback.print_exc()
    raise SystemExit(code)


#: imported before the first fork: what a ``y9 train`` run imports (torch._dynamo: by the first torch.optim
#: optimiser; the others on first use in setup, validation and the reports)
PRELOAD = (
    "torch", "torch.optim", "torch._dynamo", "y9cli.app", "y9cli.failure", "y9cli.notices", "y9train.run.train",
    "y9train.loop.trainer", "y9train.loss", "y9train.setup.data", "y9train.reports.validate", "y9train.reparam",
    "y9train.checkpoints.load", "y9core.evaluation.metrics", "y9core.evaluation.report", "faster_coco_eval",
    "tests.reliability.kill_child",
)  # fmt: skip


def serve() -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    answer = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        answer.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request)
        answer.write(json.dumps({"pid": pid}) + "\n")
        answer.flush()
        _, status = os.waitpid(pid, 0)
        answer.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n")
        answer.flush()


class Zygote:
    """The client: starts the server with ``env`` (in ``cwd``) and runs ``y9 ARGS`` children through it."""

    def __init__(self, env: dict[str, str], cwd: Path, logs: Path):
        self.logs = logs
        logs.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.reliability.kill_zygote"], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=False)  # fmt: skip
        self.cwd, self.count, self.pending = cwd, 0, b""

    def _answer(self, timeout: float) -> dict:
        end = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.pending:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError(f"the kill zygote did not answer within {timeout} s")
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError(f"the kill zygote ended (exit {self.proc.wait()})")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def run(self, kill: str, args: list[str], timeout: float = 300) -> tuple[int, str, str, float]:
        """``y9 ARGS`` in a forked child killed at ``kill``: (status, stdout, stderr, seconds)."""
        self.count += 1
        out, err = self.logs / f"{self.count}.out", self.logs / f"{self.count}.err"
        t0 = time.perf_counter()
        request = {"kill": kill, "args": [str(a) for a in args], "cwd": str(self.cwd), "stdout": str(out),
                   "stderr": str(err)}  # fmt: skip
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()
        pid = self._answer(60)["pid"]
        try:
            status = self._answer(timeout)["status"]
        except TimeoutError:
            os.kill(pid, 9)
            raise
        return status, out.read_text(errors="replace"), err.read_text(errors="replace"), time.perf_counter() - t0

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.proc.stdout.close()


if __name__ == "__main__":
    serve()
