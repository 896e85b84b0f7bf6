"""Training throughput on one GPU with the real ``y9train.Trainer``: img/s, peak memory, GPU utilisation and a
per-phase time breakdown, for each model with and without gradient checkpointing; the loader alone; optionally a
full N-epoch training + validation run (the 30-epoch mAP50-95 figure).

Setting of docs/benchmarks.md (VisDrone train, 270 images listed 8x = 2160 per epoch, 640 px, batch 64, AMP):

    python benchmarks/bench_train_gpu.py ../shared/datasets/visdrone/data.yaml --repeat 8 --out bench-train
    python benchmarks/bench_train_gpu.py ../shared/datasets/visdrone/data.yaml --repeat 8 --out bench-train \\
        --skip-steps --full-epochs 30 --full-model yolov9-s

Per configuration: ``--warmup-steps`` batches (cuDNN autotuning, worker start) are excluded, then ``--steps``
batches are timed between two ``torch.cuda.synchronize()`` calls; ``torch.cuda.max_memory_allocated/reserved``
over the whole run; ``nvidia-smi --query-gpu=utilization.gpu`` sampled every 0.5 s in a thread during the timed
window; phase times from CUDA events recorded by the trainer (``TrainConfig.profile``): loader wait (host),
forward, assigner + loss, backward, optimiser step (unscale, clip, step, zero_grad), EMA.
Needs torch (CUDA), numpy, opencv, pyyaml, typer, rich; the full run's validation also needs faster-coco-eval.
Also runs on CPU for a smoke test: ``--device cpu --models gelan-t --imgsz 160 --batch 4 --steps 2``.
``--ckpt-memory-only`` measures one training step's peak memory with gradient checkpointing off / on (CPU: from
the profiler's allocator events; CUDA: ``max_memory_allocated``) and exits.
Writes ``<out>/bench_train.json`` (and ``full_run.json``) and prints a short table. Each row holds the trainer's own
record of its start (``startup``: every phase to the first step, ``y9train.timing.startup``). y9 against Ultralytics, each
alone for a whole run (wall, time to first step, first epoch, steady img/s, peak memory):
``benchmarks/bench_train_versus.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from y9train.loop.hooks import StopTraining  # noqa: E402
from y9train.loop.trainer import Trainer  # noqa: E402
from y9train.optimisation.hyp import Hyp, TrainConfig  # noqa: E402
from y9train.timing.step_timer import PHASES  # noqa: E402


class GpuUtilSampler:
    """``nvidia-smi --query-gpu=utilization.gpu,memory.used`` every ``period`` s in a thread while active."""

    def __init__(self, device_index: int, period: float = 0.5):
        self.period = period
        self.samples: list[tuple[float, float]] = []
        self.active = False
        self._stop = threading.Event()
        self._target = self._gpu_id(device_index)
        self._thread = None
        if shutil.which("nvidia-smi") and self._target is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    @staticmethod
    def _gpu_id(index: int) -> str | None:
        """nvidia-smi's index of torch's device ``index`` (CUDA_VISIBLE_DEVICES maps torch's order)."""
        import torch

        if index < 0 or not torch.cuda.is_available():
            return None
        visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
        return visible[index] if index < len(visible) else str(index)

    def _run(self) -> None:
        cmd = ["nvidia-smi", "-i", self._target, "--query-gpu=utilization.gpu,memory.used",
               "--format=csv,noheader,nounits"]  # fmt: skip
        while not self._stop.is_set():
            t0 = time.perf_counter()
            if self.active:
                try:
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=5).stdout.strip()
                    util, mem = (float(v) for v in out.splitlines()[0].split(","))
                    self.samples.append((util, mem))
                except (subprocess.SubprocessError, ValueError, IndexError, OSError):
                    pass
            self._stop.wait(max(0.0, self.period - (time.perf_counter() - t0)))

    def take(self) -> list[tuple[float, float]]:
        out, self.samples = self.samples, []
        return out

    def close(self) -> None:
        self._stop.set()


#: --cuda-graph -> TrainConfig.cuda_graph
GRAPHS = {"auto": None, "on": True, "off": False}


def repeated_data_yaml(data: Path, repeat: int, out: Path) -> Path:
    """A data.yaml whose train split lists every train image ``repeat`` times (val unchanged)."""
    from y9train.data import load_data_yaml

    if repeat <= 1:
        return data
    cfg = load_data_yaml(data)
    files = [str(p) for p in cfg.image_files("train")] * repeat
    (out / "train_repeated.txt").write_text("\n".join(files) + "\n")
    val = [str(p) for p in cfg.sources("val")]
    path = out / "data_repeated.yaml"
    path.write_text(
        yaml.safe_dump({"path": str(out), "train": "train_repeated.txt", "val": val, "names": cfg.names})
    )
    return path


def _config(args, model: str, data: Path, ckpt: bool, out: Path) -> TrainConfig:
    from y9train.optimisation.hyp import apply_overrides, parse_overrides

    config = TrainConfig(
        data=str(data), model=model, imgsz=args.imgsz, epochs=args.epochs_nominal, batch=args.batch,
        device=args.device, workers=args.workers, cache=None if args.cache == "none" else args.cache,
        amp=args.amp, compile=args.compile, cuda_graph=GRAPHS[args.cuda_graph], grad_checkpointing=ckpt, val=False, save=False, profile=True,
        deterministic=args.deterministic,
        log_interval=args.log_interval, verbose=args.verbose, project=str(out / "runs"), hyp=Hyp(),
    )  # fmt: skip
    return apply_overrides(config, parse_overrides(args.set)) if args.set else config


def bench_steps(args, model: str, data: Path, ckpt: bool, out: Path, sampler: GpuUtilSampler) -> dict:
    """Train ``warmup + steps`` batches with the Trainer; time the last ``steps``."""
    import torch

    cuda = torch.cuda.is_available() and args.device != "cpu"
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    marks: dict[str, float] = {}
    images = {"n": 0}

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def on_step(trainer):
        done = trainer.iteration  # batches finished so far in this run
        if done == args.warmup_steps:
            sync()
            marks["t0"] = time.perf_counter()
            sampler.take()
            sampler.active = True
        elif done > args.warmup_steps:
            images["n"] += trainer.last_batch_images
        if done == args.warmup_steps + args.steps:
            sync()
            marks["t1"] = time.perf_counter()
            sampler.active = False
            raise StopTraining

    t_setup = time.perf_counter()
    trainer = Trainer(_config(args, model, data, ckpt, out), callbacks={"on_step_end": [on_step]})
    trainer.add_callback("on_train_start", lambda t: marks.setdefault("setup", time.perf_counter() - t_setup))
    result = trainer.fit()
    if "t1" not in marks:
        raise RuntimeError(f"{model}: the run ended before {args.warmup_steps + args.steps} batches")
    seconds = marks["t1"] - marks["t0"]
    timed = result.profile[args.warmup_steps : args.warmup_steps + args.steps]
    util = sampler.take()
    row = {
        "model": model,
        "grad_checkpointing": ckpt,
        "compile": args.compile,
        "cuda_graph": trainer.graphed is not None and trainer.graphed.shape is not None,  # captured and replayed
        "graph_replays": trainer.graphed.replays if trainer.graphed is not None else 0,
        "img_s": images["n"] / seconds,
        "images": images["n"],
        "seconds": seconds,
        "steps": args.steps,
        "setup_s": marks.get("setup"),
        "startup": trainer.startup.to_dict(),  # the start by part (y9train.timing.startup), up to the first step
        "amp": str(trainer.amp_dtype).replace("torch.", "") if trainer.amp_dtype else "off",
        "peak_allocated_gb": torch.cuda.max_memory_allocated() / 1e9 if cuda else None,
        "peak_reserved_gb": torch.cuda.max_memory_reserved() / 1e9 if cuda else None,
        "gpu_util_mean": statistics.mean(u for u, _ in util) if util else None,
        "gpu_util_samples": len(util),
        "smi_memory_used_max_gb": max(m for _, m in util) / 1024 if util else None,
        "breakdown_ms": {p: statistics.mean(s[p] for s in timed) for p in PHASES} if timed else {},
        "optimizer_steps_timed": sum(1 for t in timed if t["optimizer"] > 0),
        "batches_per_epoch": trainer.nb,
        "accumulate": trainer.accumulate,
    }
    del trainer, result
    gc.collect()
    return row


def bench_loader_alone(args, data: Path) -> list[dict]:
    from y9train.data.bench import bench_loader

    rows = []
    for cache in args.loader_cache:
        r = bench_loader(data, imgsz=args.imgsz, batch=args.batch, workers=args.workers,
                         cache=None if cache == "none" else cache, batches=args.loader_batches, warmup=3)  # fmt: skip
        rows.append(r.to_dict())
    return rows


def full_run(args, data: Path, out: Path) -> dict:
    from y9core.evaluation.result import require_metrics_backend

    require_metrics_backend()
    cfg = TrainConfig(
        data=str(data), model=args.full_model, imgsz=args.imgsz, epochs=args.full_epochs, batch=args.batch,
        device=args.device, workers=args.workers, cache=None if args.cache == "none" else args.cache,
        amp=args.amp, compile=args.compile, cuda_graph=GRAPHS[args.cuda_graph], project=str(out / "runs"), name="full", exist_ok=True,
        verbose=args.verbose,
    )  # fmt: skip
    t0 = time.perf_counter()
    result = Trainer(cfg).fit()
    wall = time.perf_counter() - t0
    last = result.history[-1] if result.history else {}
    return {
        "model": args.full_model,
        "epochs": result.epochs_run,
        "wall_s": wall,
        "best_fitness": result.best_fitness,
        "best_epoch": result.best_epoch,
        "final": {k: v for k, v in last.items()},
        "best_map50_95": max((r.get("metrics/map50_95", float("nan")) for r in result.history), default=None),
        "train_img_s_median": statistics.median(r["img_s"] for r in result.history)
        if result.history
        else None,
        "save_dir": str(result.save_dir),
    }


def ckpt_memory_one_step(models: list[str], imgsz: int, batch: int, device: str | None) -> list[dict]:
    """Peak memory of one forward + loss + backward with gradient checkpointing off / on (random input, 3 boxes
    per image). CUDA: ``torch.cuda.max_memory_allocated``. CPU: the peak of (bytes allocated - bytes freed)
    through torch's CPU allocator, from the profiler's memory events (``profile_memory=True``)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from y9train.loss import DetectionLoss
    from y9train.models import build_model

    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    labels = torch.tensor([[i, c, 10.0 + 20 * c, 12.0 + 15 * c, 90.0 + 20 * c, 100.0 + 10 * c]
                           for i in range(batch) for c in range(3)], device=dev)  # fmt: skip
    rows = []
    for name in models:
        row = {"model": name, "imgsz": imgsz, "batch": batch, "device": str(dev)}
        for ckpt in (False, True):
            torch.manual_seed(0)
            model = build_model(name, nc=3).to(dev).train().set_grad_checkpointing(ckpt)
            loss_fn = DetectionLoss.from_model(model)
            x = torch.rand(batch, 3, imgsz, imgsz, device=dev)
            t0 = time.perf_counter()
            if dev.type == "cuda":
                torch.cuda.synchronize()
                base = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
                loss_fn(model(x), labels)[0].backward()
                torch.cuda.synchronize()
                peak = torch.cuda.max_memory_allocated() - base
            else:
                with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                    loss_fn(model(x), labels)[0].backward()
                events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                                if e.name() == "[memory]")  # fmt: skip
                live = peak = 0
                for _, n in events:
                    live += n
                    peak = max(peak, live)
            row[f"peak_mb_{'on' if ckpt else 'off'}"] = peak / 1e6
            row[f"step_s_{'on' if ckpt else 'off'}"] = time.perf_counter() - t0
            del model, loss_fn
        row["reduction"] = 1 - row["peak_mb_on"] / row["peak_mb_off"]
        rows.append(row)
        print(f"{name:<10} {imgsz} px batch {batch}: peak {row['peak_mb_off']:.1f} MB -> {row['peak_mb_on']:.1f} MB "
              f"with checkpointing ({100 * row['reduction']:.0f}% less); step {row['step_s_off']:.2f} s -> "
              f"{row['step_s_on']:.2f} s", flush=True)  # fmt: skip
    return rows


def machine() -> dict:
    import torch

    info = {"python": platform.python_version(), "torch": torch.__version__, "cpus": os.cpu_count()}
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        info.update(gpu=p.name, gpu_memory_gb=p.total_memory / 1e9, cuda=torch.version.cuda,
                    bf16=torch.cuda.is_bf16_supported())  # fmt: skip
    return info


def print_table(rows: list[dict], loader: list[dict]) -> None:
    print(f"{'model':<10} {'ckpt':<5} {'img/s':>7} {'alloc GB':>9} {'resv GB':>8} {'util %':>7}  "
          + " ".join(f"{p[:6]:>7}" for p in PHASES) + "  (ms/batch)")  # fmt: skip
    for r in rows:

        def f(v, fmt):
            return format(v, fmt) if v is not None else format("-", ">" + fmt.split(".")[0])

        print(f"{r['model']:<10} {('on' if r['grad_checkpointing'] else 'off'):<5} {r['img_s']:7.1f} "
              f"{f(r['peak_allocated_gb'], '9.1f')} {f(r['peak_reserved_gb'], '8.1f')} {f(r['gpu_util_mean'], '7.0f')}  "
              + " ".join(f"{r['breakdown_ms'].get(p, 0):7.1f}" for p in PHASES))  # fmt: skip
    for r in loader:
        print(f"loader alone: cache {r['cache']:<5} {r['images_per_s']:8.1f} img/s ({r['workers']} workers, "
              f"mosaic {'on' if r['mosaic'] else 'off'}, setup {r['setup_s']:.1f} s)")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path, help="data.yaml")
    ap.add_argument("--out", type=Path, default=Path("bench-train"))
    ap.add_argument("--repeat", type=int, default=1, help="list the train images this many times per epoch")
    ap.add_argument("--models", nargs="+", default=["yolov9-s", "gelan-s"])
    ap.add_argument("--ckpt", nargs="+", choices=["off", "on"], default=["off", "on"])
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--cache", choices=["none", "ram", "disk"], default="ram")
    ap.add_argument("--amp", choices=["auto", "bf16", "fp16", "off"], default="auto")
    ap.add_argument("--device", default=None)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--deterministic", action="store_true", help="deterministic=true (reproducible kernels)")
    ap.add_argument(
        "--cuda-graph", nargs="?", const="on", default="auto", choices=["auto", "on", "off"],
        help="the network's forward/backward as CUDA graphs: auto (y9's default: where they apply), on, off (eager)",
    )  # fmt: skip
    ap.add_argument("--set", nargs="+", action="extend", default=[], metavar="K=V",
                    help="training key=value overrides (e.g. cudnn_benchmark_limit=1 cuda_graph_warmup=1)")  # fmt: skip
    ap.add_argument("--warmup-steps", type=int, default=8)
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument(
        "--epochs-nominal", type=int, default=100, help="epochs of the schedule (mosaic stays on)"
    )
    ap.add_argument("--log-interval", type=int, default=20)
    ap.add_argument(
        "--loader-cache", nargs="*", default=["ram", "none"], help="loader-alone runs ([] to skip)"
    )
    ap.add_argument("--loader-batches", type=int, default=30)
    ap.add_argument("--skip-steps", action="store_true", help="skip the throughput runs")
    ap.add_argument("--full-epochs", type=int, default=0, help="also train this many epochs with validation")
    ap.add_argument("--full-model", default="yolov9-s")
    ap.add_argument(
        "--ckpt-memory-only",
        action="store_true",
        help="only measure one step's peak memory with checkpointing off/on (--models, --imgsz, --batch)",
    )
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)

    import torch

    args.out.mkdir(parents=True, exist_ok=True)
    if args.full_epochs > 0:  # fail before the throughput runs, not after them
        from y9core.evaluation.result import require_metrics_backend

        require_metrics_backend()
    if args.ckpt_memory_only:
        rows = ckpt_memory_one_step(args.models, args.imgsz, args.batch, args.device)
        report = {
            "machine": machine(),
            "args": {k: str(v) for k, v in vars(args).items()},
            "ckpt_memory": rows,
        }
        (args.out / "ckpt_memory.json").write_text(json.dumps(report, indent=2))
        return 0
    data = repeated_data_yaml(args.data, args.repeat, args.out)
    report = {
        "machine": machine(),
        "args": {k: str(v) for k, v in vars(args).items()},
        "train": [],
        "loader": [],
    }
    device_index = int(str(args.device).split(":")[-1]) if args.device not in (None, "cpu") else 0
    sampler = GpuUtilSampler(device_index if torch.cuda.is_available() else -1)
    try:
        if not args.skip_steps:
            for model in args.models:
                for ck in args.ckpt:
                    row = bench_steps(args, model, data, ck == "on", args.out, sampler)
                    report["train"].append(row)
                    print(json.dumps(row), flush=True)
            report["loader"] = bench_loader_alone(args, data) if args.loader_cache else []
        (args.out / "bench_train.json").write_text(json.dumps(report, indent=2))
        print_table(report["train"], report["loader"])
        if args.full_epochs > 0:
            full = full_run(args, data, args.out)
            (args.out / "full_run.json").write_text(json.dumps(full, indent=2, default=str))
            print(f"full run {full['model']}: {full['epochs']} epochs in {full['wall_s']:.0f} s, best mAP50-95 "
                  f"{full['best_map50_95']:.4f} (fitness {full['best_fitness']:.4f} at epoch {full['best_epoch']}), "
                  f"median {full['train_img_s_median']:.0f} img/s")  # fmt: skip
    finally:
        sampler.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
