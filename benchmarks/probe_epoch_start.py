"""How long each epoch's first batch waits, with and without the next epoch started before validation (issue 48).

    python benchmarks/probe_epoch_start.py DATA_YAML [--batch 16] [--workers 2] [--step 0.6] [--val 0.3]

The training loader alone (RAM cache, augmentation on) through ``y9train.loop.epoch_batches.EpochBatches``; a training
step and a validation are stood in for by sleeps (``--step`` longer than the workers need for a batch, so that
they are ahead within an epoch). Prints, per epoch, the wait for its first batch and the mean wait for the next ones.
"""

from __future__ import annotations

import argparse
import time

from y9train.data import YoloDataset, build_dataloader
from y9train.loop.epoch_batches import EpochBatches
from y9train.optimisation.hyp import TrainConfig


def run(data: str, *, batch: int, workers: int, step: float, val: float, epochs: int, prefetch: bool) -> list[float]:
    ds = YoloDataset.from_yaml(data, "train", imgsz=640, cache="ram")
    loader = build_dataloader(ds, batch, workers=workers)
    batches = EpochBatches(loader, TrainConfig(data=data, epochs=epochs, hyp={"close_mosaic": 0}), print)
    firsts = []
    for epoch in range(epochs):
        it, waits = batches.of(epoch), []
        for _ in range(len(loader)):
            t = time.perf_counter()
            next(it)
            waits.append(time.perf_counter() - t)
            time.sleep(step)
        if prefetch:
            batches.prefetch(epoch + 1)
        time.sleep(val)
        firsts.append(waits[0])
        print(f"{'early' if prefetch else 'late '} epoch {epoch + 1}: first batch waited {waits[0]:.3f} s, "
              f"the others {sum(waits[1:]) / max(1, len(waits) - 1):.3f} s", flush=True)
    return firsts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--step", type=float, default=0.6, help="seconds a training step is stood in for by")
    ap.add_argument("--val", type=float, default=0.3, help="seconds a validation is stood in for by")
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    for prefetch in (False, True):
        run(args.data, batch=args.batch, workers=args.workers, step=args.step, val=args.val, epochs=args.epochs,
            prefetch=prefetch)


if __name__ == "__main__":
    main()
