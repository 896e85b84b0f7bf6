"""Where a training step's time goes: ``torch.profiler`` over a few batches of the real ``y9train.Trainer``.

Runs the trainer (no validation, no checkpoints) on a data.yaml, skips ``--warmup`` batches (cuDNN autotuning,
worker start), profiles the next ``--steps`` batches with CPU and CUDA activity, and writes:
  OUT/ops_cuda.txt    operators by total CUDA (device) time
  OUT/ops_cpu.txt     operators by CPU time (launch and Python overhead, host syncs)
  OUT/summary.json    wall time per batch, device kernel time per batch, kernel launches per batch, host syncs
                      (``cudaStreamSynchronize`` / ``cudaDeviceSynchronize`` / ``cudaMemcpy*`` calls) per batch;
  OUT/syncs_by_source.txt  (``--sources``: Python stacks recorded) the operators that make the host wait for the
                      device on CUDA (a scalar read: ``.item()``, ``bool()``, ``int()``, ``.tolist()``; a
                      data-dependent size: ``nonzero``, boolean-mask indexing), per batch, by the innermost line
                      of y9's own code that called them: where to look to take syncs out of a step.
A device time per batch far below the wall time per batch means the step is bound by the host (launches, syncs,
the loader), not by the GPU.

    python benchmarks/profile_train_step.py DATA.yaml --model yolov9-s --batch 32 --out prof/
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaMemcpy", "cudaMemcpyAsync")
#: operators that wait for the device on CUDA (a scalar copied to the host; a size that depends on the data)
SYNCING_OPS = ("aten::_local_scalar_dense", "aten::nonzero", "aten::masked_select", "aten::unique_consecutive",
               "aten::_unique2")  # fmt: skip
OWN_CODE = ("y9train/", "y9deploy/", "y9core/")


def syncs_by_source(events, steps: int) -> list[tuple[float, str, str]]:
    """``(calls per batch, operator, innermost y9 source line)`` for the syncing operators, most frequent first."""
    from collections import Counter

    counts: Counter = Counter()
    for e in events:
        if e.name in SYNCING_OPS:
            frame, node = "(outside y9)", e
            while node is not None:  # an operator called by another one carries no stack: its caller's does
                # stacks come as the event's own list, or (newer torch) as python_function parent events
                own = [f for f in (*(node.stack or []), node.name) if any(k in f for k in OWN_CODE) and "(" in f]
                if own:
                    frame = own[0]
                    break
                node = node.cpu_parent
            counts[(e.name, frame[frame.find("y9"):] if frame.startswith("/") else frame)] += 1
    return sorted(((n / steps, op, where) for (op, where), n in counts.items()), reverse=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path)
    ap.add_argument("--out", type=Path, default=Path("profile-train"))
    ap.add_argument("--model", default="yolov9-s")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--device", default=None)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--set", nargs="*", default=[], help="key=value hyperparameter overrides")
    ap.add_argument("--sources", action="store_true",
                    help="record Python stacks; write OUT/syncs_by_source.txt (the syncing operators by y9 source line)")
    args = ap.parse_args(argv)

    import torch
    from torch.profiler import ProfilerActivity, profile

    from y9train.loop.hooks import StopTraining
    from y9train.loop.trainer import Trainer
    from y9train.optimisation.hyp import Hyp, TrainConfig, apply_overrides

    cfg = TrainConfig(
        data=str(args.data), model=args.model, imgsz=args.imgsz, epochs=100, batch=args.batch,
        device=args.device, workers=args.workers, cache="ram", compile=args.compile, val=False, save=False,
        verbose=False, hyp=Hyp(),
    )  # fmt: skip
    if args.set:
        cfg = apply_overrides(cfg, dict(kv.split("=", 1) for kv in args.set), "--set")
    cuda = torch.cuda.is_available() and args.device != "cpu"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    prof = profile(activities=activities, with_stack=args.sources)
    state = {"n": 0, "t0": 0.0, "t1": 0.0}

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def on_step(tr: Trainer) -> None:
        state["n"] += 1
        if state["n"] == args.warmup:
            sync()
            prof.start()
            state["t0"] = time.perf_counter()
        elif state["n"] == args.warmup + args.steps:
            sync()
            state["t1"] = time.perf_counter()
            prof.stop()
            raise StopTraining

    trainer = Trainer(cfg, callbacks={"on_step_end": [on_step]})
    trainer.fit()
    if not state["t1"]:
        raise SystemExit(f"the run ended after {state['n']} batches; expected {args.warmup + args.steps}.")
    args.out.mkdir(parents=True, exist_ok=True)
    ka = prof.key_averages()
    sort_dev = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    (args.out / "ops_cuda.txt").write_text(ka.table(sort_by=sort_dev, row_limit=60))
    (args.out / "ops_cpu.txt").write_text(ka.table(sort_by="self_cpu_time_total", row_limit=60))
    steps = args.steps
    kernels = [e for e in prof.events() if e.device_type.name == "CUDA"]
    launches = [e for e in prof.events() if e.name in ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC")]
    syncs = {name: sum(1 for e in prof.events() if e.name == name) / steps for name in SYNC_CALLS}
    summary = {
        "model": args.model, "batch": args.batch, "imgsz": args.imgsz, "compile": args.compile,
        "steps": steps, "device": torch.cuda.get_device_name() if cuda else "cpu", "torch": torch.__version__,
        "wall_ms_per_batch": 1000 * (state["t1"] - state["t0"]) / steps,
        "device_kernel_ms_per_batch": sum(e.device_time for e in kernels) / 1000 / steps if cuda else None,
        "kernels_per_batch": len(kernels) / steps, "launch_calls_per_batch": len(launches) / steps,
        "host_syncs_per_batch": syncs, "overrides": args.set,
    }  # fmt: skip
    if args.sources:
        rows = syncs_by_source(prof.events(), steps)
        summary["syncing_ops_per_batch"] = sum(r[0] for r in rows)
        (args.out / "syncs_by_source.txt").write_text(
            "".join(f"{n:8.1f}  {op:<28} {where}\n" for n, op, where in rows)
        )
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
