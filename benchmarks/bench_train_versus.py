"""y9 against Ultralytics on the same data in the same run, each trainer alone and in a process of its own: wall time
(process start to exit), time from process start to the first training step, first-epoch time, steady img/s and
peak GPU memory (issue 37's table; docs/benchmarks.md, "Training: speed").

    python benchmarks/bench_train_versus.py splits/deeppcb/data.yaml --epochs 40 --batch 32 --out vs
    python benchmarks/bench_train_versus.py ../shared/datasets/coco8/data.yaml --dry --out /tmp/vs   # CPU smoke run

How each figure is taken (``<out>/<trainer>/timing.json``, then ``<out>/versus.json`` and a table):
- wall: the child process from its start (the kernel's record, ``y9train.timing.startup.process_age``) to the end of training, plus the
  parent's measure of the whole child (start to exit);
- to first step: process start to the first training batch's forward; y9 from its own ``startup.json``
  (``y9train.timing.startup``: every phase), Ultralytics from its ``on_train_batch_start`` callback;
- first epoch: the first epoch's training loop (y9: ``time_s`` of results.csv; Ultralytics: its
  ``on_train_epoch_start`` to ``on_train_epoch_end``), validation excluded for both (y9's first validation is
  reported beside it);
- steady img/s: the median over epochs 3 and later (2 and later for runs under 4 epochs) of train images / epoch time;
- after the last epoch: the parent's measure of the whole child less the process age at the end of the last epoch
  (y9: its ``timing.json``, start + epochs; Ultralytics: its last ``on_fit_epoch_end``, after its validation): the
  final validation, pictures, files and the process's exit;
- peak GPU memory: ``torch.cuda.max_memory_allocated`` in the trainer's process at its end (None on CPU).
Each trainer runs with its own defaults for everything the command line does not set; ``--set k=v`` reaches y9 only.
``--dry``: a CPU run on a slice of the data (``--images``), gelan-t / yolov9t at 160 px for 2 epochs, batch 4: it
proves the script end to end on a machine without a GPU (Ultralytics is run only where it is installed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
ULTRALYTICS_MODELS = {"yolov9-s": "yolov9s.yaml", "gelan-s": "yolov9s.yaml", "yolov9-t": "yolov9t.yaml",
                      "gelan-t": "yolov9t.yaml", "yolov9-m": "yolov9m.yaml", "yolov9-c": "yolov9c.yaml"}  # fmt: skip


def process_age() -> float:
    """Seconds since this process started: y9's own measure (``/proc`` on Linux, 10 ms), for both trainers."""
    from y9train.timing.startup import process_age as age

    return age()


def steady(values: list[float]) -> float | None:
    """Median of the per-epoch figures from epoch 3 on (from epoch 2 for runs under 4 epochs)."""
    tail = values[2:] if len(values) >= 4 else values[1:]
    return statistics.median(tail) if tail else None


def peak_memory_gb() -> float | None:
    import torch

    return torch.cuda.max_memory_allocated() / 1e9 if torch.cuda.is_available() else None


# ---------------------------------------------------------------------------------------------- children
def child_y9(args, out: Path) -> dict:
    from y9train.reports.reporting import read_csv
    from y9train.run.train import train

    overrides = dict(kv.split("=", 1) for kv in args.set)
    result = train(
        data=str(args.data), model=args.model, epochs=args.epochs, batch=args.batch, imgsz=args.imgsz,
        workers=args.workers, cache=None if args.cache == "none" else args.cache, device=args.device,
        seed=args.seed, project=str(out), name="run", exist_ok=True, overrides=overrides,
    )  # fmt: skip
    wall = process_age()
    startup = json.loads((result.save_dir / "startup.json").read_text())
    timing = json.loads((result.save_dir / "timing.json").read_text())  # y9train.timing.run_timing: every phase
    rows = read_csv(result.save_dir / "results.csv")
    return {
        "trainer": "y9", "wall_s": wall, "to_first_step_s": startup["totals"].get("to_first_step"),
        "first_epoch_s": rows[0]["time_s"], "first_validation_s": rows[0].get("val_s"),
        "epoch_s": [r["time_s"] for r in rows], "steady_img_s": steady([r["img_s"] for r in rows]),
        "peak_gpu_gb": peak_memory_gb(), "startup": startup, "epochs": len(rows),
        "final_map50_95": rows[-1].get("metrics/map50_95"), "timing": timing,
        "end_of_epochs_s": timing["totals"]["start"] + timing["totals"]["epochs"],
    }  # fmt: skip


def child_ultralytics(args, out: Path) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from reference_env import ultralytics_env

    ultralytics_env(out / "ultralytics_config")
    from ultralytics import YOLO  # a reference, not a dependency of y9

    marks: dict[str, list[float]] = {"epoch_start": [], "epoch_end": [], "first_batch": [], "fit_epoch_end": []}
    images = {"n": 0}

    def on_epoch_start(trainer):
        marks["epoch_start"].append(process_age())
        images["n"] = len(trainer.train_loader.dataset)

    def on_batch_start(trainer):
        if not marks["first_batch"]:
            marks["first_batch"].append(process_age())

    model = YOLO(ULTRALYTICS_MODELS[args.model])
    model.add_callback("on_train_epoch_start", on_epoch_start)
    model.add_callback("on_train_batch_start", on_batch_start)
    model.add_callback("on_train_epoch_end", lambda t: marks["epoch_end"].append(process_age()))
    model.add_callback("on_fit_epoch_end", lambda t: marks["fit_epoch_end"].append(process_age()))  # validated
    device = "cpu" if args.device == "cpu" else (args.device or 0)
    model.train(
        data=str(Path(args.data).resolve()), epochs=args.epochs, batch=args.batch, imgsz=args.imgsz,
        workers=args.workers, cache=False if args.cache == "none" else args.cache, device=device, seed=args.seed,
        project=str(out.resolve()), name="run", exist_ok=True, plots=False,
    )  # fmt: skip
    wall = process_age()
    epochs = [b - a for a, b in zip(marks["epoch_start"], marks["epoch_end"])]
    return {
        "trainer": "ultralytics", "wall_s": wall,
        "to_first_step_s": marks["first_batch"][0] if marks["first_batch"] else None,
        "first_epoch_s": epochs[0] if epochs else None, "epoch_s": epochs,
        "steady_img_s": steady([images["n"] / s for s in epochs]) if epochs else None,
        "peak_gpu_gb": peak_memory_gb(), "epochs": len(epochs),
        "end_of_epochs_s": marks["fit_epoch_end"][-1] if marks["fit_epoch_end"] else None,
    }  # fmt: skip


CHILDREN = {"y9": child_y9, "ultralytics": child_ultralytics}


# ---------------------------------------------------------------------------------------------- parent
def dry_slice(data: Path, out: Path, images: int) -> Path:
    """A data.yaml of the first ``images`` train and val images of ``data`` (lists naming the original files)."""
    sys.path.insert(0, str(REPO))
    from y9train.data import load_data_yaml

    cfg = load_data_yaml(data)
    out.mkdir(parents=True, exist_ok=True)
    for split in ("train", "val"):
        files = [str(p) for p in cfg.image_files(split)][:images]
        (out / f"{split}.txt").write_text("\n".join(files) + "\n")
    path = out / "data.yaml"
    path.write_text(yaml.safe_dump({"path": str(out), "train": "train.txt", "val": "val.txt", "names": cfg.names}))
    return path


def installed(trainer: str) -> bool:
    if trainer != "ultralytics":
        return True
    import importlib.util

    return importlib.util.find_spec("ultralytics") is not None


def child_command(args, trainer: str, data: Path) -> list[str]:
    cmd = [sys.executable, str(Path(__file__).resolve()), str(data), "--child", trainer, "--out", str(args.out),
           "--model", args.model, "--epochs", str(args.epochs), "--batch", str(args.batch),
           "--imgsz", str(args.imgsz), "--workers", str(args.workers), "--cache", args.cache,
           "--seed", str(args.seed)]  # fmt: skip
    if args.device:
        cmd += ["--device", args.device]
    for kv in args.set:
        cmd += ["--set", kv]
    return cmd


def print_table(rows: list[dict]) -> None:
    def f(v, spec):
        return format(v, spec) if isinstance(v, (int, float)) else "-"

    print(f"{'trainer':<12} {'wall s':>8} {'child s':>8} {'to 1st step s':>14} {'epoch 1 s':>10} "
          f"{'steady img/s':>13} {'after last epoch s':>19} {'peak GPU GB':>12}")  # fmt: skip
    for r in rows:
        if "skipped" in r:
            print(f"{r['trainer']:<12} skipped: {r['skipped']}")
            continue
        print(f"{r['trainer']:<12} {f(r['wall_s'], '8.1f')} {f(r['child_wall_s'], '8.1f')} "
              f"{f(r['to_first_step_s'], '14.1f')} {f(r['first_epoch_s'], '10.1f')} {f(r['steady_img_s'], '13.1f')} "
              f"{f(r.get('after_last_epoch_s'), '19.1f')} {f(r['peak_gpu_gb'], '12.1f')}")  # fmt: skip


def run_parent(args) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    data = dry_slice(args.data, args.out / "slice", args.images) if args.dry else args.data
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    rows = []
    for trainer in args.trainers:
        if not installed(trainer):
            rows.append({"trainer": trainer, "skipped": f"{trainer} is not installed here"})
            continue
        t0 = time.perf_counter()
        with open(args.out / f"{trainer}.log", "w") as log:
            proc = subprocess.run(child_command(args, trainer, data), env=env, stdout=log, stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            rows.append({"trainer": trainer, "skipped": f"exit status {proc.returncode}, see {args.out}/{trainer}.log"})
            continue
        row = json.loads((args.out / trainer / "timing.json").read_text())
        row["child_wall_s"] = time.perf_counter() - t0
        if row.get("end_of_epochs_s") is not None:  # from the last epoch's end to the process's exit
            row["after_last_epoch_s"] = row["child_wall_s"] - row["end_of_epochs_s"]
        rows.append(row)
    done = {r["trainer"]: r for r in rows if "skipped" not in r}
    ratio = done["y9"]["wall_s"] / done["ultralytics"]["wall_s"] if {"y9", "ultralytics"} <= done.keys() else None
    report = {"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows, "wall_y9_over_ultralytics": ratio}
    (args.out / "versus.json").write_text(json.dumps(report, indent=1, default=str))
    print_table(rows)
    if ratio is not None:
        print(f"wall y9 / Ultralytics: {ratio:.2f}")
    return 0 if all("skipped" not in r or "installed" in r["skipped"] for r in rows) else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path, help="data.yaml (e.g. a split of benchmarks/bench_accuracy.py split)")
    ap.add_argument("--out", type=Path, default=Path("bench-versus"))
    ap.add_argument("--trainers", nargs="+", choices=sorted(CHILDREN), default=["y9", "ultralytics"])
    ap.add_argument("--model", default="yolov9-s", choices=sorted(ULTRALYTICS_MODELS))
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--cache", choices=["none", "ram", "disk"], default="ram")
    ap.add_argument("--device", default=None, help="cpu or a GPU index (default: the first GPU)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set", nargs="+", action="extend", default=[], metavar="K=V", help="y9 key=value overrides")
    ap.add_argument("--dry", action="store_true", help="CPU smoke run on a slice: gelan-t, 160 px, 2 epochs")
    ap.add_argument("--images", type=int, default=8, help="--dry: train and val images of the slice")
    ap.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.dry and not args.child:
        args.device, args.model, args.imgsz, args.epochs, args.batch = "cpu", "gelan-t", 160, 2, 4
        args.workers, args.cache = min(args.workers, 1), "none"
    if args.child:
        out = args.out / args.child
        out.mkdir(parents=True, exist_ok=True)
        timing = CHILDREN[args.child](args, out)
        (out / "timing.json").write_text(json.dumps(timing, indent=1, default=str))
        return 0
    return run_parent(args)


if __name__ == "__main__":
    sys.exit(main())
