"""The y9 side of the lockstep with train_dual.py that ``test_official_lockstep.py`` checks.

``tests/data/official_lockstep.json`` holds what the untouched train_dual.py (WongKinYiu/yolov9 5b1ea9a, CPU, fp32)
logged from the shared checkpoint ``real/yolov9-t-train-dual-final.pt`` on coco8's four training images: per batch
its losses and, after each optimiser step, the norms of its SGD momentum buffers per (layer, parameter group). The
script that ran the official side (``benchmarks/official_lockstep.py``, a study of parity with the official trainer)
left the product; git history keeps it, and docs/training.md ("Parity with the official trainer") its findings.
This module rebuilds the same data and trains y9 with ``--hyp official`` on it, recording the same figures.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

BATCH, IMGSZ, EPOCHS = 4, 160, 12  # one batch an epoch
WARMUP, NBS = 100, 64  # the official warmup (batches) and nominal batch size
AUG_OFF = {"hsv_h": 0.0, "hsv_s": 0.0, "hsv_v": 0.0, "translate": 0.0, "scale": 0.0, "fliplr": 0.0,
           "mosaic": 0.0, "mixup": 0.0, "copy_paste": 0.0}  # fmt: skip


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


def layer_group_norms(tensors: dict, groups: dict) -> dict[str, float]:
    """{"N/group": L2 norm} over the tensors of layer ``model.N`` in each parameter group."""
    sq: dict[str, float] = {}
    for key, t in tensors.items():
        k = f"{key.split('.')[1]}/{groups[key]}"
        sq[k] = sq.get(k, 0.0) + float((t.double() ** 2).sum())
    return {k: math.sqrt(v) for k, v in sorted(sq.items())}


def max_relative(ours: dict[str, float], ref: dict[str, float]) -> float:
    if set(ours) != set(ref):
        raise ValueError(f"layer/group sets differ: {sorted(set(ours) ^ set(ref))[:6]}")
    return max(abs(ours[k] - ref[k]) / max(ref[k], 1e-12) for k in ref)


def free_running(data: Path, project: Path, checkpoint: Path, iterations: int) -> list[dict]:
    """``y9 train --hyp official`` from ``checkpoint`` (augmentation off, fp32, CPU, one batch an epoch) for
    ``iterations`` batches; per batch its losses and, after an optimiser step, the momentum-buffer norms."""
    from y9train.loop.hooks import StopTraining
    from y9train.loop.trainer import Trainer
    from y9train.run.train import build_config

    rows: list[dict] = []

    def record(tr) -> None:
        names = {id(p): n for n, p in tr.model.named_parameters()}
        entry = {"iteration": tr.iteration - 1, **{k: float(tr.last_parts[k]) for k in ("box", "cls", "dfl")}}
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

    config = build_config(
        data=str(data), model=str(checkpoint), hyp_file="official",
        overrides=[f"{k}={v}" for k, v in {**AUG_OFF, "close_mosaic": 0}.items()], imgsz=IMGSZ, batch=BATCH,
        epochs=EPOCHS, device="cpu", workers=0, val=False, seed=0, project=str(project), name="y9",
        exist_ok=True, verbose=False, amp="off",
    )  # fmt: skip
    Trainer(config, callbacks={"on_step_end": [record]}).fit()
    return rows
