"""Does ``cuda_graph=true`` train the same network as the eager loop? (GPU check, not a speed benchmark.)

Trains the same model twice from the same seed on the first ``--images`` training images for ``--epochs`` epochs
(no validation, no checkpoints): once eagerly, once with the forward/backward replayed as CUDA graphs. Prints and
writes OUT/cuda_graph_check.json: each epoch's mean losses of both runs, the relative difference of the final
parameters (``|a - b| / |a|`` over all of them) and of the BatchNorm running statistics, how many batches each
path replayed, and a verdict: the runs agree when every loss differs by less than ``--rtol`` relatively and the
parameters by less than ``--param-rtol`` (both runs differ a little anyway: cuDNN picks its algorithms per run; a second eager run gives that noise floor).
With ``--deterministic`` every run is ``deterministic=true`` and they agree only when losses, parameters and BatchNorm
statistics are equal bit for bit.

  python benchmarks/check_cuda_graph.py splits/deeppcb/data.yaml --model yolov9-s --images 320 --epochs 2
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def subset_data_yaml(data_yaml: Path, n: int, folder: Path) -> Path:
    """A data.yaml whose train list is the first ``n`` images of ``data_yaml``'s train list (a list file)."""
    cfg = yaml.safe_load(data_yaml.read_text())
    base = (data_yaml.parent / cfg.get("path", ".")).resolve()
    lines = (base / cfg["train"]).read_text().splitlines()[:n]
    (folder / "train.txt").write_text("".join(f"{p}\n" for p in lines))
    cfg.update(path=str(folder), train="train.txt", val="train.txt")
    out = folder / "data.yaml"
    out.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return out


def add_subset_run_arguments(ap: argparse.ArgumentParser, out: Path) -> None:
    """The options of a short run on the first ``--images`` training images (this check and check_determinism)."""
    ap.add_argument(
        "data", type=Path, help="a data.yaml whose train entry is a list file (bench_accuracy split)"
    )
    ap.add_argument("--out", type=Path, default=out)
    ap.add_argument("--model", default="yolov9-s")
    ap.add_argument("--images", type=int, default=320)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--workers", type=int, default=4)


def train(data: Path, args, graph: bool):
    import torch

    from y9train.loop.trainer import Trainer
    from y9train.optimisation.hyp import TrainConfig

    cfg = TrainConfig(data=str(data), model=args.model, imgsz=args.imgsz, epochs=args.epochs, batch=args.batch,
                      workers=args.workers, seed=0, cache="ram", val=False, save=False, cuda_graph=graph,
                      deterministic=args.deterministic, verbose=False)  # fmt: skip
    tr = Trainer(cfg)
    res = tr.fit()
    params = [p.detach().float().clone() for p in tr.model.parameters()]
    stats = [b.detach().float().clone() for n, b in tr.model.named_buffers() if "running" in n]
    g = tr.graphed
    paths = {"replays": g.replays, "eager_calls": g.eager_calls, "failed": g.failed} if g is not None else {}
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return res.history, params, stats, paths


def rel(a, b) -> float:
    import torch

    num = torch.sqrt(sum(((x - y) ** 2).sum() for x, y in zip(a, b, strict=True)))
    den = torch.sqrt(sum((x**2).sum() for x in a))
    return float(num / den)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_subset_run_arguments(ap, out=Path("cuda-graph-check"))
    ap.add_argument(
        "--rtol", type=float, default=0.02, help="largest relative difference of an epoch's mean loss"
    )
    ap.add_argument(
        "--param-rtol", type=float, default=0.01, help="largest relative difference of the parameters"
    )
    ap.add_argument(
        "--deterministic", action="store_true", help="deterministic=true; agree = equal to the bit"
    )
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = subset_data_yaml(args.data, args.images, Path(tmp))
        h_e, p_e, s_e, _ = train(data, args, graph=False)
        h_e2, p_e2, s_e2, _ = train(data, args, graph=False)  # the noise floor: eager twice
        h_g, p_g, s_g, paths = train(data, args, graph=True)
    keys = ("train/box", "train/cls", "train/dfl")
    epochs = [{k: (e[k], g[k]) for k in keys} for e, g in zip(h_e, h_g, strict=True)]
    worst = max(abs(a - b) / max(abs(a), 1e-12) for ep in epochs for a, b in ep.values())
    out = {
        "model": args.model, "images": args.images, "epochs": args.epochs, "batch": args.batch,
        "losses_eager_vs_graph": epochs, "worst_loss_rel_diff": worst,
        "param_rel_diff": rel(p_e, p_g), "bn_stats_rel_diff": rel(s_e, s_g), "graph_paths": paths,
        "eager_twice": {"param_rel_diff": rel(p_e, p_e2), "bn_stats_rel_diff": rel(s_e, s_e2),
                        "losses": [{k: (e[k], f[k]) for k in keys} for e, f in zip(h_e, h_e2, strict=True)]},
        "img_s": {"eager": [e["img_s"] for e in h_e], "graph": [g["img_s"] for g in h_g]},
    }  # fmt: skip
    out["deterministic"] = args.deterministic
    if args.deterministic:
        exact = worst == 0 and out["param_rel_diff"] == 0 and out["bn_stats_rel_diff"] == 0
        out["agree"] = bool(paths.get("replays", 0) > 0 and exact)
    else:
        out["agree"] = bool(
            paths.get("replays", 0) > 0 and worst < args.rtol and out["param_rel_diff"] < args.param_rtol
        )
    (args.out / "cuda_graph_check.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
