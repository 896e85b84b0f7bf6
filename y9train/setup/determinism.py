"""How torch picks its kernels for a training run: fastest (cuDNN autotuning) or reproducible to the bit.

``TrainConfig.deterministic`` decides, here only (``algorithm_choice``):

- False (the default): on CUDA, cuDNN times its convolution algorithms at the first call of each shape and keeps
  the fastest (``cudnn.benchmark``); some CUDA kernels (atomic adds in index/scatter backward passes, cuDNN's
  own choices) sum in no fixed order, so two runs of one seed on one machine part from their first steps
  (docs/benchmarks.md, session 15).
- True: ``torch.use_deterministic_algorithms(True)`` (a kernel that has no deterministic implementation raises,
  naming itself, rather than running quietly), cuDNN autotuning off and its deterministic algorithms on, and
  cuBLAS given a fixed workspace (``CUBLAS_WORKSPACE_CONFIG=:4096:8``, set only where the environment does not
  set it) so its reductions keep one order. Then one seed trains the same weights, bit for bit, on the same
  machine, GPU and software (two 40-epoch GPU runs of one seed in separate processes showed it: docs/benchmarks.md,
  "reproducibility", which also gives what it costs in speed).

The choice is process-wide torch state: the trainer applies it in ``setup`` and puts back what it found when
``fit`` ends (``AlgorithmChoice.current`` / ``apply``).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

import torch

#: the cuBLAS workspace setting under which its results do not depend on the stream / workspace reuse
CUBLAS_DETERMINISTIC_WORKSPACE = ":4096:8"


@dataclass(frozen=True)
class AlgorithmChoice:
    """torch's process-wide kernel selection: deterministic algorithms, cuDNN autotuning and determinism, and
    the cuBLAS workspace variable (None: unset)."""

    deterministic: bool
    cudnn_benchmark: bool
    cudnn_deterministic: bool
    cublas_workspace: str | None
    cudnn_benchmark_limit: int | None = None  # algorithms cuDNN times per convolution (None: left as found)

    @classmethod
    def current(cls) -> AlgorithmChoice:
        """The settings in force now (to put back later)."""
        return cls(
            deterministic=torch.are_deterministic_algorithms_enabled(),
            cudnn_benchmark=bool(torch.backends.cudnn.benchmark),
            cudnn_deterministic=bool(torch.backends.cudnn.deterministic),
            cublas_workspace=os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
            cudnn_benchmark_limit=torch.backends.cudnn.benchmark_limit,
        )

    def apply(self) -> None:
        """Make these the process's settings (the cuBLAS variable is set or removed to match)."""
        if self.cublas_workspace is None:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
        else:
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = self.cublas_workspace
        torch.use_deterministic_algorithms(self.deterministic)
        torch.backends.cudnn.benchmark = self.cudnn_benchmark
        torch.backends.cudnn.deterministic = self.cudnn_deterministic
        if self.cudnn_benchmark_limit is not None:
            torch.backends.cudnn.benchmark_limit = int(self.cudnn_benchmark_limit)

    def describe(self) -> str:
        """One line for the run's log."""
        if self.deterministic:
            return (
                "deterministic: torch's deterministic algorithms, cuDNN autotuning off, cuBLAS workspace "
                f"{self.cublas_workspace}: one seed trains the same weights on this machine"
            )
        tuning = "on" if self.cudnn_benchmark else "off"
        if self.cudnn_benchmark and self.cudnn_benchmark_limit is not None:
            tuning += f", at most {self.cudnn_benchmark_limit or 'all'} algorithms per convolution"
        return f"deterministic: off (cuDNN autotuning {tuning})"


def algorithm_choice(
    deterministic: bool, device: torch.device, found: AlgorithmChoice, benchmark_limit: int | None = None
) -> AlgorithmChoice:
    """The run's settings, given what the process has now (``found``).

    deterministic: everything reproducible (the cuBLAS variable kept if the environment sets one); else on CUDA
    cuDNN autotuning on and torch's deterministic mode as found, with ``benchmark_limit`` (``TrainConfig.
    cudnn_benchmark_limit``; None keeps torch's, 10; 0 tries every algorithm) bounding how many algorithms cuDNN
    times per convolution shape, the first-step cost of autotuning; on CPU nothing changes (CPU kernels used in
    training are deterministic, and cuDNN is not used)."""
    if deterministic:
        workspace = found.cublas_workspace or CUBLAS_DETERMINISTIC_WORKSPACE
        return AlgorithmChoice(
            True, cudnn_benchmark=False, cudnn_deterministic=True, cublas_workspace=workspace,
            cudnn_benchmark_limit=found.cudnn_benchmark_limit,
        )  # fmt: skip
    if device.type == "cuda":
        limit = found.cudnn_benchmark_limit if benchmark_limit is None else int(benchmark_limit)
        return AlgorithmChoice(found.deterministic, True, found.cudnn_deterministic, found.cublas_workspace, limit)
    return found


def state_digest(module: torch.nn.Module) -> str:
    """SHA-256 of ``module``'s parameters and buffers: each entry's name, dtype, shape and bytes, in
    ``state_dict`` order. Two runs trained the same weights exactly when their digests are equal."""
    h = hashlib.sha256()
    for name, t in module.state_dict().items():
        t = t.detach().to("cpu").contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)};".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()
