"""The command line of ``python -m y9train.run.train``: the process torchrun starts for ``y9 train --devices``.

Its options are those of ``y9 train`` less ``--devices`` (which starts torchrun): ``y9 train --devices 0,1``
forwards its parsed values as this command line. It is parsed with argparse, so that the library never imports
its command-line package (``y9cli``); tests/cli/test_train_entry.py checks that both accept the same options and
hand ``train`` the same arguments.

``parser()`` builds the parser; ``train_kwargs(**values)`` turns parsed values (the names of ``y9 train``'s
parameters) into the keyword arguments of ``y9train.run.train.train``; ``summary(result)`` is the report printed at
the end; ``split_resume_path`` separates ``--resume [PATH]`` from the ``key=value`` overrides.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

#: choices of --amp and --cache (the enums of ``y9 train``)
AMP_CHOICES = ("auto", "bf16", "fp16", "off")
CACHE_CHOICES = ("none", "ram", "disk")


def split_resume_path(resume: bool, args: list[str]) -> tuple[str | None, list[str]]:
    """``--resume [PATH]`` on the command line: the flag, then an optional path among the positional arguments.

    Returns ``(resume target or None, the key=value overrides)``: "auto" when the flag has no path.
    """
    paths = [a for a in args if "=" not in a]
    rest = [a for a in args if "=" in a]
    if not resume:
        return None, list(args)  # parse_overrides names any stray argument
    if len(paths) > 1:
        raise ValueError(f"--resume takes one run folder or last.pt, got {len(paths)}: {', '.join(paths)}.")
    return (paths[0] if paths else "auto"), rest


def parser() -> argparse.ArgumentParser:
    """The argparse parser of ``python -m y9train.run.train`` (dest names are ``y9 train``'s parameter names)."""
    p = argparse.ArgumentParser(
        prog="python -m y9train.run.train",
        description="Train a YOLOv9 / GELAN model: the options of `y9 train` (see `y9 train --help`) less "
        "--devices; under torchrun each process trains one share of a DistributedDataParallel run.",
    )
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                   help="Hyperparameter or option overrides (after --resume, an optional run folder or last.pt).")
    p.add_argument("--data", type=Path, help="data.yaml (path, train, val, names).")
    p.add_argument("--model", help="A model name (gelan-t ... yolov9-e) or a checkpoint to start from.")
    p.add_argument("--imgsz", type=int, help="Training size, pixels (multiple of 32).")
    p.add_argument("--epochs", type=int, help="Epochs to train.")
    p.add_argument("--batch", type=int, help="Images per batch (under torchrun: the global batch).")
    p.add_argument("--device", help="cpu, cuda or a GPU index.")
    p.add_argument("--workers", type=int, help="DataLoader worker processes.")
    p.add_argument("--project", help="Folder of runs (default runs/train).")
    p.add_argument("--name", help="Run folder name (default: a new numbered folder exp, exp2 ...).")
    p.add_argument("--exist-ok", action="store_true", help="Train into a named run folder that holds a run.")
    p.add_argument("--resume", action="store_true", help="Resume a run (newest, or the run folder / last.pt given).")
    p.add_argument("--hyp", help="Recipe name (default, official) or a hyperparameter YAML file.")
    p.add_argument("--amp", choices=AMP_CHOICES, help="Mixed precision.")
    p.add_argument("--cache", choices=CACHE_CHOICES, help="Image cache.")
    p.add_argument("--seed", type=int)
    p.add_argument("--grad-checkpointing", action="store_true", help="Re-compute activations in backward.")
    p.add_argument("--compile", dest="compile_model", action="store_true", help="torch.compile the model.")
    p.add_argument("--deterministic", action="store_true",
                   help="Reproducible kernels (the same weights from one seed on one machine; slower on GPUs).")
    p.add_argument("--new-head", action="store_true", help="New class head when the classes differ from the data.")
    p.add_argument("--no-val", action="store_true", help="Skip validation after each epoch.")
    p.add_argument("--sync-bn", action="store_true", help="SyncBatchNorm across processes.")
    return p


def train_kwargs(
    *,
    overrides: list[str] | None,
    data: Path | None,
    model: str | None,
    imgsz: int | None,
    epochs: int | None,
    batch: int | None,
    device: str | None,
    workers: int | None,
    project: str | None,
    name: str | None,
    exist_ok: bool,
    resume: bool,
    hyp: str | None,
    amp: str | None,
    cache: str | None,
    seed: int | None,
    grad_checkpointing: bool,
    compile_model: bool,
    deterministic: bool,
    new_head: bool,
    no_val: bool,
    sync_bn: bool,
) -> dict[str, Any]:
    """The keyword arguments of ``y9train.run.train.train`` for these command-line values (None / False = not given).

    One sentence (ValueError) when ``--resume`` is given more than one path, or ``amp`` / ``cache`` is not one of
    ``AMP_CHOICES`` / ``CACHE_CHOICES``."""
    for option, value, choices in (("--amp", amp, AMP_CHOICES), ("--cache", cache, CACHE_CHOICES)):
        if value is not None and value not in choices:
            raise ValueError(f"{option} {value!r} is not a choice; expected one of {', '.join(choices)}.")
    resume_from, rest = split_resume_path(resume, list(overrides or []))
    return dict(
        data=data,
        model=model,
        resume=resume_from,
        hyp_file=hyp,
        overrides=rest,
        imgsz=imgsz,
        epochs=epochs,
        batch=batch,
        device=device,
        workers=workers,
        project=project,
        name=name,
        exist_ok=exist_ok or None,
        amp=amp,
        cache=None if cache in (None, "none") else cache,
        seed=seed,
        grad_checkpointing=grad_checkpointing or None,
        compile=compile_model or None,
        deterministic=deterministic or None,
        new_head=new_head or None,
        val=False if no_val else None,
        sync_bn=sync_bn or None,
    )


def summary(result) -> str:
    """The report of a finished run (``y9train.loop.trainer.TrainResult``): epochs, steps, best fitness, its files."""
    best = f"{result.best_fitness:.4f} at epoch {result.best_epoch}" if result.best_epoch else "none"
    text = (
        f"{result.epochs_run}/{result.epochs} epochs, {result.steps} optimiser steps"
        f"{' (early stop)' if result.stopped_early else ''}; best fitness {best}"
    )
    if result.save_dir:
        text += f"\nbest: {result.best}\nlast: {result.last}\nresults: {result.save_dir / 'results.csv'}"
    return text
