"""What ``last.pt`` stores for an exact resume, in a form ``torch.load(weights_only=True)`` reads.

``train_state`` (under the checkpoint's ``"train"`` key): ``model`` (the raw, non-averaged weights; the
checkpoint's own ``"model"`` entry holds the EMA weights that get deployed), ``optimizer``, ``scaler`` (or None),
``ema_updates``, ``epoch`` (the last finished epoch), ``iteration`` (batches seen), ``step`` (optimiser steps),
``best_fitness``, ``best_epoch``, ``history`` (one dict of floats per finished epoch), ``config`` (the run's
``TrainConfig`` as a dict), ``rng`` (torch, CUDA, numpy and python generator states as tensors and lists) and
``average`` (``y9train.optimisation.weight_average``'s running sum, or None).

After every epoch ``last.pt`` is written first, then (on a better fitness) ``best.pt``, each atomically. A kill
between the two leaves the previous ``best.pt`` intact, and ``last.pt`` then records the new best epoch as its own
epoch: its ``"model"`` entry holds exactly the weights ``best.pt`` was about to receive, so resuming re-creates
``best.pt`` from it (``recover_best``). Resuming also removes the run's stale temporary files (``.last.pt.*.tmp``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from y9core.errors import ModelFileError


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


def _restores(part: str, state: dict[str, Any]) -> None:
    """Restore ``state[part]`` into a throwaway generator of its kind (raises what that library raises)."""
    if part == "torch":
        if not isinstance(state["torch"], torch.Tensor):
            raise TypeError(f"a {type(state['torch']).__name__}, not a tensor")
        torch.Generator().set_state(state["torch"])
    elif part == "cuda":
        cuda = state.get("cuda") or []
        if not isinstance(cuda, list) or not all(isinstance(t, torch.Tensor) and t.dtype == torch.uint8 for t in cuda):
            raise TypeError("not a list of uint8 tensors")
    elif part == "numpy":
        n = state["numpy"]
        keys = n["keys"].numpy().astype(np.uint32)
        np.random.RandomState().set_state((n["kind"], keys, n["pos"], n["has_gauss"], n["cached_gaussian"]))
    else:
        p = state["python"]
        random.Random().setstate((p["version"], tuple(p["internal"]), p["gauss_next"]))


def check_rng_state(path: str | Path, state: dict[str, Any]) -> None:
    """One sentence when a checkpoint's ``train.rng`` cannot be restored (checked on throwaway generators, before a
    resume writes or changes anything): a damaged or hand-edited last.pt, e.g. one whose digest entry was removed."""
    for part in ("torch", "cuda", "numpy", "python"):
        try:
            _restores(part, state)
        except (KeyError, TypeError, ValueError, RuntimeError, AttributeError, IndexError, OverflowError) as exc:
            first = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
            missing = isinstance(exc, KeyError)
            raise ModelFileError(
                f"{path}: training state entry train.rng.{part} {'is missing' if missing else 'cannot be restored'} "
                f"({first}); expected the {part} generator state y9 train saved (a damaged or hand-edited last.pt)."
            ) from None


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


_STATE_TYPES: dict[str, tuple[type, ...]] = {
    "model": (dict,),
    "optimizer": (dict,),
    "ema_updates": (int,),
    "epoch": (int,),
    "iteration": (int,),
    "step": (int,),
    "best_fitness": (float, int),
    "best_epoch": (int,),
    "history": (list,),
    "config": (dict,),
    "rng": (dict,),
}


def read_train_state(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(payload, train_state)`` of a resumable checkpoint; one sentence when it holds no training state or an
    entry is missing or of the wrong type."""
    from y9train.checkpoints.load import read_checkpoint

    payload = read_checkpoint(path)
    state = payload.get("train")
    if not isinstance(state, dict) or "optimizer" not in state or "config" not in state:
        raise ModelFileError(
            f"{path}: holds no training state (best.pt and exported checkpoints do not); expected the last.pt "
            "of a y9 train run to resume (to fine-tune from it instead, pass it as --model)."
        )
    for key, types in _STATE_TYPES.items():
        value = state.get(key)
        if not isinstance(value, types) or isinstance(value, bool):
            raise ModelFileError(
                f"{path}: training state entry train.{key} is "
                f"{'missing' if key not in state else type(value).__name__}; expected "
                f"{' or '.join(t.__name__ for t in types)} (a damaged or hand-edited last.pt)."
            )
    if len(state["history"]) != state["epoch"] + 1 or not all(isinstance(r, dict) for r in state["history"]):
        raise ModelFileError(
            f"{path}: training state holds {len(state['history'])} epoch records for {state['epoch'] + 1} finished "
            "epochs; expected one dict per finished epoch (a damaged or hand-edited last.pt)."
        )
    check_rng_state(path, state["rng"])
    return payload, state


def check_resume_epochs(path: Path, epochs: int, state: dict[str, Any]) -> None:
    """One sentence when a resumed run is asked for fewer epochs than it has already finished."""
    done = int(state["epoch"]) + 1
    if epochs < done:
        raise ValueError(
            f"cannot resume {path} with epochs={epochs}: {done} epochs are already done; expected epochs={done} "
            f"or more (more than {done} to train further)."
        )


def remove_stale_temporaries(weights: Path) -> list[Path]:
    """Delete the temporary files a killed checkpoint write left in ``weights`` (``.last.pt.*.tmp`` ...)."""
    stale = sorted(weights.glob(".*.pt.*.tmp"))
    for tmp in stale:
        tmp.unlink(missing_ok=True)
    return stale


def recover_best(weights: Path, last: Path, payload: dict[str, Any], state: dict[str, Any]) -> str | None:
    """Make ``best.pt`` hold the best epoch ``last.pt`` records; returns what was done (None: it already did).

    When ``best.pt`` is missing, damaged or holds another epoch and the best epoch is ``last.pt``'s own (a kill
    between the two writes), ``best.pt`` is re-created from ``last.pt``'s EMA weights; otherwise it cannot be, and
    the returned sentence says so."""
    from y9train.checkpoints.integrity import DIGEST_KEY, tensor_digest
    from y9train.checkpoints.load import atomic_torch_save, read_checkpoint

    if int(state["best_epoch"]) < 0:
        return None
    want = int(state["best_epoch"]) + 1
    best = weights / "best.pt"
    if not best.exists():
        found = "is missing"
    else:
        try:
            epoch = read_checkpoint(best).get("meta", {}).get("epoch")
        except (ModelFileError, OSError) as exc:
            epoch, found = None, f"cannot be read ({exc})"
        else:
            if epoch == want:
                return None
            found = f"holds epoch {epoch}"
    if int(state["best_epoch"]) != int(state["epoch"]):
        return (
            f"{best} {found} and cannot be re-created: {last} records best epoch {want} but holds the weights of "
            f"epoch {int(state['epoch']) + 1}; the run continues and writes best.pt at its next better fitness."
        )
    copy = {k: v for k, v in payload.items() if k not in ("train", DIGEST_KEY)}
    copy[DIGEST_KEY] = tensor_digest(copy)
    atomic_torch_save(copy, best)
    return f"{best} {found}: re-created from {last}, which holds the weights of the best epoch {want}."


@dataclass(frozen=True)
class RunSnapshot:
    """What one epoch's end writes, copied from the trainer so that the next epoch cannot change it: the payloads
    of ``last.pt`` and (on a better fitness) ``best.pt`` (no digest yet), and the history for ``results.csv``."""

    weights: Path
    last: dict[str, Any]
    best: dict[str, Any] | None
    results_csv: Path
    history: list[dict[str, Any]]


def snapshot_run(trainer, epoch: int, record: dict[str, Any], improved: bool) -> RunSnapshot:
    """The cheap, synchronous part of an epoch's end: every tensor copied to the CPU, history and config copied."""
    from y9train.checkpoints.load import checkpoint_payload, cpu_copy

    cfg = trainer.config
    meta = {
        "facts": trainer.facts.to_dict(),
        "epoch": epoch + 1,
        "epochs": cfg.epochs,
        "imgsz": cfg.imgsz,
        "data": str(cfg.data),
        "metrics": record,
        "best_fitness": trainer.best_fitness,
        "best_epoch": trainer.best_epoch + 1,
        "train_config": cfg.to_dict(),
    }
    history = cpu_copy(trainer.history)
    state = {
        "model": cpu_copy(trainer.model.state_dict()),
        "optimizer": cpu_copy(trainer.optimizer.state_dict()),
        "scaler": cpu_copy(trainer.scaler.state_dict()) if trainer.scaler is not None else None,
        "ema_updates": trainer.ema.updates,
        "epoch": epoch,
        "iteration": trainer.iteration,
        "step": trainer.step,
        "best_fitness": trainer.best_fitness,
        "best_epoch": trainer.best_epoch,
        "history": history,
        "config": cfg.to_dict(),
        "rng": rng_state(),
        "average": cpu_copy(trainer.averager.state_dict()),  # None unless Hyp.average_epochs is summing
    }
    weights = trainer.save_dir / "weights"
    last = checkpoint_payload(trainer.ema.module, weights / "last.pt", train_state=state, **meta)
    best = {k: v for k, v in last.items() if k != "train"} if improved else None  # same EMA weights, meta
    return RunSnapshot(weights, last, best, trainer.save_dir / "results.csv", history)


def write_run(snap: RunSnapshot) -> None:
    """The slow part: ``last.pt``, then (when improved) ``best.pt``, then ``results.csv``, each atomically.

    This order never loses the previous best: until ``last.pt`` records the new best epoch, ``best.pt`` is the old
    one, and once it does, ``last.pt`` holds the new best weights itself (``recover_best``). ``results.csv`` comes
    last, so it never records an epoch that ``last.pt`` does not hold."""
    from y9train.checkpoints.load import write_payload
    from y9train.reports.reporting import write_results_csv

    write_payload(snap.last, snap.weights / "last.pt")
    if snap.best is not None:
        write_payload(snap.best, snap.weights / "best.pt")
    write_results_csv(snap.results_csv, snap.history)


def check_optimizer_state(path: Path, optimizer: Any, saved: Any) -> None:
    """One sentence unless ``saved`` (a last.pt's optimizer state) fits ``optimizer`` (built for the model being
    resumed): the same parameter groups and sizes, and every per-parameter tensor (moments, momentum buffers) of its
    parameter's shape. ``load_state_dict`` checks none of the shapes: a mismatch would crash the first step."""
    where = f"{path}: its optimizer state"
    tail = "expected the last.pt of an unmodified y9 train run (a damaged or hand-edited last.pt)."
    groups, entries = (saved.get("param_groups"), saved.get("state")) if isinstance(saved, dict) else (None, None)
    if not isinstance(groups, list) or not isinstance(entries, dict) or not all(
        isinstance(g, dict) and isinstance(g.get("params"), list) for g in groups
    ):
        raise ModelFileError(f"{where} has no 'param_groups' list and 'state' dict; {tail}")
    have = [len(g["params"]) for g in groups]
    want = [len(g["params"]) for g in optimizer.param_groups]
    if have != want:
        raise ModelFileError(f"{where} holds parameter groups of {have} parameters, the model being resumed {want}; {tail}")
    params = {i: p for g, c in zip(groups, optimizer.param_groups) for i, p in zip(g["params"], c["params"])}
    for i, entry in entries.items():
        if i not in params or not isinstance(entry, dict):
            raise ModelFileError(f"{where} has an entry for parameter {i!r}, which none of its groups holds; {tail}")
        for name, value in entry.items():
            if isinstance(value, torch.Tensor) and value.ndim and tuple(value.shape) != tuple(params[i].shape):
                raise ModelFileError(
                    f"{where} '{name}' of parameter {i} has shape {list(value.shape)} but that parameter has "
                    f"{list(params[i].shape)}; {tail}"
                )


def restore_run(trainer, path: Path, payload: dict[str, Any], state: dict[str, Any]) -> None:
    """Put a set-up trainer back where ``last.pt`` left it: weights, EMA, optimiser, scaler, counters, history,
    RNG (last, so nothing built afterwards draws from it)."""
    from y9train.optimisation.optim import set_implementation
    from y9train.reports.reporting import write_results_csv

    check_optimizer_state(path, trainer.optimizer, state["optimizer"])
    try:
        trainer.model.load_state_dict(state["model"])
        trainer.ema.load(payload["model"], state["ema_updates"])
        trainer.optimizer.load_state_dict(state["optimizer"])
    except (RuntimeError, ValueError, KeyError, TypeError, IndexError) as exc:
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise ModelFileError(
            f"{path}: its training state does not fit the model it holds ({first}); expected the last.pt of an "
            "unmodified y9 train run."
        ) from None
    set_implementation(trainer.optimizer, trainer.device)
    trainer.averager.load(state.get("average"))
    if trainer.scaler is not None and state.get("scaler"):
        trainer.scaler.load_state_dict(state["scaler"])
    trainer.start_epoch = int(state["epoch"]) + 1
    trainer.step, trainer.iteration = int(state["step"]), int(state["iteration"])
    trainer.history = list(state["history"])
    trainer.best_fitness, trainer.best_epoch = float(state["best_fitness"]), int(state["best_epoch"])
    if trainer.save_dir is not None:
        trainer.steps_log.truncate(trainer.iteration)
        write_results_csv(trainer.save_dir / "results.csv", trainer.history)
        weights = trainer.save_dir / "weights"
        for tmp in remove_stale_temporaries(weights):
            trainer.reporter.info(f"removed {tmp}, left by an interrupted checkpoint write")
        if (note := recover_best(weights, path, payload, state)) is not None:
            trainer.reporter.warn(note)
    set_rng_state(state["rng"])
    epochs = trainer.config.epochs
    if trainer.start_epoch >= epochs:
        trainer.reporter.info(
            f"{path}: all {epochs} epochs are done; nothing left to train (resume with epochs=N, N > {epochs}, "
            "to train further)"
        )
    else:
        trainer.reporter.info(f"resuming {path} at epoch {trainer.start_epoch + 1}/{epochs}")
    if trainer.save_dir is not None:
        recorded = state["config"].get("save_dir")
        moved = recorded and Path(recorded).resolve() != trainer.save_dir.resolve()
        trainer.reporter.info(f"writing into {trainer.save_dir}" + (f" (the run was recorded in {recorded}, which is "
                                                                   "left alone)" if moved else ""))  # fmt: skip
