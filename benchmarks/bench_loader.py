"""Training data loader throughput alone (no model), mosaic on: images per second per image-cache mode.

Example (the setting of docs/benchmarks.md, VisDrone 270 train images listed 8x = 2160 images per epoch):

    python benchmarks/bench_loader.py ../shared/datasets/visdrone/data.yaml --repeat 8 \
        --imgsz 640 --batch 64 --workers 8 --cache none ram disk --batches 30 --json-out loader.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

from y9train.data.bench import bench_loader


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path, help="data.yaml (its train split is loaded)")
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--cache", nargs="+", default=["ram"], choices=["none", "ram", "disk"])
    ap.add_argument("--no-mosaic", action="store_true", help="time the letterbox + affine path instead")
    ap.add_argument("--batches", type=int, default=30, help="timed batches after the warm-up")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1, help="list each image this many times per epoch")
    ap.add_argument(
        "--cache-dir", type=Path, default=None, help="label/disk cache location (default beside the data)"
    )
    ap.add_argument("--json-out", type=Path, default=None)
    args = ap.parse_args(argv)

    results = []
    for mode in args.cache:
        r = bench_loader(
            args.data,
            imgsz=args.imgsz,
            batch=args.batch,
            workers=args.workers,
            cache=None if mode == "none" else mode,
            mosaic=not args.no_mosaic,
            batches=args.batches,
            warmup=args.warmup,
            repeat=args.repeat,
            cache_dir=args.cache_dir,
        )
        results.append(r.to_dict())
        print(
            f"cache {r.cache:4s}: {r.images_per_s:8.1f} img/s ({r.images} images, {r.seconds:.2f} s; setup {r.setup_s:.1f} s; "
            f"first batch {r.first_batch_s:.1f} s; imgsz {r.imgsz}, batch {r.batch}, {r.workers} workers, "
            f"mosaic {'on' if r.mosaic else 'off'}, {r.dataset_images} images/epoch, {r.cpu_count} CPUs)",
            flush=True,
        )
    if args.json_out:
        meta = {
            "python": sys.version.split()[0],
            "machine": platform.machine(),
            "processor": platform.processor(),
        }
        args.json_out.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
