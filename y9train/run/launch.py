"""``y9 train --devices 0,1``: one training process per device through torchrun (``torch.distributed.run``).

``parse_devices("0,1") -> Devices`` and ``torchrun_command(devices, args) -> (argv, env)``: the command
``python -m torch.distributed.run --standalone --nproc-per-node N -m y9train.run.train ARGS --device cuda`` with
``CUDA_VISIBLE_DEVICES`` set to the chosen GPUs (mapped through an existing ``CUDA_VISIBLE_DEVICES``), so that
process ``LOCAL_RANK`` trains on the ``LOCAL_RANK``-th chosen GPU. ``--devices cpu,cpu`` starts CPU processes
(gloo). The rest of the environment is passed on unchanged (NCCL settings included). The launching process imports
torch only to count the GPUs (no CUDA context) and never torch.distributed: it waits for torchrun.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Devices:
    """``gpus``: GPU indices, one process each (empty for CPU processes); ``processes``: how many."""

    gpus: tuple[int, ...]
    processes: int

    @property
    def cpu(self) -> bool:
        return not self.gpus


def parse_devices(spec: str) -> Devices:
    """``"0,1"`` -> GPUs 0 and 1; ``"cpu,cpu"`` -> two CPU processes. One sentence on anything else."""
    items = [s.strip().lower() for s in str(spec).split(",")]
    if not items or any(not s for s in items):
        raise ValueError(
            f"--devices {spec!r} has an empty entry; expected GPU indices such as 0,1 (or cpu,cpu)."
        )
    if all(s == "cpu" for s in items):
        return Devices((), len(items))
    if not all(s.isdigit() for s in items):
        raise ValueError(
            f"--devices {spec!r} mixes or misspells devices; expected GPU indices such as 0,1 or only cpu entries."
        )
    gpus = tuple(int(s) for s in items)
    if len(set(gpus)) != len(gpus):
        raise ValueError(
            f"--devices {spec!r} names a GPU twice; expected each GPU once (one process per GPU)."
        )
    return Devices(gpus, len(gpus))


def torchrun_command(devices: Devices, train_args: list[str], env: dict[str, str] | None = None):
    """``(argv, env)`` of the torchrun launch of ``python -m y9train.run.train train_args`` on ``devices``.

    ``train_args`` must not hold ``--device``/``--devices``: the command adds ``--device cpu`` or ``--device cuda``.
    """
    env = dict(os.environ if env is None else env)
    if devices.cpu:
        device = "cpu"
    else:
        device = "cuda"
        visible = [v.strip() for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
        if visible:
            missing = [g for g in devices.gpus if g >= len(visible)]
            if missing:
                raise ValueError(
                    f"--devices names GPU {missing[0]} but CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']} makes "
                    f"{len(visible)} visible; expected indices below {len(visible)}."
                )
            env["CUDA_VISIBLE_DEVICES"] = ",".join(visible[g] for g in devices.gpus)
        else:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in devices.gpus)
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone",
            "--nproc-per-node", str(devices.processes), "-m", "y9train.run.train",
            *train_args, "--device", device]  # fmt: skip
    return argv, env


def check_gpus(devices: Devices) -> None:
    """One sentence when ``devices`` names GPUs that torch does not see (before any process starts)."""
    if devices.cpu:
        return
    import torch  # device_count() reads the driver's count without creating a CUDA context

    count = torch.cuda.device_count()
    missing = [g for g in devices.gpus if g >= count]
    if missing:
        from y9core.errors import BackendUnavailableError

        raise BackendUnavailableError(
            f"--devices names GPU {missing[0]} but torch sees {count} CUDA device(s); expected indices below {count} "
            "(or --devices cpu,cpu for CPU processes)."
        )


def launch(devices: Devices, train_args: list[str]) -> int:
    """Check the GPUs, then run torchrun in the foreground; returns its exit status."""
    check_gpus(devices)
    argv, env = torchrun_command(devices, train_args)
    return subprocess.run(argv, env=env, check=False).returncode
