"""Kill a short coco8 CPU run (``y9 train`` in a child process, SIGKILL) at a handful of points, resume it, and check
that nothing is lost (see kill_harness for the checks); the resume arguments that cannot apply are refused.

The runs are children forked by one fork server per module (kill_zygote: the interpreter and torch start once, not
per run); the benchmark below and tests/cli/test_signals.py run ``y9`` as fresh processes.

The 50-point version of this is ``benchmarks/bench_kill_resume.py`` (result in docs/benchmarks.md).
"""

from __future__ import annotations

import pytest

from tests.conftest import REPO, made_once, shared_path, y9_output
from tests.reliability.kill_harness import RunSpec, child_env, kill_and_resume, read_reference, reference_run
from tests.reliability.kill_zygote import Zygote

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def coco8():
    return shared_path("datasets", "coco8", "data.yaml")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("kills")


@pytest.fixture(scope="module")
def env(workdir):
    return child_env(workdir / "cache")


@pytest.fixture(scope="module")
def zygote(env, workdir):
    server = Zygote(env, REPO, workdir / "logs")
    yield server
    server.close()


@pytest.fixture(scope="module")
def references(coco8, env, zygote, tmp_path_factory):
    """Uninterrupted runs, made once per test run (shared by the pytest-xdist workers): 3 epochs with validation
    (best epoch 1 at these sizes; a kill in epoch 3 finds epoch 1's last.pt on disk, while epoch 2's may still be
    written in the background) and 2 epochs without (best = latest)."""
    made = {}

    def get(val: bool):
        if val not in made:
            spec = RunSpec(coco8, epochs=3 if val else 2, val=val)
            folder = made_once(tmp_path_factory, f"kill-ref-{'val' if val else 'noval'}",
                               lambda f: reference_run(spec, f, env, zygote))  # fmt: skip
            made[val] = (spec, read_reference(folder / "reference"), folder / "reference")
        return made[val]

    return get


@pytest.mark.parametrize(
    "kill, val",
    [
        ("write:last:2", True),  # half of epoch 2's last.pt written to its temporary file
        (
            "event:on_step_end:3",
            True,
        ),  # in the middle of the last epoch (trained, not yet validated or saved)
        ("replace:last:2", False),  # right after the final last.pt appears: nothing left to train, best.pt is epoch 1's
    ],
)
def test_a_killed_run_resumes_without_losing_anything(kill, val, references, workdir, env, zygote):
    spec, reference, _ = references(val)
    result = kill_and_resume(spec, workdir, kill.replace(":", "-"), kill, reference, env, zygote=zygote)
    assert result.outcome == "resumed", result
    assert result.ok, result.failures
    if kill.startswith("replace:last"):
        assert result.best_recreated  # best.pt was missing: re-created from last.pt
    if kill.startswith("write"):
        assert result.tmp_at_kill  # the kill left a temporary file; the resume removed it (checked in ok)


def test_the_official_recipe_resumes_exactly_with_deterministic(coco8, workdir, env, zygote):
    """``--hyp official --deterministic`` (the accumulation ramp, the dropped gradients at an epoch's end, the
    per-epoch LR step), killed in its last epoch before the epoch was saved, ends as the uninterrupted run does. The
    flags travel in the run's settings: the resume is given only the run folder (and ``--workers``)."""
    spec = RunSpec(coco8, epochs=3, extra=("--hyp", "official", "--deterministic"))
    folder = workdir / "ref-official"
    folder.mkdir()
    reference = reference_run(spec, folder, env, zygote)
    result = kill_and_resume(spec, workdir, "official-step-3", "event:on_step_end:3", reference, env, zygote=zygote)
    # epoch 2's last.pt may still be on its way to disk (async_save): the resume then starts from epoch 1's
    assert result.outcome == "resumed" and result.done_at_kill in (1, 2), result
    assert result.ok, result.failures


def _train(*args):
    return y9_output("train", *args)


def test_resume_arguments_that_cannot_apply_are_refused(references, coco8):
    _, _, run = references(True)
    before = (run / "weights" / "last.pt").read_bytes()
    from y9train.run.train import train

    for kwargs, names in [
        ({"data": coco8}, "--data"),
        ({"model": "gelan-s"}, "--model"),
        ({"imgsz": 96}, "--imgsz"),
        ({"overrides": ["imgsz=96", "epochs=4"]}, "imgsz="),
        ({"name": "other"}, "--name"),
    ]:
        with pytest.raises(ValueError, match="cannot be given with it") as err:
            train(resume=run, **kwargs)
        assert names in str(err.value) and str(run) in str(err.value)
    with pytest.raises(
        ValueError, match=r"with epochs=2: 3 epochs are already done; expected epochs=3 or more"
    ):
        train(resume=run, overrides=["epochs=2"], verbose=False)
    res = _train("--resume", str(run), "epochs=2")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [f"error: cannot resume {run / 'weights' / 'last.pt'} with epochs=2: "
                                               "3 epochs are already done; expected epochs=3 or more (more than 3 "
                                               "to train further)."]  # fmt: skip
    res = _train("--resume", str(run), "--data", str(coco8))
    assert (
        res.returncode == 2
        and "--data cannot be given with it" in res.stderr
        and "Traceback" not in res.stderr
    )
    res = _train("--resume", str(run), "--workers", "0")  # a finished run: nothing left, said plainly
    assert res.returncode == 0, res.stderr
    assert "all 3 epochs are done; nothing left to train" in res.stdout and "epoch 4/3" not in res.stdout
    assert (run / "weights" / "last.pt").read_bytes() == before
