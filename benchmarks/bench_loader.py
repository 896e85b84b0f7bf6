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

from y9train.data import YoloDataset, collate, load_data_yaml
from y9train.data.bench import bench_loader


def sample_cost(data: Path, imgsz: int, batch: int, n: int, cache_dir: Path | None) -> dict:
    """Single-core cost of one training sample (mosaic on, RAM cache) and of collating it, in ms per image.

    Wall time (median, min over rounds of ``batch`` samples) and CPU time of this process (``process_time``):
    the CPU time is the per-worker work, much less sensitive to a busy machine than wall time or throughput.
    """
    import statistics
    import time

    import cv2
    import torch  # imported here so that the first collate does not time the import

    cv2.setNumThreads(1)
    torch.set_num_threads(1)
    cfg = load_data_yaml(data, require=("train",))
    ds = YoloDataset(cfg.image_files("train"), nc=cfg.nc, imgsz=imgsz, cache="ram", cache_dir=cache_dir)
    wall_s, wall_c, cpu_s, cpu_c = [], [], [], []
    for r in range(max(1, n // batch)):
        ds.set_epoch(r)
        t0, c0 = time.perf_counter(), time.process_time()
        samples = [ds[i % len(ds)] for i in range(batch)]
        t1, c1 = time.perf_counter(), time.process_time()
        collate(samples)
        t2, c2 = time.perf_counter(), time.process_time()
        wall_s.append((t1 - t0) / batch * 1e3)
        wall_c.append((t2 - t1) / batch * 1e3)
        cpu_s.append((c1 - c0) / batch * 1e3)
        cpu_c.append((c2 - c1) / batch * 1e3)
    return {
        "sample_wall_ms_median": statistics.median(wall_s),
        "sample_wall_ms_min": min(wall_s),
        "sample_cpu_ms_median": statistics.median(cpu_s),
        "collate_wall_ms_median": statistics.median(wall_c),
        "collate_cpu_ms_median": statistics.median(cpu_c),
    }


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
    ap.add_argument("--sample-cost", type=int, default=0, help="also time N samples on one core in-process")
    args = ap.parse_args(argv)

    results = []
    cost = None
    if args.sample_cost:
        cost = sample_cost(args.data, args.imgsz, args.batch, args.sample_cost, args.cache_dir)
        print("one core: " + ", ".join(f"{k} {v:.2f}" for k, v in cost.items()), flush=True)
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
        out = {"meta": meta, "results": results, "sample_cost": cost}
        args.json_out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
