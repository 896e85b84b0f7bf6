"""How long the training loop waits at an epoch's end for its checkpoints, with ``async_save`` off and on.

Usage (defaults: yolov9-s, 64 px, the first 16 coco128 train images, batch 8, 6 epochs, CPU, one torch thread):
    python benchmarks/bench_checkpoint_save.py [--data $Y9_SHARED/datasets/coco128/data.yaml] [--images 16]
        [--model yolov9-s] [--imgsz 64] [--batch 8] [--epochs 6] [--device cpu] [--threads 1] [--json out.json]

Each mode trains the same run (no validation, so every epoch writes ``last.pt`` and ``best.pt``). Per epoch,
through the public callbacks: ``wait`` = the wall time from ``on_epoch_start`` to ``on_epoch_end`` minus the
epoch's own training time (``time_s`` of its record): the epoch's end (snapshot, and the synchronous write or the
wait for the previous epoch's background write) plus the small set-up of the epoch; ``epoch`` = that whole wall
time (a background write competes with training for the CPU, so it shows there). Medians over the epochs after
the first. The checkpoint sizes do not depend on the image size, so a small ``--imgsz`` keeps the run short.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from y9train.loop.trainer import Trainer  # noqa: E402
from y9train.optimisation.hyp import TrainConfig  # noqa: E402


def subset_yaml(data: Path, images: int, work: Path) -> Path:
    """A data.yaml whose train split is the first ``images`` images of ``data``'s train folder (a .txt list)."""
    import yaml

    cfg = yaml.safe_load(data.read_text())
    root = (data.parent / cfg.get("path", ".")).resolve()
    train = sorted(
        p for p in (root / cfg["train"]).iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png")
    )
    (work / "train.txt").write_text("".join(f"{p}\n" for p in train[:images]))
    out = work / "data.yaml"
    out.write_text(
        yaml.safe_dump({"path": str(work), "train": "train.txt", "nc": cfg["nc"], "names": cfg["names"]})
    )
    return out


def run(args: argparse.Namespace, data: Path, work: Path, async_save: bool) -> dict:
    marks: dict[int, float] = {}
    rows: list[dict] = []

    def start(tr: Trainer) -> None:
        marks[tr.epoch] = time.perf_counter()

    def end(tr: Trainer) -> None:
        wall = time.perf_counter() - marks[tr.epoch]
        train = tr.history[-1]["time_s"]
        rows.append({"epoch": tr.epoch + 1, "epoch_s": wall, "train_s": train, "wait_s": wall - train})

    cfg = TrainConfig(data=str(data), model=args.model, imgsz=args.imgsz, epochs=args.epochs, batch=args.batch,
                      device=args.device, workers=0, project=str(work / "runs"), name=f"async-{async_save}",
                      val=False, verbose=False, async_save=async_save)  # fmt: skip
    t0 = time.perf_counter()
    result = Trainer(cfg, callbacks={"on_epoch_start": [start], "on_epoch_end": [end]}).fit()
    total = time.perf_counter() - t0
    later = rows[1:] or rows
    return {
        "async_save": async_save,
        "wait_s_median": statistics.median(r["wait_s"] for r in later),
        "epoch_s_median": statistics.median(r["epoch_s"] for r in later),
        "train_s_median": statistics.median(r["train_s"] for r in later),
        "fit_s": total,
        "last_mb": result.last.stat().st_size / 1e6,
        "best_mb": result.best.stat().st_size / 1e6,
        "epochs": rows,
    }


def main() -> None:
    shared = os.environ.get("Y9_SHARED", str(Path(__file__).resolve().parents[2] / "shared"))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=Path(shared) / "datasets" / "coco128" / "data.yaml")
    p.add_argument("--images", type=int, default=16, help="train images taken from the data's train folder")
    p.add_argument("--model", default="yolov9-s")
    p.add_argument("--imgsz", type=int, default=64)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    p.add_argument("--json", type=Path, help="write the figures here")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="y9-bench-ckpt-") as tmp:
        work = Path(tmp)
        data = subset_yaml(args.data, args.images, work)
        out = [run(args, data, work, a) for a in (False, True)]
    for r in out:
        print(f"async_save={str(r['async_save']).lower():5}  wait at epoch end {r['wait_s_median'] * 1000:7.0f} ms  "
              f"epoch {r['epoch_s_median']:6.2f} s (training {r['train_s_median']:6.2f} s)  fit {r['fit_s']:6.1f} s  "
              f"last.pt {r['last_mb']:.0f} MB, best.pt {r['best_mb']:.0f} MB")  # fmt: skip
    if args.json:
        args.json.write_text(
            json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "runs": out}, indent=1)
        )


if __name__ == "__main__":
    main()
