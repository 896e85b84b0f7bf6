"""Training entry points: ``train(...)`` (the library call behind ``y9 train``) and ``python -m y9train.run.train``
(the same options as ``y9 train`` less ``--devices``, parsed by ``y9train.run.args``; torchrun starts it).

Precedence of settings: ``Hyp`` defaults < the ``hyp`` YAML file < explicit options < ``key=value`` overrides.
Resuming (``resume="auto"``, a run folder or a last.pt) takes every setting from the checkpoint; options and
``key=value`` overrides given with it change those settings (e.g. ``epochs=10`` to train further), except what
makes the run what it is: data, model, image size, hyp file and run folder (``RESUME_FIXED``), which are refused.

Under torchrun (``WORLD_SIZE > 1`` in the environment) ``train`` imports ``y9train.run.distributed`` and trains one
process of a DistributedDataParallel run (``batch`` is then the global batch); otherwise nothing distributed is
imported.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from y9core.errors import Y9Error
from y9train.loop.result import TrainResult
from y9train.loop.trainer import Trainer
from y9train.optimisation.hyp import TrainConfig, apply_overrides, load_hyp, parse_overrides
from y9train.run.args import parser, summary, train_kwargs

DEFAULT_MODEL = "gelan-s"
#: settings a resumed run keeps from its last.pt: giving them with --resume is refused
RESUME_FIXED = ("data", "model", "imgsz", "hyp_file", "project", "name", "exist_ok", "save_dir")


def build_config(
    *,
    data: str | Path,
    model: str = DEFAULT_MODEL,
    hyp_file: str | Path | None = None,
    overrides: list[str] | dict[str, Any] | None = None,
    **options: Any,
) -> TrainConfig:
    """A ``TrainConfig`` from options (``TrainConfig`` field names; None = default), a hyp file and overrides."""
    if not str(data):
        raise ValueError("no data given; expected --data path/to/data.yaml.")
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(options) - fields)
    if unknown:
        raise TypeError(f"unknown training option(s) {', '.join(unknown)}; expected TrainConfig field names.")
    given = {k: v for k, v in options.items() if v is not None}
    config = TrainConfig(data=str(data), model=str(model), hyp=load_hyp(hyp_file), **given)
    if overrides:
        items = parse_overrides(overrides) if isinstance(overrides, (list, tuple)) else dict(overrides)
        config = apply_overrides(config, items)
    return config


def world_size() -> int:
    """Processes of this run as torchrun announces them (``WORLD_SIZE``; 1 when not set)."""
    value = os.environ.get("WORLD_SIZE", "1").strip() or "1"
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable WORLD_SIZE={value!r} is not an integer.") from None


def check_distributed_device(device: str | None, processes: int) -> None:
    """One sentence when ``device`` names GPUs in a run of several processes (each takes GPU LOCAL_RANK)."""
    text = "" if device is None else str(device).strip().lower()
    if text not in ("", "auto", "cpu", "cuda"):
        raise ValueError(
            f"device={device!r} in a torchrun run of {processes} processes; expected cpu, cuda or none (process "
            "LOCAL_RANK takes visible GPU LOCAL_RANK: choose GPUs with CUDA_VISIBLE_DEVICES or y9 train --devices 0,1)."
        )


def resume_overrides(
    resume: str | Path, explicit: dict[str, Any], overrides: list[str] | dict[str, Any] | None
) -> dict[str, Any]:
    """The settings a resumed run changes: ``key=value`` overrides and explicit options (None = not given).

    One sentence naming them when any would change what makes the run (``RESUME_FIXED``)."""
    extra = parse_overrides(overrides) if isinstance(overrides, (list, tuple)) else dict(overrides or {})
    given = {k: v for k, v in explicit.items() if v is not None}
    fixed = [f"--{k.replace('_file', '').replace('_', '-')}" for k in RESUME_FIXED if k in given]
    fixed += [f"{k}=" for k in RESUME_FIXED if k in extra]
    if fixed:
        raise ValueError(
            f"--resume {resume} continues a run with the data, model, image size, hyperparameter file and folder "
            f"recorded in its last.pt, so {', '.join(fixed)} cannot be given with it; expected only options such "
            "as --device, --workers, --epochs or key=value overrides (start a new run, or fine-tune with --model "
            "path/to/last.pt)."
        )
    return {**given, **extra}


def train(
    data: str | Path | None = None,
    model: str | None = None,
    *,
    resume: str | Path | None = None,
    hyp_file: str | Path | None = None,
    overrides: list[str] | dict[str, Any] | None = None,
    hooks=None,
    callbacks=None,
    **options: Any,
) -> TrainResult:
    """Train (or resume) and return the ``TrainResult``. See ``TrainConfig`` for ``options``.

    Under torchrun (``WORLD_SIZE > 1``) and without ``hooks``, this process trains through
    ``y9train.run.distributed.DistributedHooks`` (closed at the end)."""
    processes = world_size()
    if hooks is None and processes > 1:
        check_distributed_device(options.get("device"), processes)
        from y9train.run.distributed import DistributedHooks

        hooks = DistributedHooks.from_env()
        try:
            return _train(data, model, resume, hyp_file, overrides, hooks, callbacks, options)
        finally:
            hooks.close()
    return _train(data, model, resume, hyp_file, overrides, hooks, callbacks, options)


def _train(
    data, model, resume, hyp_file, overrides, hooks, callbacks, options: dict[str, Any]
) -> TrainResult:
    if resume:
        from y9train.loop.state import resume_path

        explicit = {"data": data, "model": model, "hyp_file": hyp_file, **options}
        extra = resume_overrides(resume, explicit, overrides)
        trainer = Trainer.from_checkpoint(resume_path(resume), extra, hooks=hooks, callbacks=callbacks)
    else:
        if data is None:
            raise ValueError(
                "no data given; expected --data path/to/data.yaml (or --resume to continue a run)."
            )
        config = build_config(
            data=data, model=model or DEFAULT_MODEL, hyp_file=hyp_file, overrides=overrides, **options
        )
        trainer = Trainer(config, hooks=hooks, callbacks=callbacks)
    return trainer.fit()


def main(argv: list[str] | None = None) -> None:
    """``python -m y9train.run.train``: ``y9 train``'s options (``y9train.run.args``) in this process (what torchrun
    starts). Bad input prints one ``error: ...`` sentence and exits with status 2; rank 0 prints the summary."""
    values = vars(parser().parse_intermixed_args(argv))
    try:
        result = train(**train_kwargs(**values))
    except (Y9Error, FileNotFoundError, ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if os.environ.get("RANK", "0") == "0":  # torchrun: rank 0 reports
        if result.timing is not None:  # timing.json gets the time after fit too, up to the interpreter's exit
            result.timing.record_exit(result.save_dir)
        print(summary(result), flush=True)


if __name__ == "__main__":
    main()
