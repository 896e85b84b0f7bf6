"""Multi-GPU scaling of the trainer: img/s of the plain single-device trainer on 1 GPU against torchrun
(DistributedDataParallel, y9train.run.distributed) on N GPUs, same per-GPU batch; scaling efficiency =
img/s(N) / (N x img/s(1)).

Setting of docs/benchmarks.md (VisDrone train, 270 images listed 8x = 2160 per epoch, 640 px, 64 images per GPU,
AMP, RAM image cache, 8 loader workers per process, mosaic on, no validation, no checkpoints):

    python benchmarks/bench_ddp_gpu.py ../shared/datasets/visdrone/data.yaml --repeat 8 --gpus 2 --out bench-ddp

Each configuration runs in its own process tree: ``python bench_ddp_gpu.py --role worker`` for 1 GPU (no torchrun,
WORLD_SIZE unset: the single-device path, which must not import y9train.run.distributed; the worker checks), and
``python -m torch.distributed.run --standalone --nproc-per-node N bench_ddp_gpu.py --role worker`` for N GPUs
(global batch N x per-GPU batch). Every process started gets NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1
and NVSHMEM_DISABLE_NVLS=1 (NVLink multicast off). Timing: ``--warmup-epochs`` epochs (worker start, cuDNN
autotuning) are excluded, then ``--epochs`` whole epochs are timed on every rank between ``torch.cuda.synchronize()``
calls (at the start of the first timed epoch and after the last one, so epoch ends and loader refills count);
img/s = images trained by all ranks / the slowest rank's seconds. Also recorded: per-epoch img/s of the trainer's
own record, peak memory per GPU, GPU utilisation (nvidia-smi every 0.5 s while timing).
Needs torch (CUDA), numpy, opencv, pyyaml; no faster-coco-eval. Runs on CPU as a smoke test
(``--device cpu --models gelan-t --imgsz 160 --batch 2 --epochs 1 --warmup-epochs 1 --workers 0 --cache none``, gloo).
Label caches go to ``<out>/cache`` unless ``Y9_CACHE_DIR`` is set.
Writes ``<out>/bench_ddp.json`` and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def worker(args) -> None:
    """One process of a configuration: train with the Trainer (DDP when torchrun started it), time, write JSON."""
    import torch
    from bench_train_gpu import GpuUtilSampler

    from y9train.run.train import train, world_size

    n = world_size()
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = args.device != "cpu" and torch.cuda.is_available()
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    marks: dict[str, float] = {}
    count = {"images": 0}
    sampler = GpuUtilSampler(local if cuda else -1)
    first_timed = args.warmup_epochs

    def on_epoch_start(tr):
        if tr.epoch == first_timed:
            marks["wrapper"] = f"{type(tr.hooks).__name__}, {type(tr.train_model).__name__}"
            sync()
            marks["t0"] = time.perf_counter()
            sampler.take()
            sampler.active = True

    def on_step_end(tr):
        if tr.epoch >= first_timed:
            count["images"] += tr.last_batch_images

    def on_epoch_end(tr):
        if tr.epoch == tr.config.epochs - 1:
            sync()
            marks["t1"] = time.perf_counter()
            sampler.active = False

    t_start = time.perf_counter()
    result = train(
        data=args.data, model=args.model, imgsz=args.imgsz, epochs=args.warmup_epochs + args.epochs,
        batch=args.batch * n, device="cuda" if cuda else "cpu", workers=args.workers,
        cache=None if args.cache == "none" else args.cache, amp=args.amp, val=False, save=False,
        sync_bn=args.sync_bn, verbose=args.verbose and rank == 0, project=str(args.out / "runs"),
        overrides=["close_mosaic=0"],  # mosaic on in every epoch, as in the middle of a real run
        callbacks={"on_epoch_start": [on_epoch_start], "on_step_end": [on_step_end], "on_epoch_end": [on_epoch_end]},
    )  # fmt: skip
    sampler.close()
    util = sampler.take()
    row = {
        "model": args.model,
        "processes": n,
        "rank": rank,
        "batch_per_gpu": args.batch,
        "global_batch": args.batch * n,
        "images": count["images"],
        "seconds": marks["t1"] - marks["t0"],
        "timed_epochs": args.epochs,
        "wall_s": time.perf_counter() - t_start,
        "epoch_img_s": [r["img_s"] for r in result.history],
        "peak_allocated_gb": torch.cuda.max_memory_allocated() / 1e9 if cuda else None,
        "peak_reserved_gb": torch.cuda.max_memory_reserved() / 1e9 if cuda else None,
        "gpu_util_mean": statistics.mean(u for u, _ in util) if util else None,
        "distributed_imported": "y9train.run.distributed" in sys.modules,
        "hooks_and_model": marks["wrapper"],
        "env": {k: os.environ.get(k) for k in (*NO_MULTICAST, "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES")},
    }
    if n == 1 and row["distributed_imported"]:
        raise RuntimeError(
            "the single-device run imported y9train.run.distributed; expected no DDP code on that path"
        )
    if rank == 0:
        row["machine"] = machine()
    path = args.out / f"{args.model}-{n}gpu-rank{rank}.json"
    path.write_text(json.dumps(row, indent=2))


def machine() -> dict:
    import torch

    info = {"python": platform.python_version(), "torch": torch.__version__, "cpus": os.cpu_count()}
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(torch.cuda.current_device())
        info.update(gpu=p.name, gpus=torch.cuda.device_count(), gpu_memory_gb=p.total_memory / 1e9,
                    cuda=torch.version.cuda, nccl=str(torch.cuda.nccl.version()))  # fmt: skip
    return info


def run_config(args, model: str, gpus: int, data: Path) -> dict:
    """Start the processes of one configuration; merge what its ranks wrote."""
    env = dict(os.environ)
    env.update(NO_MULTICAST)
    if args.device != "cpu":
        visible = [v for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
        chosen = visible[:gpus] if visible else [str(i) for i in range(gpus)]
        env["CUDA_VISIBLE_DEVICES"] = ",".join(chosen)
    for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        env.pop(k, None)
    env.setdefault("Y9_CACHE_DIR", str(args.out / "cache"))  # label caches beside the results, not the data
    me = [str(Path(__file__).resolve()), "--role", "worker", str(data), "--model", model,
          *worker_args(args)]  # fmt: skip
    if gpus == 1:
        cmd = [sys.executable, *me]
    else:
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            str(gpus),
            *me,
        ]
    for old in args.out.glob(f"{model}-{gpus}gpu-rank*.json"):
        old.unlink()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=REPO)
    if proc.returncode != 0:
        raise SystemExit(
            f"{model} on {gpus} GPU(s) failed with exit status {proc.returncode}: {' '.join(cmd)}"
        )
    ranks = [json.loads(p.read_text()) for p in sorted(args.out.glob(f"{model}-{gpus}gpu-rank*.json"))]
    if len(ranks) != gpus:
        raise SystemExit(f"{model} on {gpus} GPU(s): {len(ranks)} rank reports; expected {gpus}")
    images = sum(r["images"] for r in ranks)
    seconds = max(r["seconds"] for r in ranks)
    return {
        "model": model,
        "gpus": gpus,
        "img_s": images / seconds,
        "images": images,
        "seconds": seconds,
        "global_batch": ranks[0]["global_batch"],
        "epoch_img_s": ranks[0]["epoch_img_s"],
        "peak_allocated_gb": [r["peak_allocated_gb"] for r in ranks],
        "gpu_util_mean": [r["gpu_util_mean"] for r in ranks],
        "distributed_imported": ranks[0]["distributed_imported"],
        "hooks_and_model": ranks[0]["hooks_and_model"],
        "process_tree_s": time.perf_counter() - t0,
        "machine": next((r["machine"] for r in ranks if "machine" in r), {}),
        "env": ranks[0]["env"],
    }


def worker_args(args) -> list[str]:
    out = ["--imgsz", str(args.imgsz), "--batch", str(args.batch), "--epochs", str(args.epochs),
           "--warmup-epochs", str(args.warmup_epochs), "--workers", str(args.workers), "--cache", args.cache,
           "--amp", args.amp, "--device", args.device, "--out", str(args.out)]  # fmt: skip
    return out + (["--sync-bn"] if args.sync_bn else []) + (["--verbose"] if args.verbose else [])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path, help="data.yaml")
    ap.add_argument("--role", choices=["main", "worker"], default="main", help=argparse.SUPPRESS)
    ap.add_argument("--model", default="gelan-s", help=argparse.SUPPRESS)
    ap.add_argument("--models", nargs="+", default=["gelan-s"])
    ap.add_argument("--gpus", type=int, default=2, help="processes of the multi-GPU run")
    ap.add_argument("--repeat", type=int, default=1, help="list the train images this many times per epoch")
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument(
        "--batch", type=int, default=64, help="images per GPU (the N-GPU run's global batch is N x)"
    )
    ap.add_argument("--epochs", type=int, default=4, help="timed epochs")
    ap.add_argument("--warmup-epochs", type=int, default=1)
    ap.add_argument("--workers", type=int, default=8, help="loader workers per process")
    ap.add_argument("--cache", choices=["none", "ram", "disk"], default="ram")
    ap.add_argument("--amp", choices=["auto", "bf16", "fp16", "off"], default="auto")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--sync-bn", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("bench-ddp"))
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.role == "worker":
        worker(args)
        return 0
    if args.gpus < 2:
        raise SystemExit(f"--gpus {args.gpus}; expected 2 or more (the 1-GPU run is always made)")
    from bench_train_gpu import repeated_data_yaml

    data = repeated_data_yaml(args.data.resolve(), args.repeat, args.out)
    report = {"args": {k: str(v) for k, v in vars(args).items()}, "runs": [], "scaling": []}
    for model in args.models:
        one = run_config(args, model, 1, data)
        many = run_config(args, model, args.gpus, data)
        eff = many["img_s"] / (args.gpus * one["img_s"])
        report["runs"] += [one, many]
        report["scaling"].append({"model": model, "gpus": args.gpus, "img_s_1": one["img_s"],
                                  "img_s_n": many["img_s"], "efficiency": eff})  # fmt: skip
        (args.out / "bench_ddp.json").write_text(json.dumps(report, indent=2))
    print(
        f"{'model':<10} {'GPUs':>4} {'batch':>6} {'img/s':>8} {'peak GB/GPU':>12} {'util %':>14} {'efficiency':>10}"
    )
    for r in report["runs"]:
        s = next(x for x in report["scaling"] if x["model"] == r["model"])
        eff = f"{100 * s['efficiency']:9.1f}%" if r["gpus"] > 1 else f"{'-':>10}"
        mem = "/".join(f"{m:.1f}" for m in r["peak_allocated_gb"] if m is not None) or "-"
        util = "/".join(f"{u:.0f}" for u in r["gpu_util_mean"] if u is not None) or "-"
        print(
            f"{r['model']:<10} {r['gpus']:>4} {r['global_batch']:>6} {r['img_s']:8.1f} {mem:>12} {util:>14} {eff}"
        )
    print(f"written: {args.out / 'bench_ddp.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
