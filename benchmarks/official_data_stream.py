"""Does the official trainer's data stream follow ``--seed``? Digests of its first training batches, per seed.

For each seed this builds train_dual.py's training loader the way train_dual.py does (``init_seeds(seed + 1,
deterministic=True)``, then ``create_dataloader(...)`` with ``hyp.scratch-high.yaml``, ``augment=True``,
``shuffle=True``, the given ``close_mosaic`` flag and worker count), in a fresh process of the untouched official
code, and prints a sha256 of each of the first batches (images and targets together) with its first file names.
``--order seed`` first renames the split's training images for the seed (``official_order.seeded_split``, what
``bench_accuracy.py run --reference official --official-order seed`` trains on).

  python benchmarks/official_data_stream.py --official-dir yolov9 --data splits/deeppcb/data.yaml \\
      --python /path/to/official/venv/bin/python --seeds 0 1 --order fixed seed

Prints one line per (order, seed, batch) and, per order, whether the seeds' streams are equal; exits 0.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from official_order import seeded_split, split_list  # noqa: E402
from reference_env import official_env  # noqa: E402

# run inside the official source tree (cwd) with the official's Python; argv: y9 root, train list, seed, imgsz,
# batch, workers, batches, close_mosaic (0/1), work folder
_PROBE = """
import sys
from pathlib import Path
root, train, (seed, imgsz, batch, workers, n, close), work = sys.argv[1], sys.argv[2], map(int, sys.argv[3:9]), sys.argv[9]
sys.path[:0] = [root, root + '/benchmarks']
from official_stream import batch_digest, official_train_loader
from utils.general import init_seeds
init_seeds(seed + 1, deterministic=True)  # train_dual.py: init_seeds(opt.seed + 1 + RANK, deterministic=True)
loader, _ = official_train_loader(Path('.'), train, imgsz, batch, workers, bool(close), Path(work))
for i, (imgs, targets, paths, _) in enumerate(loader):
    print('BATCH', i, batch_digest(imgs, targets, paths), flush=True)
    if i + 1 == n:
        break
"""


def batch_digests(args, data_yaml: Path, seed: int, work: Path) -> list[str]:
    """The official loader's first ``args.batches`` batches for ``seed``: one 'digest names' string each."""
    cmd = [args.python, "-c", _PROBE, str(ROOT), str(split_list(data_yaml)), str(seed), str(args.imgsz),
           str(args.batch), str(args.workers), str(args.batches), str(int(args.close_mosaic)), str(work)]  # fmt: skip
    res = subprocess.run(cmd, cwd=Path(args.official_dir).resolve(), env=official_env(work), capture_output=True,
                         text=True)  # fmt: skip
    lines = [ln.split(" ", 2)[2] for ln in res.stdout.splitlines() if ln.startswith("BATCH ")]
    if res.returncode != 0 or len(lines) != args.batches:
        raise SystemExit(
            f"the official loader probe failed for seed {seed} (rc {res.returncode}):\n{res.stderr[-3000:]}"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--official-dir", required=True, help="source tree of the official YOLOv9 code")
    ap.add_argument("--data", type=Path, required=True, help="a data.yaml written by bench_accuracy.py split")
    ap.add_argument("--python", default=sys.executable, help="the Python that runs the official code")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--order", nargs="+", choices=("fixed", "seed"), default=["fixed", "seed"])
    ap.add_argument("--imgsz", type=int, default=320)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--close-mosaic", type=int, default=1, help="1: the plain DataLoader train_dual.py uses with "
                    "--close-mosaic N > 0 (the parity runs); 0: its InfiniteDataLoader")  # fmt: skip
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for order in args.order:
            streams = {}
            for seed in args.seeds:
                data = (
                    args.data if order == "fixed" else seeded_split(args.data, work / f"seeded{seed}", seed)
                )
                streams[seed] = batch_digests(args, data, seed, work)
                for i, line in enumerate(streams[seed]):
                    print(f"order {order:5s} seed {seed:3d} batch {i}: {line}")
            same = len({tuple(v) for v in streams.values()}) == 1
            print(f"order {order}: the {len(args.seeds)} seeds' first {args.batches} batches are "
                  f"{'EQUAL' if same else 'different'}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
