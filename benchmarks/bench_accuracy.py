"""Accuracy benchmark: train a detector with y9 (or a reference trainer) on a split of a dataset, then evaluate its
last-epoch EMA weights with y9's own evaluator (``y9train.reports.validate.run_validation`` -> ``y9train.metrics.evaluate``)
on the held-out part of the split. Every trainer is evaluated by the same code, on the same images.

Steps (each a sub-command; ``--help`` on each):
  split  DATA_YAML --out DIR [--every 5] [--part K]   every 5th image of the train folder (sorted names; index % 5
                                               == K, default 4) -> DIR/eval.txt,
                                               the rest -> DIR/train.txt, DIR/data.yaml (train/val = the lists).
                                               Nothing is copied: the lists name the original files.
  run    --data DIR/data.yaml --out RUN ...    trains and evaluates; writes RUN/result.json and RUN/row.md.
         --reference official --official-dir SRC   runs the official YOLOv9 train_dual.py (yolov9-*) / train.py
                                               (gelan-*) untouched from its source tree SRC (numbers only);
         --reference ultralytics               runs Ultralytics (``YOLO("yolov9s.yaml").train(...)``, its defaults).
  table  RESULT.json ...                       one markdown table: mean and spread over seeds per configuration.
  compare --a RESULT.json ... --b RESULT.json ... [--figure final|late10|late16|late10-box...] [--within 0.01]
                                               B against A: difference, standard error, permutation p, and
                                               whether a gap or parity within W is shown (accuracy_stats.py).

Example (the H200 runs in docs/benchmarks.md):
  python benchmarks/bench_accuracy.py split ../shared/datasets/deeppcb/data.yaml --out splits/deeppcb
  python benchmarks/bench_accuracy.py run --data splits/deeppcb/data.yaml --model yolov9-s --seed 0 --out r/y9-s0
  python benchmarks/bench_accuracy.py run --data splits/deeppcb/data.yaml --model yolov9-s --seed 0 \\
      --reference official --official-dir yolov9 --out r/off-s0
  python benchmarks/bench_accuracy.py table r/*/result.json

The reference trainers are not dependencies of y9; they must be importable / present where this runs.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from accuracy_report import FIGURES, compare_runs, row, table  # noqa: E402
from reference_env import official_env, ultralytics_env  # noqa: E402

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"}
# what the official README's training commands pass (train_dual.py's own default, 0, never closes mosaic)
OFFICIAL_CLOSE_MOSAIC = 15


# ---------------------------------------------------------------------------------------------- split
def make_split(data_yaml: Path, out: Path, every: int = 5, part: int | None = None) -> Path:
    """Lists of absolute image paths: index % every == part -> eval, the rest -> train; ``part`` defaults to
    ``every - 1`` (the split every earlier figure used). Another ``part`` holds out a disjoint set of images: levers
    chosen on one split are judged on another. Returns the data.yaml."""
    part = every - 1 if part is None else part
    if every < 2 or not 0 <= part < every:
        raise SystemExit(f"--every {every} --part {part}: expected every >= 2 and 0 <= part < every.")
    cfg = yaml.safe_load(data_yaml.read_text())
    base = (data_yaml.parent / cfg.get("path", ".")).resolve()
    folder = base / cfg["train"]
    images = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if len(images) < 2 * every:
        raise SystemExit(f"{folder} holds {len(images)} images; expected at least {2 * every} to split.")
    evals = [p for i, p in enumerate(images) if i % every == part]
    trains = [p for i, p in enumerate(images) if i % every != part]
    out.mkdir(parents=True, exist_ok=True)
    (out / "train.txt").write_text("".join(f"{p}\n" for p in trains))
    (out / "eval.txt").write_text("".join(f"{p}\n" for p in evals))
    names = cfg["names"]
    names = {i: n for i, n in enumerate(names)} if isinstance(names, list) else names
    split = {
        "path": str(out.resolve()),
        "train": "train.txt",
        "val": "eval.txt",
        "nc": cfg["nc"],
        "names": names,
    }
    (out / "data.yaml").write_text(yaml.safe_dump(split, sort_keys=False))
    print(f"{out / 'data.yaml'}: {len(trains)} train, {len(evals)} eval images (every {every}th from index {part} of {folder})")
    return out / "data.yaml"


# ---------------------------------------------------------------------------------------------- evaluation
def evaluate_module(model, data_yaml: Path, imgsz: int, batch: int = 32, workers: int = 4) -> dict:
    """y9's evaluator on the split's eval list (fp32, conf 0.001, iou 0.7, max_det 300)."""
    import torch

    from y9train.data import YoloDataset, build_dataloader, load_data_yaml
    from y9train.reports.validate import run_validation

    cfg = load_data_yaml(str(data_yaml), require=("val",))
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ds = YoloDataset.from_yaml(cfg, "val", augment=False, imgsz=imgsz, workers=workers)
    loader = build_dataloader(ds, batch, workers=workers, persistent_workers=False)
    model = model.float().to(dev).eval()
    res = run_validation(model, loader, device=dev, nc=cfg.nc, names=cfg.names)
    return {k: res.metrics[k] for k in ("map50_95", "map50", "precision", "recall", "map_small")} | {
        "eval_images": res.images,
        "eval_targets": res.targets,
    }


class _FirstOutput:
    """Wraps a reference model whose eval forward returns (pred [B, 4+nc, A], extras): y9's evaluator wants pred."""

    def __new__(cls, model):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                out = self.inner(x)
                while isinstance(out, (tuple, list)):
                    out = out[0]
                return out

        return Wrapped(model)


# ---------------------------------------------------------------------------------------------- trainers
def y9_config(args, out: Path):
    """The y9 run's TrainConfig and its overrides: the recipe (--hyp, else y9's defaults), then --set, then
    --close-mosaic where given (a --set close_mosaic wins)."""
    from y9train.optimisation.hyp import TrainConfig, apply_overrides, load_hyp, parse_overrides

    hyp = load_hyp(args.hyp) if args.hyp else None
    config = TrainConfig(
        data=str(args.data), model=args.model, imgsz=args.imgsz, epochs=args.epochs, batch=args.batch,
        workers=args.workers, seed=args.seed, cache=args.cache, project=str(out), name="y9", exist_ok=True,
        **({"hyp": hyp} if hyp is not None else {}),
    )  # fmt: skip
    overrides = parse_overrides(args.set)
    if args.close_mosaic is not None:
        overrides.setdefault("close_mosaic", str(args.close_mosaic))
    return apply_overrides(config, overrides, "--set"), overrides


def train_y9(args, out: Path) -> tuple[object, float, dict]:
    from y9train.checkpoint import load_checkpoint
    from y9train.loop.trainer import Trainer
    from y9train.setup.determinism import state_digest

    config, overrides = y9_config(args, out)
    t0 = time.perf_counter()
    trainer = Trainer(config)
    result = trainer.fit()
    wall = time.perf_counter() - t0
    hist = result.history
    graphed = trainer.graphed
    extra = {
        "per_epoch_map50_95": [h.get("metrics/map50_95") for h in hist],
        "img_s_median": statistics.median(h["img_s"] for h in hist) if hist else None,
        "hyp": trainer.config.hyp.to_dict(),  # as the run resolved it (optimizer, ema_tau)
        "overrides": overrides,
        "amp": config.amp, "compile": config.compile, "cuda_graph": config.cuda_graph, "cache": config.cache,
        "cuda_graph_used": graphed is not None and graphed.shape is not None,
        "graph_replays": graphed.replays if graphed is not None else 0,
        "async_save": config.async_save,
        "deterministic": config.deterministic,
        "weights_sha256": state_digest(trainer.model),  # the final training weights: equal runs, equal digests
    }  # fmt: skip
    return load_checkpoint(result.last), wall, extra


def official_command(args, out: Path) -> list[str]:
    """The untouched official trainer's command line: train_dual.py for yolov9-*, train.py for gelan-*, on the
    split's data.yaml."""
    script = "train_dual.py" if args.model.startswith("yolov9") else "train.py"
    return [
        sys.executable, script, "--weights", "", "--cfg", f"models/detect/{args.model}.yaml",
        "--data", str(Path(args.data).resolve()), "--hyp", "data/hyps/hyp.scratch-high.yaml",
        "--epochs", str(args.epochs), "--batch-size", str(args.batch), "--img", str(args.imgsz),
        "--close-mosaic", str(args.close_mosaic if args.close_mosaic is not None else OFFICIAL_CLOSE_MOSAIC),
        "--noplots",
        "--workers", str(args.workers), "--seed", str(args.seed), "--device", os.environ.get("BENCH_DEVICE", "0"),
        "--project", str(out.resolve()), "--name", "official", "--exist-ok",
        *(["--save-period", "1"] if args.score_epochs else []),
    ]  # fmt: skip


def train_official(args, out: Path) -> tuple[object, float, dict]:
    from y9train.checkpoint import load_checkpoint

    src = Path(args.official_dir).resolve()
    cmd = official_command(args, out)
    t0 = time.perf_counter()
    with open(out / "official.log", "w") as log:
        subprocess.run(cmd, cwd=src, env=official_env(out), stdout=log, stderr=subprocess.STDOUT, check=True)
    wall = time.perf_counter() - t0
    weights = out / "official" / "weights"
    extra = {"command": " ".join(cmd)}
    if args.score_epochs:
        extra["per_epoch_scored"] = score_epoch_checkpoints(args, weights)
    return load_checkpoint(weights / "last.pt"), wall, extra


def score_epoch_checkpoints(args, weights: Path) -> dict[int, float]:
    """mAP50-95 by y9's evaluator of the EMA in each of the last ``--score-epochs`` epoch checkpoints that
    ``--save-period 1`` made the official trainer write (``epoch{e}.pt``, e from 0), keyed by 1-based epoch as
    y9's per-epoch validation (which uses the same evaluator) is; each file is removed once scored."""
    from y9train.checkpoint import load_checkpoint

    scored = {}
    for e in range(max(0, args.epochs - args.score_epochs), args.epochs):
        path = weights / f"epoch{e}.pt"
        scored[e + 1] = evaluate_module(load_checkpoint(path), Path(args.data), args.imgsz,
                                        workers=min(args.workers, 8))["map50_95"]  # fmt: skip
        print(f"epoch {e + 1}: mAP50-95 {scored[e + 1]:.4f} (y9's evaluator)", flush=True)
    for path in weights.glob("epoch*.pt"):
        path.unlink()
    return scored


def ultralytics_arguments(args, out: Path) -> tuple[str, dict]:
    """The Ultralytics model YAML (its YOLOv9s for yolov9-s and gelan-s) and the train() keywords: its defaults
    except the run's schedule and the benchmark's bookkeeping (close_mosaic only where given)."""
    yaml_name = {"yolov9-s": "yolov9s.yaml", "gelan-s": "yolov9s.yaml", "yolov9-t": "yolov9t.yaml",
                 "yolov9-m": "yolov9m.yaml", "yolov9-c": "yolov9c.yaml"}[args.model]  # fmt: skip
    kwargs = {
        "data": str(Path(args.data).resolve()), "epochs": args.epochs, "batch": args.batch, "imgsz": args.imgsz,
        "seed": args.seed, "workers": args.workers, "project": str(out.resolve()), "name": "ultralytics",
        "exist_ok": True, "plots": False, "device": 0,
    }  # fmt: skip
    if args.close_mosaic is not None:
        kwargs["close_mosaic"] = args.close_mosaic
    return yaml_name, kwargs


def train_ultralytics(args, out: Path) -> tuple[object, float, dict]:
    ultralytics_env(out / "ultralytics_config")
    from ultralytics import YOLO  # a reference, not a dependency of y9

    yaml_name, kwargs = ultralytics_arguments(args, out)
    t0 = time.perf_counter()
    YOLO(yaml_name).train(**kwargs)
    wall = time.perf_counter() - t0
    last = out / "ultralytics" / "weights" / "last.pt"
    model = YOLO(str(last)).model
    return _FirstOutput(model), wall, {"ultralytics_cfg": yaml_name, "kwargs": kwargs}


TRAINERS = {"y9": train_y9, "official": train_official, "ultralytics": train_ultralytics}


def run(args) -> dict:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model, wall, extra = TRAINERS[args.reference](args, out)
    metrics = evaluate_module(model, Path(args.data), args.imgsz, workers=min(args.workers, 8))
    n_train = len((Path(args.data).parent / "train.txt").read_text().splitlines())
    result = {
        "trainer": args.reference, "model": args.model, "data": str(args.data), "label": args.label,
        "seed": args.seed, "epochs": args.epochs, "batch": args.batch, "imgsz": args.imgsz,
        "train_images": n_train, "wall_s": round(wall, 1), "img_s_wall": round(n_train * args.epochs / wall, 1),
        **metrics, **extra,
    }  # fmt: skip
    (out / "result.json").write_text(json.dumps(result, indent=1, default=str))
    (out / "row.md").write_text(row(result) + "\n")
    print(row(result))
    return result


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("split", help="write train/eval lists and a data.yaml for them")
    sp.add_argument("data_yaml", type=Path)
    sp.add_argument("--out", type=Path, required=True)
    sp.add_argument("--every", type=int, default=5, help="every Nth image (sorted by name) goes to eval")
    sp.add_argument("--part", type=int, default=None,
                    help="which of the N goes to eval: index %% N == part (default N - 1); another part, another split")
    rp = sub.add_parser("run", help="train one model and evaluate it on the split's eval list")
    rp.add_argument("--data", type=Path, required=True, help="a data.yaml written by `split`")
    rp.add_argument("--out", type=Path, required=True)
    rp.add_argument("--model", default="yolov9-s")
    rp.add_argument("--epochs", type=int, default=40)
    rp.add_argument("--batch", type=int, default=32)
    rp.add_argument("--imgsz", type=int, default=640)
    rp.add_argument("--seed", type=int, default=0)
    rp.add_argument("--workers", type=int, default=8)
    rp.add_argument(
        "--close-mosaic",
        type=int,
        default=None,
        help="mosaic off for the last N epochs, for whichever trainer runs; default: the trainer's own (y9: its "
        f"recipe's close_mosaic; Ultralytics: its default, 10; official: {OFFICIAL_CLOSE_MOSAIC}, as the official "
        "README's training commands pass, since train_dual.py's own default 0 never closes mosaic)",
    )
    rp.add_argument(
        "--reference", choices=sorted(TRAINERS), default="y9", help="which trainer (y9 by default)"
    )
    rp.add_argument("--official-dir", help="source tree of the official YOLOv9 code (--reference official)")
    rp.add_argument(
        "--score-epochs",
        type=int,
        default=0,
        help="official: also score the EMA of each of the last N epochs with y9's evaluator (the official runs "
        "with --save-period 1; result.json's per_epoch_scored). y9's own per-epoch validation already is that "
        "evaluator (per_epoch_map50_95)",
    )
    rp.add_argument("--hyp", help="y9: hyperparameter recipe name or YAML file (default: y9's defaults)")
    rp.add_argument("--set", nargs="*", default=[], help="y9: key=value overrides of the recipe")
    rp.add_argument("--cache", default="ram", help="y9: image cache (ram | disk | none)")
    rp.add_argument("--label", default="", help="a name for this configuration in the table")
    tp = sub.add_parser("table", help="markdown table of result.json files (mean and spread over seeds)")
    tp.add_argument("results", nargs="+")
    cp = sub.add_parser(
        "compare", help="group B against group A (runs' result.json): is a gap or parity shown?"
    )
    cp.add_argument("--a", nargs="+", required=True, help="result.json of group A (e.g. the reference)")
    cp.add_argument("--b", nargs="+", required=True, help="result.json of group B")
    cp.add_argument(
        "--figure",
        choices=FIGURES,
        default="final",
        help="final / late10 / late16: mAP50-95 of the last epoch / mean of the last ten / sixteen; late10-box|cls|dfl: that training "
        "loss term's mean over the last ten epochs (from the run's per-epoch CSV)",
    )
    cp.add_argument(
        "--within", type=float, default=0.01,
        help="parity margin (0.01 = 1 point of mAP50-95); an undecided verdict also says about how many runs per "
        "trainer would show it at the observed spreads",
    )  # fmt: skip
    return ap


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.cmd == "split":
        make_split(args.data_yaml, args.out, args.every, args.part)
    elif args.cmd == "run":
        if args.cache == "none":
            args.cache = None
        run(args)
    elif args.cmd == "compare":
        print(compare_runs(args.a, args.b, args.figure, args.within))
    else:
        print(table(args.results))


if __name__ == "__main__":
    main()
