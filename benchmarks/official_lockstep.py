"""Lockstep parity of ``y9 train --hyp official`` with the official ``train_dual.py``, on a CPU or a GPU.

Both trainers start from the same official checkpoint (``fixtures/official/real/yolov9-t-train-dual-final.pt``)
on the four coco8 training images, padded to 640x480 PNGs so that both pipelines decode and resize them to the same
pixels, with every augmentation off, batch 4 (one batch an epoch), 160 px, 12 epochs, fp32. All 12 batches are in
the official warmup (100 batches at least): lr, momentum and the accumulation ramp move every batch, and the
optimiser steps after batches 0, 1, 2, 3, 5, 7 and 9 (accumulate 2 from batch 4, the un-stepped gradients of
batches 4, 6, 8, 10, 11 dropped at the epoch's end).

    python benchmarks/official_lockstep.py official --official-dir DIR --python PY --out OUT
        runs train_dual.py untouched (``--save-period 1``: a checkpoint with its optimiser state after every
        epoch) with PY, a Python that has the official code's requirements (torchvision among them), and writes
        OUT/official-steps.json: the losses of each batch and, after each step, the norm of the SGD momentum
        buffers per (layer, parameter group). tests/data/official_lockstep.json is that file.
    python benchmarks/official_lockstep.py compare --out OUT
        teacher-forced: at each official step, y9's loss and clipped gradient (+ weight decay) at the official's
        exact fp32 weights, rebuilt from the official's saved momentum buffers, against the official's ``d_p``
        (``buffer - momentum * previous buffer``); then the free-running y9 run's per-step figures beside the
        official's. Writes OUT/lockstep.json.

``--device 0`` (both commands) runs both trainers on that GPU instead, as a GPU run trains: the official with its
fp16 autocast and GradScaler (AMP is on for any CUDA device) and deterministic kernels (its ``init_seeds``), y9 with
the recipe's fp16 + GradScaler, CUDA graphs and ``deterministic=true``. The teacher-forced gradient is then taken
under fp16 autocast with a loss scale (halved until the gradient is finite, as a GradScaler does) and also in fp32
(``amp=off``), which sizes the fp16 rounding alone; the free run is repeated with ``deterministic=false`` (other
cuDNN kernels), which sizes what a change of kernels alone does to a free run. A step the official's GradScaler
discarded (its momentum buffers unchanged) is reported as such.

The official checkpoints are read with y9's restricted unpickler (nothing in them is executed).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from official_steps import (  # noqa: E402
    ema_difference,
    layer_group_norms,
    max_relative,
    official_state,
    relative_l2,
)

EPOCHS, BATCH, IMGSZ = 12, 4, 160  # epochs by default (--epochs: a GPU run needs more, see step_batches)
CHECKPOINT = ("fixtures", "official", "real", "yolov9-t-train-dual-final.pt")
AUG_OFF = {"hsv_h": 0.0, "hsv_s": 0.0, "hsv_v": 0.0, "translate": 0.0, "scale": 0.0, "fliplr": 0.0,
           "mosaic": 0.0, "mixup": 0.0, "copy_paste": 0.0}  # fmt: skip
WARMUP = 100  # the official warmup, max(round(3 epochs x 1 batch), 100) batches: all 12 batches are inside it
NBS = 64  # the official nominal batch size


def step_batches(epochs: int = EPOCHS) -> tuple[int, ...]:
    """The batches (one an epoch) after which train_dual.py steps: batches per step ramp from 1 to NBS / BATCH over
    the warmup (numpy's rounding, half to even), a step when ``ni - last_opt_step >= accumulate``; 12 epochs give
    (0, 1, 2, 3, 5, 7, 9). Under fp16 its GradScaler discards steps until the loss scale fits (8 on a GPU from the
    shared checkpoint: 65536 down to 256), so a GPU lockstep needs more epochs than that to see a real step."""
    steps, last, accumulate = [], -1, max(round(NBS / BATCH), 1)
    for ni in range(epochs):
        if ni <= WARMUP:
            accumulate = max(1.0, float(np.round(np.interp(ni, [0, WARMUP], [1, NBS / BATCH]))))
        if ni - last >= accumulate:
            steps.append(ni)
            last = ni
    return tuple(steps)


def shared_root() -> Path:
    import os

    return Path(os.environ.get("Y9_SHARED", ROOT.parent / "shared"))


def build_data(coco8: Path, out: Path) -> Path:
    """coco8's training images padded at the bottom to 640x480 (grey 114, no resampling: the same pixels on every
    machine) as PNGs, their labels rescaled to the taller image, and a data.yaml (val = train). Returns it."""
    import cv2
    import yaml

    (out / "images" / "train").mkdir(parents=True, exist_ok=True)
    (out / "labels" / "train").mkdir(parents=True, exist_ok=True)
    for img in sorted((coco8 / "images" / "train").glob("*.jpg")):
        pixels = cv2.imread(str(img))
        h, w = pixels.shape[:2]
        if w != 640 or h > 480:
            raise ValueError(
                f"{img}: {w}x{h} pixels; expected 640 wide and at most 480 high (coco8's train images)"
            )
        cv2.imwrite(
            str(out / "images" / "train" / f"{img.stem}.png"),
            cv2.copyMakeBorder(pixels, 0, 480 - h, 0, 0, cv2.BORDER_CONSTANT, value=(114, 114, 114)),
        )
        labels = np.loadtxt(coco8 / "labels" / "train" / f"{img.stem}.txt", ndmin=2)
        labels[:, [2, 4]] *= h / 480
        np.savetxt(out / "labels" / "train" / f"{img.stem}.txt", labels, fmt=["%d"] + ["%.6f"] * 4)
    names = yaml.safe_load((coco8 / "data.yaml").read_text())["names"]
    data = {
        "path": str(out.resolve()),
        "train": "images/train",
        "val": "images/train",
        "nc": 80,
        "names": names,
    }
    (out / "data.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return out / "data.yaml"


def y9_config(
    data: Path,
    project: Path,
    checkpoint: Path,
    name: str = "y9",
    device: str = "cpu",
    epochs: int = EPOCHS,
    **options,
):
    """``y9 train --hyp official`` from ``checkpoint`` with the lockstep settings (augmentation off): fp32 on a CPU;
    on a GPU the recipe's fp16 + GradScaler and ``deterministic=true`` (``options`` override, e.g. ``amp="off"``)."""
    from y9train.train import build_config

    gpu = {"amp": None, "deterministic": True} if device != "cpu" else {"amp": "off"}
    return build_config(
        data=str(data), model=str(checkpoint), hyp_file="official",
        overrides=[f"{k}={v}" for k, v in {**AUG_OFF, "close_mosaic": 0}.items()], imgsz=IMGSZ, batch=BATCH,
        epochs=epochs, device=device, workers=0, val=False, seed=0, project=str(project), name=name,
        exist_ok=True, verbose=False, **{**gpu, **options},
    )  # fmt: skip


# ------------------------------------------------------------------------------------------------ official side
def run_official(args) -> None:
    out = Path(args.out).resolve()
    data = build_data(shared_root() / "datasets" / "coco8", out / "data")
    hyp = {**_scratch_high(Path(args.official_dir)), **AUG_OFF}
    (out / "hyp-lockstep.yaml").write_text("".join(f"{k}: {v}\n" for k, v in hyp.items()))
    from reference_env import official_env

    cmd = [
        args.python, "train_dual.py", "--weights", str(shared_root().joinpath(*CHECKPOINT)),
        "--cfg", "models/detect/yolov9-t.yaml", "--data", str(data), "--hyp", str(out / "hyp-lockstep.yaml"),
        "--epochs", str(args.epochs), "--batch-size", str(BATCH), "--img", str(IMGSZ), "--device", args.device,
        "--workers", "0", "--noval", "--noplots", "--seed", "0", "--save-period", "1",
        "--project", str(out), "--name", "official", "--exist-ok",
    ]  # fmt: skip
    with open(out / "official.log", "w") as log:
        subprocess.run(cmd, cwd=args.official_dir, env=official_env(out), stdout=log, stderr=log, check=True)
    run = out / "official"
    with open(run / "results.csv") as f:
        rows = [{k.strip(): v.strip() for k, v in r.items()} for r in csv.DictReader(f)]
    steps, stepped = [], step_batches(args.epochs)
    for it, row in enumerate(rows):
        entry = {"iteration": it, **{k: float(row[f"train/{k}_loss"]) for k in ("box", "cls", "dfl")}}
        if it in stepped:
            st = official_state(run / "weights" / f"epoch{it}.pt")
            entry["buffer_norms"] = layer_group_norms(st["bufs"], st["group"])
        steps.append(entry)
    how = "CPU, fp32" if args.device == "cpu" else f"GPU {args.device}, fp16 autocast + GradScaler"
    result = {
        "what": f"train_dual.py at WongKinYiu/yolov9 5b1ea9a, {how}; see benchmarks/official_lockstep.py",
        "device": args.device,
        "command": " ".join(cmd[1:]),
        "epochs": args.epochs,
        "batch": BATCH,
        "imgsz": IMGSZ,
        "iterations": steps,
    }
    (out / "official-steps.json").write_text(json.dumps(result, indent=1))
    print(f"wrote {out / 'official-steps.json'}")


def _scratch_high(official_dir: Path) -> dict:
    import yaml

    return yaml.safe_load((official_dir / "data" / "hyps" / "hyp.scratch-high.yaml").read_text())


# ------------------------------------------------------------------------------------------------ y9 side
def free_running(
    data: Path,
    project: Path,
    checkpoint: Path,
    iterations: int | None = None,
    ema_at: tuple[int, ...] = (),
    device: str = "cpu",
    epochs: int = EPOCHS,
    **options,
) -> list[dict]:
    """Train y9 (``epochs`` of one batch) for ``iterations`` batches (all by default); per batch its losses and,
    after a step, the buffer norms (and for the batches in ``ema_at`` a CPU copy of the EMA model's state_dict under
    ``"ema"``). A step that a GradScaler discarded before any step was taken leaves no buffers: its
    ``buffer_norms`` is empty."""

    from y9train.hooks import StopTraining
    from y9train.trainer import Trainer

    rows: list[dict] = []

    def record(tr) -> None:
        names = {id(p): n for n, p in tr.model.named_parameters()}
        parts = {k: float(tr.last_parts[k]) for k in ("box", "cls", "dfl")}
        entry = {"iteration": tr.iteration - 1, **parts}
        if entry["iteration"] in ema_at:
            entry["ema"] = {k: v.detach().cpu().clone() for k, v in tr.ema.module.state_dict().items()}
        if tr.last_opt_step == tr.iteration - 1:
            bufs, groups = {}, {}
            for g in tr.optimizer.param_groups:
                for p in g["params"]:
                    state = tr.optimizer.state.get(p, {})
                    if "momentum_buffer" in state:
                        bufs[names[id(p)]] = state["momentum_buffer"]
                        groups[names[id(p)]] = g["name"]
            entry["buffer_norms"] = layer_group_norms(bufs, groups)
        rows.append(entry)
        if tr.iteration >= iterations:
            raise StopTraining

    iterations = epochs if iterations is None else iterations
    config = y9_config(data, project, checkpoint, device=device, epochs=epochs, **options)
    Trainer(config, callbacks={"on_step_end": [record]}).fit()
    return rows


def teacher_forced(
    data: Path, run: Path, project: Path, checkpoint: Path, device: str = "cpu", epochs: int = EPOCHS
) -> list[dict]:
    """At each official step: y9's loss and clipped gradient (+ decay) at the official's exact weights. On a GPU
    the gradient is taken under fp16 autocast (``fp32_relative_error``: how far the fp32 gradient lies from it)."""
    import torch

    from y9train.trainer import Trainer

    trainer = Trainer(y9_config(data, project, checkpoint, name="teacher", device=device, epochs=epochs))
    trainer.setup()
    model, hyp, dev = trainer.model, trainer.config.hyp, trainer.device
    batch = next(iter(trainer.train_loader))
    imgs, labels = batch["img"].to(dev).float() / 255, batch["labels"].to(dev)
    named = dict(model.named_parameters())
    states = {it: official_state(run / "weights" / f"epoch{it}.pt") for it in step_batches(epochs)}
    stepped = [st for st in states.values() if st["bufs"]]  # none: its GradScaler discarded every step
    group = states[0]["group"]
    keys = sorted(stepped[0]["bufs"] if stepped else (k for k in group if named[k].requires_grad))
    prev: dict = {}  # y9's model starts from the checkpoint the official started from
    lf = lambda e: (1 - e / epochs) * (1.0 - hyp.lrf) + hyp.lrf  # noqa: E731

    def gradient(fp16: bool) -> tuple[torch.Tensor, dict, float, float]:
        """(flat clipped gradient + decay in float64, loss parts, pre-clip norm, loss scale used)."""
        scale = 2.0**16 if fp16 else 1.0
        while True:
            model.zero_grad(set_to_none=True)
            with torch.autocast(dev.type, dtype=torch.float16, enabled=fp16):
                preds = model(imgs)
            loss, parts = trainer.loss_fn(preds, labels)
            (loss * scale).backward()
            grads = [named[k].grad for k in keys]
            if not fp16 or all(bool(torch.isfinite(g).all()) for g in grads) or scale < 2.0**-24:
                break
            scale /= 2.0  # what a GradScaler does after an overflow
        with torch.no_grad():
            for g in grads:
                g /= scale
        norm = torch.nn.utils.clip_grad_norm_([named[k] for k in keys], hyp.clip_grad)
        decay = {k: hyp.weight_decay if group[k] == "weights" else 0.0 for k in keys}
        with torch.no_grad():
            flat = torch.cat([(named[k].grad + decay[k] * named[k]).flatten().double() for k in keys])
        return flat, parts, float(norm), scale

    rows = []
    for it in step_batches(epochs):
        bufs = {k: v.to(dev) for k, v in states[it]["bufs"].items()}
        m = float(np.interp(it, [0, WARMUP], [hyp.warmup_momentum, hyp.momentum]))
        a, parts, norm, scale = gradient(fp16=dev.type == "cuda")
        row = {"iteration": it, **{k: float(parts[k]) for k in ("box", "cls", "dfl")},
               "grad_norm_before_clip": norm}  # fmt: skip
        if dev.type == "cuda":
            a32, *_ = gradient(fp16=False)
            row |= {"loss_scale": scale, "fp32_relative_error": float((a32 - a).norm() / a32.norm()),
                    "fp16_gradient_finite": bool(torch.isfinite(a).all())}  # fmt: skip
        if not bufs or (prev and all(torch.equal(bufs[k], prev[k]) for k in keys)):
            rows.append(row | {"official_step_discarded": True})  # its GradScaler found an overflow
            continue
        with torch.no_grad():
            dp = {k: bufs[k] - m * prev[k] if k in prev else bufs[k] for k in keys}  # official d_p
            b = torch.cat([dp[k].flatten().double() for k in keys])
            row |= {"cosine": float(torch.nn.functional.cosine_similarity(a, b, 0)),
                    "relative_error": float((a - b).norm() / b.norm())}  # fmt: skip
            for k in keys:  # the official's nesterov update of its own weights: p -= lr * (d_p + m * buf)
                start = hyp.warmup_bias_lr if group[k] == "bias" else 0.0
                lr = float(np.interp(it, [0, WARMUP], [start, hyp.lr0 * lf(it)]))
                named[k] -= lr * (dp[k] + m * bufs[k])
                prev[k] = bufs[k]
        rows.append(row)
    last = official_state(run / "weights" / f"epoch{epochs - 1}.pt")["model"]
    rows.append({"rebuilt_vs_official_final_fp16": relative_l2(named, last, keys)})
    return rows


def compare(args) -> None:
    out = Path(args.out).resolve()
    recorded = json.loads((out / "official-steps.json").read_text())
    if recorded.get("device", "cpu") != args.device:
        raise ValueError(
            f"{out / 'official-steps.json'}: recorded on device {recorded.get('device', 'cpu')!r}; "
            f"expected --device {args.device} (run both commands with the same --device)"
        )
    official = recorded["iterations"]
    data = out / "data" / "data.yaml"
    checkpoint = shared_root().joinpath(*CHECKPOINT)
    epochs = recorded["epochs"]
    forced = teacher_forced(data, out / "official", out / "y9", checkpoint, device=args.device, epochs=epochs)
    free = free_running(
        data, out / "y9", checkpoint, epochs=epochs, ema_at=step_batches(epochs)[:3], device=args.device
    )
    for row in forced[:-1]:
        ref = official[row["iteration"]]
        row["official_loss"] = [ref["box"], ref["cls"], ref["dfl"]]
        step = (
            "official step discarded (GradScaler)"
            if row.get("official_step_discarded")
            else f"clipped gradient cosine {row['cosine']:.6f}, relative error {row['relative_error']:.2e}"
        )
        fp32 = (
            f"; fp16 loss scale {row['loss_scale']:g} (gradient finite: {row['fp16_gradient_finite']}), "
            f"fp32 gradient {row['fp32_relative_error']:.2e} away"
            if "loss_scale" in row
            else ""
        )
        print(
            f"teacher-forced batch {row['iteration']}: loss y9 {row['box']:.5f} {row['cls']:.5f} {row['dfl']:.5f} "
            f"official {ref['box']} {ref['cls']} {ref['dfl']}; {step}{fp32}"
        )
    print(
        f"official weights rebuilt from its buffers vs its final fp16 weights: "
        f"{forced[-1]['rebuilt_vs_official_final_fp16']:.2e} relative"
    )
    result = {"device": args.device, "teacher_forced": forced, "free_running": drift(free, official, out)}
    if args.device != "cpu":  # the same free run with other kernels: what a change of kernels alone does
        other = free_running(
            data,
            out / "y9-default-kernels",
            checkpoint,
            epochs=epochs,
            device=args.device,
            deterministic=False,
        )
        result["free_running_default_kernels"] = drift(other, official, out, label="y9 deterministic=false")
        result["deterministic_vs_default_kernels"] = [
            {"iteration": a["iteration"], "buffer_norm_max_relative_difference": buffer_difference(a, b)}
            for a, b in zip(free, other, strict=True)
            if "buffer_norms" in a
        ]
        print(f"y9 deterministic=true against =false: {result['deterministic_vs_default_kernels']}")
    (out / "lockstep.json").write_text(json.dumps(result, indent=1))
    print(f"wrote {out / 'lockstep.json'}")


def drift(free: list[dict], official: list[dict], out: Path, label: str = "y9") -> list[dict]:
    """Per batch: a free run's losses and buffer norms against the official's (and its EMA, where recorded)."""
    rows = []
    for ours, ref in zip(free, official, strict=True):
        d = {"iteration": ours["iteration"], "loss_y9": [ours[k] for k in ("box", "cls", "dfl")],
             "loss_official": [ref[k] for k in ("box", "cls", "dfl")]}  # fmt: skip
        if "buffer_norms" in ref:
            d["buffer_norm_max_relative_difference"] = buffer_difference(ours, ref)
        if "ema" in ours:
            d["ema_relative_difference"] = ema_difference(
                ours.pop("ema"), out / "official", ours["iteration"]
            )
            print(f"{label}: EMA after batch {d['iteration']} (weights, BatchNorm statistics) against the "
                  f"official's (fp16 in its file): {d['ema_relative_difference']}")  # fmt: skip
        rows.append(d)
        diff = d.get("buffer_norm_max_relative_difference")
        print(f"{label} free-running batch {d['iteration']}: loss {' '.join(f'{v:.5f}' for v in d['loss_y9'])} "
              f"official {' '.join(str(v) for v in d['loss_official'])}"
              + (f"; buffer norms differ by {diff:.2e} at most" if isinstance(diff, float) else
                 f"; buffers: {diff}" if diff else ""))  # fmt: skip
    return rows


def buffer_difference(ours: dict, ref: dict) -> float | str:
    """Largest relative difference of the per-(layer, group) buffer norms after a step; a string when either
    run has no buffers yet (its GradScaler discarded every step so far)."""
    a, b = ours.get("buffer_norms") or {}, ref.get("buffer_norms") or {}
    if not a or not b:
        return (
            "both without buffers" if not a and not b else f"buffers only in {'y9' if a else 'the other run'}"
        )
    return max_relative(a, b)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    o = sub.add_parser("official", help="run train_dual.py untouched and record its steps")
    o.add_argument("--official-dir", required=True, help="the official YOLOv9 source tree")
    o.add_argument("--python", required=True, help="a Python with the official requirements (torchvision)")
    o.add_argument("--out", required=True)
    o.add_argument(
        "--epochs", type=int, default=EPOCHS, help="batches (one an epoch); 30 for a GPU (step_batches)"
    )
    c = sub.add_parser("compare", help="teacher-forced and free-running y9 against the official run in --out")
    c.add_argument("--out", required=True)
    for parser in (o, c):
        parser.add_argument(
            "--device", default="cpu", help="cpu (fp32) or a CUDA index such as 0 (fp16 + GradScaler)"
        )
    return p


def main() -> None:
    args = build_parser().parse_args()
    run_official(args) if args.command == "official" else compare(args)


if __name__ == "__main__":
    main()
