"""y9's loss against train_dual.py's own loss on the same predictions, inside the fp16 autocast (``Hyp.loss_fp16``).

The official computes ``utils/loss_tal_dual.py`` inside ``torch.cuda.amp.autocast`` on the network's fp16 maps; y9's
``DetectionLoss`` computes in float32 unless ``fp16=True`` (``--hyp official`` on a GPU), which rounds where that
autocast region rounds (docs/training.md, the ``loss_fp16`` switch). This check takes the official model (built from
the untouched source's yaml, its own initialisation), optionally trains it for ``--train-steps`` batches with its own
loss (SGD, fp16 autocast and a GradScaler where the device is CUDA) so that its predictions are not a fresh model's,
then for each of ``--batches`` batches of train_dual.py's own loader:
1. runs the official model once under the autocast, and makes its output maps leaves (the same fp16 values for all);
2. computes the official ``ComputeLoss`` under the autocast, y9's loss with ``fp16=True`` and with ``fp16=False``
   (the official assigner rule, y9's branch order main then aux), and the official loss on the maps cast to float32
   outside the autocast (the official's own fp32 figure: how far fp16 moves it);
3. compares each with the official under autocast: the three gained terms and the gradient with respect to the maps
   (relative L2 over all maps).
On a CPU there is no fp16 autocast: everything is float32 there and ``fp16=True`` is not what the official does, so
the CPU figures check the harness (the y9 fp32 loss against the official's), not the fp16 flow.

    python benchmarks/check_loss_fp16.py --official-dir SRC --data SPLIT/data.yaml --model yolov9-s \\
        --imgsz 640 --batch 16 --train-steps 100 --batches 4 --device cuda:0 --out OUT/loss_fp16.json

Benchmark code: it imports the official source into this process (numbers only; nothing of it goes into y9).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))
from official_order import split_list  # noqa: E402
from official_stream import official_train_loader, y9_labels  # noqa: E402

from y9train.loss import DetectionLoss  # noqa: E402

VARIANTS = ("y9_fp16", "y9_fp32", "official_fp32")


def relative(a: torch.Tensor, b: torch.Tensor) -> float:
    """``|a - b| / |b|`` (L2), float64."""
    a, b = a.double().flatten(), b.double().flatten()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def leaves(preds, dtype: torch.dtype | None = None) -> list[list[torch.Tensor]]:
    """The official train-mode output ``[aux maps, main maps]`` as fresh leaves requiring gradients (cast to
    ``dtype`` when given)."""
    return [[m.detach().to(dtype=dtype, copy=True).requires_grad_() for m in branch] for branch in preds]


def loss_and_grad(fn, maps: list[list[torch.Tensor]], scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(gained terms (Tensor[3]), gradient of the total w.r.t. every map, flattened float32)``. The backward pass
    starts from ``total * scale`` (as a GradScaler's does: fp16 gradients of the unscaled loss underflow) and the
    gradient is divided by it again."""
    total, parts = fn(maps)
    (total * scale).backward()
    grad = torch.cat([m.grad.float().flatten() for branch in maps for m in branch]) / scale
    return parts.detach().float().cpu(), grad.cpu()


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--official-dir", type=Path, required=True, help="source tree of the official YOLOv9 code"
    )
    ap.add_argument(
        "--data", type=Path, required=True, help="a data.yaml written by `bench_accuracy.py split`"
    )
    ap.add_argument("--model", default="yolov9-s", help="a dual model of the official models/detect/")
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--train-steps", type=int, default=100, help="official training steps before measuring")
    ap.add_argument("--batches", type=int, default=4, help="batches measured")
    ap.add_argument("--seed", type=int, default=0, help="the official model's initial weights")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--loss-scale", type=float, default=1024.0, help="the backward passes' loss scale")
    ap.add_argument("--out", type=Path, required=True, help="JSON file of the figures")
    args = ap.parse_args(argv)
    dev = torch.device(args.device)
    amp = dev.type == "cuda"
    work = args.out.parent / "loss_fp16_work"
    loader, _ = official_train_loader(
        args.official_dir.resolve(), split_list(args.data), args.imgsz, args.batch, args.workers, False, work
    )
    from models.yolo import Model  # the official source's, untouched (on sys.path from official_train_loader)
    from utils.loss_tal_dual import ComputeLoss

    names = yaml.safe_load(args.data.read_text())["names"]
    nc = len(names)
    torch.manual_seed(args.seed)
    model = Model(str(args.official_dir / "models" / "detect" / f"{args.model}.yaml"), ch=3, nc=nc).to(dev)
    model.hyp = yaml.safe_load((args.official_dir / "data" / "hyps" / "hyp.scratch-high.yaml").read_text())
    official = ComputeLoss(model)
    y9 = {
        flag: DetectionLoss(nc, assigner_rule="official", fp16=flag, strides=[float(s) for s in model.stride])
        for flag in (True, False)
    }
    autocast = torch.autocast(dev.type, dtype=torch.float16, enabled=amp)
    batches = endless(loader)  # (imgs, targets, paths, shapes), as train_dual.py iterates it
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.937, nesterov=True)
    scaler = torch.amp.GradScaler(dev.type, enabled=amp)
    model.train()
    for step in range(args.train_steps):
        imgs, targets, _, _ = next(batches)
        imgs = imgs.to(dev).float() / 255
        with autocast:
            loss, _ = official(model(imgs), targets.to(dev))
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        scaler.step(opt)
        scaler.update()
        if step % 20 == 0:
            print(f"official training step {step}: loss {float(loss):.3f}", flush=True)
    rows = []
    for k in range(args.batches):
        imgs, targets, _, _ = next(batches)
        imgs = imgs.to(dev).float() / 255
        labels = y9_labels(targets, imgs.shape).to(dev)
        targets = targets.to(dev)
        with torch.no_grad(), autocast:
            preds = model(imgs)

        def run_official(maps, targets=targets):
            with autocast:
                return official(maps, targets)

        def run_official_fp32(maps, targets=targets):
            with torch.autocast(dev.type, enabled=False):
                return official(maps, targets)

        ref_parts, ref_grad = loss_and_grad(run_official, leaves(preds), args.loss_scale)
        row = {"batch": k, "boxes": int(labels.shape[0]), "dtype": str(preds[0][0].dtype),
               "official": ref_parts.tolist()}  # fmt: skip
        for name in VARIANTS:
            if name == "official_fp32":
                parts, grad = loss_and_grad(run_official_fp32, leaves(preds, torch.float32), args.loss_scale)
            else:
                loss = y9[name == "y9_fp16"]
                fn = lambda m, loss=loss, labels=labels: _y9_total(loss, m, labels)  # noqa: E731
                parts, grad = loss_and_grad(fn, leaves(preds), args.loss_scale)
            row[name] = {
                "terms": parts.tolist(),
                "terms_rel": [
                    abs(float(p - r)) / max(abs(float(r)), 1e-30) for p, r in zip(parts, ref_parts)
                ],
                "grad_rel": relative(grad, ref_grad),
            }
        rows.append(row)
        print(json.dumps(row), flush=True)
    summary = {
        name: {
            "terms_rel_max": max(max(r[name]["terms_rel"]) for r in rows),
            "grad_rel_max": max(r[name]["grad_rel"] for r in rows),
        }
        for name in VARIANTS
    }
    result = {"args": {k: str(v) for k, v in vars(args).items()}, "device": str(dev), "amp": amp,
              "torch": torch.__version__, "rows": rows, "summary": summary}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(summary, indent=1))
    return result


def endless(loader):
    """The loader's batches, epoch after epoch."""
    while True:
        yield from loader


def _y9_total(loss: DetectionLoss, maps: list[list[torch.Tensor]], labels: torch.Tensor):
    """y9's loss of the official output ``[aux, main]``: y9 takes its branches main first."""
    total, parts = loss([maps[1], maps[0]], labels)
    return total, torch.stack([parts["box"], parts["cls"], parts["dfl"]])


if __name__ == "__main__":
    main()
