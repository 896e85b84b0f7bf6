"""Time and peak memory of the assigner and the full loss (forward + backward) on random predictions.

Usage (defaults: the VisDrone training setting, batch 64, 640 px, 110 boxes per image, 10 classes):
    python benchmarks/bench_loss.py [--device cpu|cuda] [--batch 64] [--imgsz 640] [--boxes 110] [--nc 10]
        [--sizes visdrone|coco] [--dual] [--half] [--iters 5] [--json out.json]

Boxes: ``visdrone`` draws log-normal sizes matching VisDrone train labels letterboxed to 640 (median about
9 x 12 px, as measured on ../shared/datasets/visdrone); ``coco`` draws sides log-uniform in 8..600 px (many
large boxes: the worst case for the number of (box, anchor) candidate pairs). Predictions are random maps
``[B, 4 * 16 + nc, H, W]`` (float16 with --half, as under AMP). Peak memory (one call, after a warm-up):
on CUDA the extra ``torch.cuda.max_memory_allocated`` over what was allocated before the call (inputs, grads);
on CPU the growth of the process' resident memory, sampled every 0.5 ms by a thread (approximate: the
allocator may keep or return freed blocks).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import statistics
import sys
import threading
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from y9train.loss import DetectionLoss  # noqa: E402
from y9train.loss.grid import AnchorGrid  # noqa: E402

STRIDES = (8.0, 16.0, 32.0)


def make_labels(
    batch: int, boxes: int, imgsz: int, nc: int, sizes: str, gen: torch.Generator
) -> torch.Tensor:
    """``Tensor[batch * boxes, 6]`` of (batch_index, class, x1, y1, x2, y2) in pixels."""
    n = batch * boxes
    if sizes == "visdrone":
        w = torch.exp(torch.randn(n, generator=gen) * 0.83 + math.log(9.0))
        h = torch.exp(torch.randn(n, generator=gen) * 0.72 + math.log(12.0))
    else:
        w, h = torch.exp(torch.empty(2, n).uniform_(math.log(8), math.log(600), generator=gen))
    w, h = w.clamp(2, imgsz), h.clamp(2, imgsz)
    x1 = torch.rand(n, generator=gen) * (imgsz - w)
    y1 = torch.rand(n, generator=gen) * (imgsz - h)
    b = torch.arange(batch).repeat_interleave(boxes).float()
    c = torch.randint(nc, (n,), generator=gen).float()
    return torch.stack([b, c, x1, y1, x1 + w, y1 + h], 1)


def make_maps(batch: int, imgsz: int, nc: int, dtype, device, gen: torch.Generator) -> list[torch.Tensor]:
    maps = []
    for s in STRIDES:
        m = torch.randn(batch, 64 + nc, imgsz // int(s), imgsz // int(s), generator=gen)
        m[:, 64:] -= 4.0  # class logits near the usual prior
        maps.append(m.to(device=device, dtype=dtype).requires_grad_())
    return maps


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class _RssPeak:
    """Peak resident memory of this process while active, sampled every 0.5 ms by a thread (CPU runs)."""

    def __init__(self) -> None:
        import psutil

        self._proc = psutil.Process()
        self.base = self.peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._proc.memory_info().rss)
            time.sleep(0.0005)

    def __enter__(self) -> _RssPeak:
        gc.collect()
        self.base = self.peak = self._proc.memory_info().rss
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _measure_peak(device: torch.device, fn) -> int:
    """Extra bytes at the peak of ``fn()`` over what was allocated before it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        start = torch.cuda.memory_allocated(device)
        fn()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - start
    with _RssPeak() as rss:
        fn()
    return rss.peak - rss.base


def run(args: argparse.Namespace) -> dict:
    device = torch.device(args.device)
    gen = torch.Generator().manual_seed(0)
    dtype = torch.float16 if args.half else torch.float32
    labels = make_labels(args.batch, args.boxes, args.imgsz, args.nc, args.sizes, gen).to(device)
    branches = [make_maps(args.batch, args.imgsz, args.nc, dtype, device, gen) for _ in range(1 + args.dual)]
    loss_fn = DetectionLoss(args.nc)
    grid = AnchorGrid.from_feats(branches[0], STRIDES)

    x = torch.cat([f.detach().flatten(2) for f in branches[0]], 2)  # [B, 64 + nc, A], as the loss builds it

    def assign_once():
        boxes = loss_fn.decoded_boxes(x[:, :64], grid)
        return loss_fn.assigner(x[:, 64:].transpose(1, 2), boxes, grid, labels)

    asg = assign_once()  # warm-up, and counts
    from y9train.loss.assigner import anchor_ranges

    r = anchor_ranges(labels[:, 2:6], grid)
    pairs = int((r[2] * r[3]).sum())

    preds = branches if args.dual else branches[0]

    def loss_step():
        for m in (m for br in branches for m in br):
            m.grad = None
        loss_fn(preds, labels)[0].backward()

    loss_step()  # warm-up
    assign_peak = _measure_peak(device, assign_once)
    loss_peak = _measure_peak(device, loss_step)

    t_assign, t_fwd, t_bwd = [], [], []
    for _ in range(args.iters):
        _sync(device)
        t0 = time.perf_counter()
        assign_once()
        _sync(device)
        t_assign.append(time.perf_counter() - t0)
    for _ in range(args.iters):
        for m in (m for br in branches for m in br):
            m.grad = None
        _sync(device)
        t0 = time.perf_counter()
        total, _ = loss_fn(preds, labels)
        _sync(device)
        t1 = time.perf_counter()
        total.backward()
        _sync(device)
        t_fwd.append(t1 - t0)
        t_bwd.append(time.perf_counter() - t1)

    a = grid.num_anchors
    return {
        "device": str(device),
        "batch": args.batch,
        "imgsz": args.imgsz,
        "boxes_per_image": args.boxes,
        "nc": args.nc,
        "sizes": args.sizes,
        "branches": 1 + args.dual,
        "dtype": str(dtype).removeprefix("torch."),
        "anchors": a,
        "candidate_pairs": pairs,
        "positives": len(asg),
        "assign_ms": 1e3 * statistics.median(t_assign),  # assigner alone (decode of candidates included)
        "assign_min_ms": 1e3 * min(t_assign),
        "loss_forward_ms": 1e3 * statistics.median(t_fwd),  # everything: concat, assign, all terms, branches
        "loss_forward_min_ms": 1e3 * min(t_fwd),
        "loss_backward_ms": 1e3 * statistics.median(t_bwd),
        "loss_backward_min_ms": 1e3 * min(t_bwd),
        "assign_peak_extra_mb": assign_peak / 2**20,
        "loss_peak_extra_mb": loss_peak / 2**20,
        "dense_bga_float32_tensor_mb": args.batch * args.boxes * a * 4 / 2**20,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--imgsz", type=int, default=640)
    p.add_argument("--boxes", type=int, default=110)
    p.add_argument("--nc", type=int, default=10)
    p.add_argument("--sizes", choices=("visdrone", "coco"), default="visdrone")
    p.add_argument("--dual", action="store_true", help="two branches (yolov9-*), aux weighted 0.25")
    p.add_argument("--half", action="store_true", help="float16 prediction maps, as under AMP")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--json", type=Path, help="also write the result here")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    res = run(args)
    for k, v in res.items():
        print(f"{k:28s} {v:.1f}" if isinstance(v, float) else f"{k:28s} {v}")
    print(
        "(dense_bga_float32_tensor_mb: size of ONE [batch, boxes, anchors] float32 tensor, arithmetic, for scale)"
    )
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
