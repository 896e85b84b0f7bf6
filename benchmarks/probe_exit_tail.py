"""Where a training process's exit waits (issue 48: the silent tail after a run's last line on a GPU machine).

    python benchmarks/probe_exit_tail.py loader keep     # a DataLoader alone: 8 persistent workers, pinned memory
    python benchmarks/probe_exit_tail.py loader close    # the same, its workers shut down before the exit
    python benchmarks/probe_exit_tail.py trainer DATA.yaml --epochs 4   # a yolov9-s run; stacks every 4 s at exit

Each prints ``T <unix time> leaving`` as its last line before the interpreter's exit; time the process from outside
(``s=$(date +%s.%N); python ...; date +%s.%N``) and take the difference: the tail. ``trainer`` also lists the threads
and child processes still alive when ``fit`` has returned and dumps every thread's stack (``faulthandler``) every 4 s
while the exit goes on: with y9 before 36be108 the main thread sat in torch's DataLoader ``_clean_up_worker`` joining
the loader workers (docs/benchmarks.md, "Training: speed"; docs/results/h200-2026-12-06-s24/).
"""

from __future__ import annotations

import argparse
import faulthandler
import multiprocessing
import threading
import time


def probe_loader(close: bool) -> None:
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Frames(Dataset):
        def __len__(self) -> int:
            return 256

        def __getitem__(self, i: int):
            return torch.zeros(3, 64, 64, dtype=torch.uint8)

    loader = DataLoader(Frames(), batch_size=8, num_workers=8, persistent_workers=True,
                        pin_memory=torch.cuda.is_available(), prefetch_factor=2)  # fmt: skip
    for _ in range(2):
        for _ in loader:
            pass
    if close:
        from y9train.data.loader import shutdown_workers

        shutdown_workers(loader)


def probe_trainer(data: str, epochs: int, out: str) -> None:
    from y9train.loop.trainer import Trainer
    from y9train.run.train import build_config

    cfg = build_config(data=data, model="yolov9-s", epochs=epochs, batch=32, imgsz=640, workers=8, cache="ram",
                       project=out, name="probe", exist_ok=True)  # fmt: skip
    Trainer(cfg).fit()
    print(f"T {time.time():.3f} fit returned", flush=True)
    print("threads", [(t.name, t.daemon) for t in threading.enumerate()], flush=True)
    print("children", multiprocessing.active_children(), flush=True)
    faulthandler.dump_traceback_later(4, repeat=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    lo = sub.add_parser("loader")
    lo.add_argument("mode", choices=["keep", "close"])
    tr = sub.add_parser("trainer")
    tr.add_argument("data")
    tr.add_argument("--epochs", type=int, default=4)
    tr.add_argument("--out", default="probe-exit")
    args = ap.parse_args()
    if args.what == "loader":
        probe_loader(args.mode == "close")
    else:
        probe_trainer(args.data, args.epochs, args.out)
    print(f"T {time.time():.3f} leaving", flush=True)


if __name__ == "__main__":
    main()
