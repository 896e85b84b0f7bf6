"""What ``last.pt`` stores for an exact resume, in a form ``torch.load(weights_only=True)`` reads.

``train_state`` (under the checkpoint's ``"train"`` key): ``model`` (the raw, non-averaged weights; the
checkpoint's own ``"model"`` entry holds the EMA weights that get deployed), ``optimizer``, ``scaler`` (or None),
``ema_updates``, ``epoch`` (the last finished epoch), ``iteration`` (batches seen), ``step`` (optimiser steps),
``best_fitness``, ``best_epoch``, ``history`` (one dict of floats per finished epoch), ``config`` (the run's
``TrainConfig`` as a dict) and ``rng`` (torch, CUDA, numpy and python generator states as tensors and lists).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from y9deploy.errors import ModelFileError


def rng_state() -> dict[str, Any]:
    """Every global RNG state as tensors / lists / numbers (no numpy objects, no pickled classes)."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    version, internal, gauss_next = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "numpy": {
            "kind": str(kind),
            "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "python": {"version": int(version), "internal": [int(x) for x in internal], "gauss_next": gauss_next},
    }


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what ``rng_state`` captured (CUDA states only when the same number of devices is visible)."""
    torch.set_rng_state(state["torch"])
    cuda = state.get("cuda") or []
    if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda)
    n = state["numpy"]
    keys = n["keys"].numpy().astype(np.uint32)
    np.random.set_state((n["kind"], keys, n["pos"], n["has_gauss"], n["cached_gaussian"]))
    p = state["python"]
    random.setstate((p["version"], tuple(p["internal"]), p["gauss_next"]))


def cpu_state_dict(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().clone() for k, v in module.state_dict().items()}


def find_last_checkpoint(search: str | Path = "runs/train") -> Path:
    """The most recently written ``weights/last.pt`` under ``search`` (a run folder or a project folder)."""
    root = Path(search)
    if root.is_file():
        return root
    candidates = (
        sorted(root.rglob("weights/last.pt"), key=lambda p: p.stat().st_mtime) if root.is_dir() else []
    )
    if not candidates:
        raise FileNotFoundError(
            f"no weights/last.pt under {root} to resume from; expected a run folder of y9 train "
            "(or pass --resume path/to/last.pt)."
        )
    return candidates[-1]


def resume_path(value: str | Path) -> Path:
    """``--resume`` argument -> the last.pt to resume: "auto" (newest under runs/train), a run folder or a file."""
    path = find_last_checkpoint("runs/train") if str(value) == "auto" else Path(value)
    if path.is_dir():
        path = find_last_checkpoint(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no such checkpoint to resume; expected a last.pt written by y9 train."
        )
    return path


def read_train_state(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(payload, train_state)`` of a resumable checkpoint; one sentence when it holds no training state."""
    from y9train.checkpoint import read_checkpoint

    payload = read_checkpoint(path)
    state = payload.get("train")
    if not isinstance(state, dict) or "optimizer" not in state or "config" not in state:
        raise ModelFileError(
            f"{path}: holds no training state (best.pt and exported checkpoints do not); expected the last.pt "
            "of a y9 train run to resume (to fine-tune from it instead, pass it as --model)."
        )
    return payload, state


def save_run(trainer, epoch: int, record: dict[str, Any], improved: bool) -> None:
    """Write ``last.pt`` (EMA weights + training state) and, when ``improved``, ``best.pt`` (EMA weights only)."""
    from y9train.checkpoint import save_checkpoint

    cfg = trainer.config
    meta = {
        "epoch": epoch + 1,
        "epochs": cfg.epochs,
        "imgsz": cfg.imgsz,
        "data": str(cfg.data),
        "metrics": record,
        "best_fitness": trainer.best_fitness,
        "best_epoch": trainer.best_epoch + 1,
        "train_config": cfg.to_dict(),
    }
    state = {
        "model": cpu_state_dict(trainer.model),
        "optimizer": trainer.optimizer.state_dict(),
        "scaler": trainer.scaler.state_dict() if trainer.scaler is not None else None,
        "ema_updates": trainer.ema.updates,
        "epoch": epoch,
        "iteration": trainer.iteration,
        "step": trainer.step,
        "best_fitness": trainer.best_fitness,
        "best_epoch": trainer.best_epoch,
        "history": trainer.history,
        "config": cfg.to_dict(),
        "rng": rng_state(),
    }
    weights = trainer.save_dir / "weights"
    save_checkpoint(trainer.ema.module, weights / "last.pt", train_state=state, **meta)
    if improved:
        save_checkpoint(trainer.ema.module, weights / "best.pt", **meta)


def restore_run(trainer, path: Path, payload: dict[str, Any], state: dict[str, Any]) -> None:
    """Put a set-up trainer back where ``last.pt`` left it: weights, EMA, optimiser, scaler, counters, history,
    RNG (last, so nothing built afterwards draws from it)."""
    from y9train.optim import set_implementation
    from y9train.reporting import write_results_csv

    trainer.model.load_state_dict(state["model"])
    trainer.ema.load(payload["model"], state["ema_updates"])
    trainer.optimizer.load_state_dict(state["optimizer"])
    set_implementation(trainer.optimizer, trainer.device)
    if trainer.scaler is not None and state.get("scaler"):
        trainer.scaler.load_state_dict(state["scaler"])
    trainer.start_epoch = int(state["epoch"]) + 1
    trainer.step, trainer.iteration = int(state["step"]), int(state["iteration"])
    trainer.history = list(state["history"])
    trainer.best_fitness, trainer.best_epoch = float(state["best_fitness"]), int(state["best_epoch"])
    if trainer.save_dir is not None:
        trainer.steps_log.truncate(trainer.iteration)
        write_results_csv(trainer.save_dir / "results.csv", trainer.history)
    set_rng_state(state["rng"])
    trainer.reporter.info(f"resuming {path} at epoch {trainer.start_epoch + 1}/{trainer.config.epochs}")
