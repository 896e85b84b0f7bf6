"""Kill a short CPU training run (the real ``y9 train`` in a subprocess) at a chosen point, resume it with
``y9 train --resume``, and check that nothing was lost against an uninterrupted reference run.

Used by ``tests/reliability/test_kill_resume.py`` (a handful of kill points) and ``benchmarks/bench_kill_resume.py``
(N seeded ones). A trial passes when, after the resume: ``last.pt`` and ``best.pt`` exist and load (digest checked, model rebuilt),
``best.pt`` holds the best epoch ``last.pt`` records (and the reference run's best weights), every epoch finished
before the kill is kept unchanged, the run ends with the reference run's history and weights (resume is exact on
CPU), and no temporary file is left in the run's weights folder.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from tests.reliability.kill_zygote import Zygote
from tests.train.trainer_fixtures import without_timing

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class RunSpec:
    """A short training run: by default gelan-t on ``data`` (coco8), CPU, no loader workers. On a GPU only a run
    with ``--deterministic`` among ``extra`` can end exactly where its uninterrupted twin ends."""

    data: Path
    epochs: int = 3
    imgsz: int = 64
    batch: int = 4
    val: bool = True
    model: str = "gelan-t"
    device: str = "cpu"
    workers: int = 0
    extra: tuple[str, ...] = ()  # more ``y9 train`` options, e.g. ("--deterministic", "--hyp", "official")
    timeout: float = 300  # seconds one process may take

    def train_args(self, project: Path, name: str) -> list[str]:
        args = ["train", "--data", str(self.data), "--model", self.model, "--imgsz", str(self.imgsz),
                "--epochs", str(self.epochs), "--batch", str(self.batch), "--workers", str(self.workers),
                "--device", self.device, "--project", str(project), "--name", name, "plots=false",
                *self.extra]  # fmt: skip  (no pictures: what a kill can lose is in the files checked)
        return args + ([] if self.val else ["--no-val"])

    def resume_args(self, run_dir: Path) -> list[str]:
        return ["train", "--resume", str(run_dir), "--workers", str(self.workers)]


def child_env(cache_dir: Path) -> dict[str, str]:
    """One thread per process (deterministic and fair on a shared box), fixed hash seed, caches in ``cache_dir``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    env["Y9_CACHE_DIR"] = str(cache_dir)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@dataclass
class ChildRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def killed(self) -> bool:
        return self.returncode == -signal.SIGKILL


def run_child(kill: str, args: list[str], env: dict[str, str], *, kill_after: float | None = None,
              timeout: float = 300, zygote: Zygote | None = None) -> ChildRun:  # fmt: skip
    """``y9 ARGS`` in a subprocess, killed at ``kill`` (see kill_child) or by this process after ``kill_after`` s;
    with ``zygote``, a child forked by that server (started with ``env``; no ``kill_after``)."""
    if zygote is not None:
        if kill_after is not None:
            raise ValueError("kill_after needs a fresh subprocess, not a zygote's child")
        return ChildRun(*zygote.run(kill, args, timeout))
    cmd = [sys.executable, "-m", "tests.reliability.kill_child", kill, "--", *args]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=kill_after if kill_after is not None else timeout)
    except subprocess.TimeoutExpired:
        if kill_after is None:
            proc.kill()
            raise
        proc.send_signal(signal.SIGKILL)  # an external kill -9 at a random moment
        out, err = proc.communicate(timeout=timeout)
    return ChildRun(proc.returncode, out, err, time.perf_counter() - t0)


@dataclass
class Reference:
    """What the uninterrupted run ends with."""

    history: list[dict]
    ema: dict[str, torch.Tensor]
    best_epoch: int  # 1-based
    best: dict[str, torch.Tensor]
    seconds: float


def reference_run(spec: RunSpec, workdir: Path, env: dict[str, str], zygote: Zygote | None = None) -> Reference:
    """The uninterrupted run of ``spec``, trained into ``workdir/reference`` (its seconds in ``seconds.txt``)."""
    res = run_child("none", spec.train_args(workdir, "reference"), env, timeout=spec.timeout, zygote=zygote)
    if res.returncode != 0:
        raise RuntimeError(f"the reference run failed: {res.stderr[-2000:]}")
    (workdir / "reference" / "seconds.txt").write_text(f"{res.seconds!r}\n")
    return read_reference(workdir / "reference")


def read_reference(run_dir: Path) -> Reference:
    """What ``reference_run`` trained into ``run_dir``, read back from its checkpoints."""
    from y9train.checkpoints.load import read_checkpoint

    weights = run_dir / "weights"
    last, best = read_checkpoint(weights / "last.pt"), read_checkpoint(weights / "best.pt")
    return Reference(without_timing(last["train"]["history"]), last["model"], last["meta"]["best_epoch"],
                     best["model"], float((run_dir / "seconds.txt").read_text()))  # fmt: skip


@dataclass
class TrialResult:
    kill: str
    val: bool
    outcome: str  # resumed | restarted (no last.pt yet) | not reached (the run ended first)
    done_at_kill: int  # epochs in last.pt right after the kill
    tmp_at_kill: list[str]
    best_recreated: bool
    seconds: float
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def kill_and_resume(spec: RunSpec, workdir: Path, name: str, kill: str, reference: Reference,
                    env: dict[str, str], *, kill_after: float | None = None,
                    zygote: Zygote | None = None) -> TrialResult:  # fmt: skip
    """One trial: train killed at ``kill`` (or after ``kill_after`` s), then ``y9 train --resume``, then the checks
    (the processes forked by ``zygote`` when given: see run_child)."""
    from y9core.errors import ModelFileError
    from y9train.checkpoints.load import model_from_payload, read_checkpoint
    from y9train.loop.state import read_train_state
    from y9train.reports.reporting import read_csv

    t0 = time.perf_counter()
    run_dir = workdir / name
    weights = run_dir / "weights"
    label = kill if kill_after is None else f"time:{kill_after:.2f}s"
    first = run_child(kill, spec.train_args(workdir, name), env, kill_after=kill_after, timeout=spec.timeout,
                      zygote=zygote)  # fmt: skip
    result = TrialResult(label, spec.val, "resumed", 0, [], False, 0.0)
    fail = result.failures.append
    if not first.killed and first.returncode != 0:
        fail(f"the run failed before the kill (exit {first.returncode}): {first.stderr[-500:]}")
        return result
    if not first.killed:
        result.outcome = "not reached"
    result.tmp_at_kill = sorted(p.name for p in weights.glob(".*.tmp")) if weights.is_dir() else []
    before: list[dict] = []
    if (weights / "last.pt").exists():
        try:
            _, state = read_train_state(weights / "last.pt")
        except ModelFileError as exc:
            fail(f"last.pt after the kill cannot be read: {exc}")
            return result
        before = without_timing(state["history"])
        result.done_at_kill = len(before)
    else:
        rows = read_csv(run_dir / "results.csv") if (run_dir / "results.csv").exists() else []
        if rows:
            fail(f"results.csv records {len(rows)} finished epochs but there is no last.pt")
        result.outcome = "restarted"
        again = run_child("none", spec.resume_args(run_dir), env, timeout=spec.timeout, zygote=zygote)
        said = again.stderr.strip().splitlines()
        if again.returncode != 2 or len(said) != 1 or "last.pt" not in said[0] or str(run_dir) not in said[0]:
            fail(f"resuming without a last.pt did not say so in one sentence: {again.stderr[-500:]}")
        result.seconds = time.perf_counter() - t0
        return result

    resumed = run_child("none", spec.resume_args(run_dir), env, timeout=spec.timeout, zygote=zygote)
    result.best_recreated = "re-created from" in resumed.stdout
    if resumed.returncode != 0:
        fail(f"the resume failed (exit {resumed.returncode}): {resumed.stderr[-800:]}")
        return result
    try:
        payload, state = read_train_state(weights / "last.pt")
        best = read_checkpoint(weights / "best.pt")
        # both load as models: load_checkpoint's file, zip-CRC, digest and entry checks are read_checkpoint's (done
        # above, on the same bytes); what it adds is this rebuild of the model (not a second read of each file)
        model_from_payload(payload, str(weights / "last.pt"))
        model_from_payload(best, str(weights / "best.pt"))
    except (ModelFileError, FileNotFoundError) as exc:
        fail(f"after the resume: {exc}")
        return result
    history = without_timing(state["history"])
    if history[: len(before)] != before:
        fail("an epoch finished before the kill changed or was lost in the resume")
    if history != reference.history:
        fail(f"the resumed run's {len(history)} epoch records differ from the uninterrupted run's")
    if best["meta"].get("epoch") != payload["meta"]["best_epoch"]:
        fail(
            f"best.pt holds epoch {best['meta'].get('epoch')}, last.pt records best epoch {payload['meta']['best_epoch']}"
        )
    if payload["meta"]["best_epoch"] != reference.best_epoch or not _same(best["model"], reference.best):
        fail("best.pt does not hold the uninterrupted run's best weights")
    if not _same(payload["model"], reference.ema):
        fail("last.pt's weights differ from the uninterrupted run's")
    rows = read_csv(run_dir / "results.csv")
    if [r["epoch"] for r in rows] != list(range(1, spec.epochs + 1)):
        fail(f"results.csv holds epochs {[r['epoch'] for r in rows]}")
    if left := sorted(p.name for p in weights.glob(".*.tmp")):
        fail(f"temporary files left after the resume: {left}")
    result.seconds = time.perf_counter() - t0
    return result
