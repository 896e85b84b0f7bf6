"""Does ``deterministic=true`` train the same weights twice? (GPU check, not a speed benchmark.)

Trains one model from one seed on the first ``--images`` training images for ``--epochs`` epochs (no validation,
no checkpoints) ``--runs`` times with ``deterministic=true`` and, for contrast, ``--runs`` times with it off (the
default: cuDNN autotuning). For each mode it reports whether every run ended with the same weights (the
``y9train.setup.determinism.state_digest`` of the model and of its EMA), the largest absolute parameter difference
between the first run and each other, whether the per-epoch mean losses repeat exactly, and each run's training
speed (images per second, median over epochs: a comparison of the two modes only when nothing else runs on
the GPU). Writes OUT/determinism_check.json; exit status 1 when the deterministic runs differ.

  python benchmarks/check_determinism.py splits/deeppcb/data.yaml --model yolov9-s --images 320 --epochs 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from check_cuda_graph import add_subset_run_arguments, subset_data_yaml  # noqa: E402


def train_once(data: Path, args, deterministic: bool) -> dict:
    """One run; its digests, parameters (on the host), per-epoch losses and speed."""
    import torch

    from y9train.loop.trainer import Trainer
    from y9train.optimisation.hyp import TrainConfig, load_hyp
    from y9train.setup.determinism import state_digest

    recipe = {"hyp": load_hyp(args.hyp)} if args.hyp else {}
    cfg = TrainConfig(data=str(data), model=args.model, imgsz=args.imgsz, epochs=args.epochs, batch=args.batch,
                      workers=args.workers, seed=args.seed, cache="ram", val=False, save=False,
                      deterministic=deterministic, device=args.device, verbose=False, **recipe)  # fmt: skip
    tr = Trainer(cfg)
    res = tr.fit()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    keys = ("train/box", "train/cls", "train/dfl")
    return {
        "digest": state_digest(tr.model),
        "ema_digest": state_digest(tr.ema.module),
        "losses": [[h[k] for k in keys] for h in res.history],
        "img_s": statistics.median(h["img_s"] for h in res.history),
        "graphed": tr.graphed is not None and tr.graphed.shape is not None,
        "params": [p.detach().float().cpu().clone() for p in tr.model.parameters()],
    }


def summarise(runs: list[dict]) -> dict:
    """Agreement of the runs of one mode with the first."""
    first = runs[0]
    max_abs = [
        max(float((a - b).abs().max()) for a, b in zip(first["params"], r["params"], strict=True))
        for r in runs[1:]
    ]
    return {
        "runs": len(runs),
        "same_weights": all(
            r["digest"] == first["digest"] and r["ema_digest"] == first["ema_digest"] for r in runs
        ),
        "same_losses": all(r["losses"] == first["losses"] for r in runs),
        "max_abs_param_diff": max_abs,
        "digests": [r["digest"][:16] for r in runs],
        "losses_last_epoch": [r["losses"][-1] for r in runs],
        "img_s": [round(r["img_s"], 1) for r in runs],
        "cuda_graph_used": [r["graphed"] for r in runs],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_subset_run_arguments(ap, out=Path("determinism-check"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default=None, help="cpu or a GPU index (default: the first GPU, else CPU)")
    ap.add_argument("--runs", type=int, default=2, help="runs per mode (at least 2)")
    ap.add_argument("--no-contrast", action="store_true", help="skip the runs with deterministic off")
    ap.add_argument("--hyp", default=None, help="recipe name or YAML (default: y9's defaults), e.g. official")
    args = ap.parse_args()
    if args.runs < 2:
        ap.error(f"--runs {args.runs}: expected at least 2 (runs are compared with each other).")
    args.out.mkdir(parents=True, exist_ok=True)
    modes = [True] if args.no_contrast else [True, False]
    out: dict = {"model": args.model, "images": args.images, "epochs": args.epochs, "batch": args.batch,
                 "imgsz": args.imgsz, "seed": args.seed, "hyp": args.hyp or "default"}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        data = subset_data_yaml(args.data, args.images, Path(tmp))
        for deterministic in modes:
            runs = [train_once(data, args, deterministic) for _ in range(args.runs)]
            out["deterministic" if deterministic else "default"] = summarise(runs)
            (args.out / "determinism_check.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))
    return 0 if out["deterministic"]["same_weights"] else 1


if __name__ == "__main__":
    sys.exit(main())
