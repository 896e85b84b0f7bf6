"""``deterministic=true``: the rule that sets torch's kernel choice, that a run puts back what it found, that the
mode changes nothing on the CPU (no kernel reads memory it did not write), and the weights digest runs compare by.

Bit-for-bit repetition on a GPU, where the mode matters, is checked there: two
40-epoch runs of one seed per lease (docs/benchmarks.md, "session 15"); its speed cost is measured by bench_train_gpu.py.
"""

from __future__ import annotations

import hashlib
import os

import pytest
import torch

from tests.train.trainer_fixtures import coco_pair, one_thread, tiny_config, without_timing  # noqa: F401
from y9train.loop.trainer import Trainer
from y9train.setup.determinism import (
    CUBLAS_DETERMINISTIC_WORKSPACE,
    AlgorithmChoice,
    algorithm_choice,
    state_digest,
)

CUDA, CPU = torch.device("cuda", 0), torch.device("cpu")
FOUND = AlgorithmChoice(
    deterministic=False, cudnn_benchmark=False, cudnn_deterministic=False, cublas_workspace=None
)


def test_deterministic_turns_everything_reproducible_on_any_device():
    for device in (CUDA, CPU):
        choice = algorithm_choice(True, device, FOUND)
        assert choice == AlgorithmChoice(True, False, True, CUBLAS_DETERMINISTIC_WORKSPACE)
    # a workspace setting the user exported is kept (":16:8" is cuBLAS's other reproducible setting)
    mine = AlgorithmChoice(False, True, False, ":16:8")
    assert algorithm_choice(True, CUDA, mine).cublas_workspace == ":16:8"


def test_the_default_autotunes_cudnn_on_cuda_and_changes_nothing_on_cpu():
    assert algorithm_choice(False, CUDA, FOUND) == AlgorithmChoice(False, True, False, None)
    assert algorithm_choice(False, CPU, FOUND) == FOUND
    found_on = AlgorithmChoice(True, False, True, ":4096:8")  # a process that asked for determinism itself
    assert algorithm_choice(False, CUDA, found_on) == AlgorithmChoice(True, True, True, ":4096:8")


def test_cudnn_benchmark_limit_bounds_autotuning_on_cuda_only():
    limited = algorithm_choice(False, CUDA, FOUND, 3)
    assert limited == AlgorithmChoice(False, True, False, None, cudnn_benchmark_limit=3)
    assert "at most 3 algorithms per convolution" in limited.describe()
    assert "every" not in algorithm_choice(False, CUDA, FOUND, 0).describe()  # 0: all of them ("all")
    assert algorithm_choice(False, CUDA, AlgorithmChoice(False, True, False, None, 10)).cudnn_benchmark_limit == 10
    assert algorithm_choice(True, CUDA, FOUND, 3).cudnn_benchmark_limit is None  # no autotuning: nothing to bound
    assert algorithm_choice(False, CPU, FOUND, 3) == FOUND
    before, limit = AlgorithmChoice.current(), torch.backends.cudnn.benchmark_limit
    try:
        limited.apply()
        assert torch.backends.cudnn.benchmark_limit == 3
    finally:
        before.apply()
        torch.backends.cudnn.benchmark_limit = limit  # None on a build without cuDNN, which apply leaves alone


def test_apply_and_current_round_trip_and_restore():
    before = AlgorithmChoice.current()
    wanted = AlgorithmChoice(True, False, True, ":4096:8")
    try:
        wanted.apply()
        assert AlgorithmChoice.current() == wanted
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    finally:
        before.apply()
    assert AlgorithmChoice.current() == before


def _reference_digest(module: torch.nn.Module) -> str:
    """The slow way: every entry through numpy's own bytes (bf16 via its int16 view)."""
    h = hashlib.sha256()
    for name, t in module.state_dict().items():
        t = t.detach().cpu()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
        raw = t.view(torch.int16) if t.dtype == torch.bfloat16 else t
        h.update(raw.contiguous().numpy().tobytes())
    return h.hexdigest()


def test_state_digest_matches_a_slow_reference_and_sees_one_ulp():
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Linear(2, 2).bfloat16()
    )
    assert state_digest(net) == _reference_digest(net)
    before = state_digest(net)
    with torch.no_grad():
        w = net[0].weight
        w.view(-1)[5] = torch.nextafter(w.view(-1)[5], torch.tensor(float("inf")))
    assert state_digest(net) != before
    after = state_digest(net)
    net[1].num_batches_tracked += 1  # a buffer counts too
    assert state_digest(net) != after


def test_a_deterministic_run_on_cpu_trains_the_default_runs_weights_and_puts_torch_back(
    tmp_path, monkeypatch
):
    """On the CPU the mode changes no kernel: the same losses and weights as the default run. The mode holds while
    the run trains (deterministic mode also fills new tensors with NaN, so a kernel reading memory it never wrote
    would show here), and afterwards the process has its own settings back."""
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    before = AlgorithmChoice.current()
    assert not before.deterministic
    data = coco_pair(tmp_path)
    runs, during = [], []
    for name, deterministic in (("default", False), ("det", True), ("det2", True)):
        trainer = Trainer(
            tiny_config(data, tmp_path, name=name, deterministic=deterministic, device="cpu", save=False)
        )
        trainer.add_callback(
            "on_epoch_end", lambda t: during.append(torch.are_deterministic_algorithms_enabled())
        )
        result = trainer.fit()
        runs.append(
            (without_timing(result.history), state_digest(trainer.model), state_digest(trainer.ema.module))
        )
        assert AlgorithmChoice.current() == before
    assert during == [False] * (len(during) // 3) + [True] * (2 * len(during) // 3)
    assert runs[0] == runs[1] == runs[2]


@pytest.mark.parametrize("flag", [True, False])
def test_the_command_line_flag_reaches_the_config(flag):
    from y9train.run.args import parser, train_kwargs
    from y9train.run.train import build_config

    argv = ["--data", "d.yaml"] + (["--deterministic"] if flag else [])
    kwargs = train_kwargs(**vars(parser().parse_args(argv)))
    options = {
        k: v for k, v in kwargs.items() if k not in ("data", "model", "resume", "hyp_file", "overrides")
    }
    assert build_config(data="d.yaml", **options).deterministic is flag
