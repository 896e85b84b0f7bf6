"""Kill/resume fault injection: N seeded kills of a short CPU training run, each followed by ``y9 train --resume``.

Each trial trains (by default) gelan-t on coco8 (CPU, ``--workers 0``, one thread per process) in a subprocess killed
with SIGKILL at a seeded point: either an external ``kill -9`` after a random delay (uniform over the length of an
uninterrupted run, imports included), or an exact point inside the run (right after ``last.pt`` / ``best.pt``
appears, half-way through writing either one's temporary file, at a trainer event, as validation starts). Half the
trials validate after each epoch (the best epoch then stays 1 at these sizes), half run with ``--no-val`` (every
epoch is the best: ``best.pt`` is rewritten each epoch). The run is then resumed, and the checks of
``tests/reliability/kill_harness.py`` decide whether the trial passed: ``last.pt`` and ``best.pt`` present and
loadable, ``best.pt`` = the best epoch ``last.pt`` records, no finished epoch lost, final history and weights equal
to an uninterrupted run's, no temporary file left. A kill before the first ``last.pt`` exists has nothing to resume
(the resume must say so in one sentence).

Example (the setting of docs/benchmarks.md):

    python benchmarks/bench_kill_resume.py --n 50 --json-out /tmp/y9-kill-resume.json

On a GPU the same check holds a resume to exactness only with ``--deterministic`` (cuDNN autotuning and unordered
CUDA sums part two runs of one seed after a step; docs/training.md), so ``--device`` other than cpu requires it:

    python benchmarks/bench_kill_resume.py --device 0 --deterministic --data splits/deeppcb/data.yaml \
        --images 320 --model yolov9-s --imgsz 640 --batch 32 --workers 4 --n 4 [--hyp official]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from tests.reliability.kill_harness import RunSpec, child_env, kill_and_resume, reference_run  # noqa: E402

EXACT_POINTS = ("replace:last", "replace:best", "write:last", "write:best", "event:on_step_end",
                "event:on_epoch_start", "val")  # fmt: skip


def kill_point(rng: random.Random, epochs: int, val: bool) -> tuple[str, float | None]:
    """``(kill point, None)`` for an exact point, ``("none", delay)`` for an external kill after ``delay`` x run."""
    if rng.random() < 0.5:
        return "none", rng.random()
    kind = rng.choice([k for k in EXACT_POINTS if val or k != "val"])
    if kind.endswith("best") and val:
        return f"{kind}:1", None  # with validation only epoch 1 writes best.pt here
    return f"{kind}:{rng.randint(1, epochs)}", None


def kind_of(label: str) -> str:
    """``replace:last:2`` -> ``replace:last``; ``time:3.1s`` -> ``time``; ``val:1`` -> ``val``."""
    parts = label.split(":")
    return parts[0] if parts[0] in ("time", "val") else ":".join(parts[:2])


def cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "unknown CPU"
    return next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), "unknown CPU")


def gpu_name(device: str) -> str:
    import torch

    return torch.cuda.get_device_name(int(device)) if torch.cuda.is_available() else "no GPU visible"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=50, help="number of seeded kill points (default 50)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the kill points (default 0)")
    ap.add_argument("--data", type=Path, default=None,
                    help="data.yaml (default: $Y9_SHARED/datasets/coco8/data.yaml, else ../shared/...)")  # fmt: skip
    ap.add_argument("--epochs", type=int, default=3, help="epochs per run (default 3)")
    ap.add_argument("--imgsz", type=int, default=64, help="training size (default 64)")
    ap.add_argument("--batch", type=int, default=4, help="batch size (default 4)")
    ap.add_argument("--model", default="gelan-t", help="model (default gelan-t)")
    ap.add_argument("--device", default="cpu", help="cpu (default) or a GPU index")
    ap.add_argument("--workers", type=int, default=0, help="loader workers (default 0)")
    ap.add_argument("--images", type=int, default=None,
                    help="train on the first N training images of --data (default: all)")  # fmt: skip
    ap.add_argument(
        "--deterministic", action="store_true", help="y9 train --deterministic (required on a GPU)"
    )
    ap.add_argument("--hyp", default=None, help="y9 train --hyp (default: y9's defaults)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds one process may take (default 300)")
    ap.add_argument(
        "--workdir", type=Path, default=None, help="folder for the runs (default: a temporary one)"
    )
    ap.add_argument(
        "--keep", action="store_true", help="keep the runs' folders (default: delete each passed one)"
    )
    ap.add_argument(
        "--json-out", type=Path, default=None, help="write the summary and every trial as JSON here"
    )
    args = ap.parse_args()

    data = args.data or Path(os.environ.get("Y9_SHARED", REPO.parent / "shared")) / "datasets/coco8/data.yaml"
    if not data.is_file():
        ap.error(f"{data} does not exist; expected coco8's data.yaml (pass --data or set Y9_SHARED)")
    if args.device != "cpu" and not args.deterministic:
        ap.error(f"--device {args.device}: a GPU run resumes exactly only with --deterministic; add it.")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="y9-kill-resume-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.images is not None:
        from check_cuda_graph import subset_data_yaml

        data = subset_data_yaml(data, args.images, workdir)
    extra = (("--deterministic",) if args.deterministic else ()) + (("--hyp", args.hyp) if args.hyp else ())
    env = child_env(workdir / "cache")
    t0 = time.perf_counter()
    specs, refs = {}, {}
    for val in (True, False):
        specs[val] = RunSpec(data.resolve(), epochs=args.epochs, imgsz=args.imgsz, batch=args.batch, val=val,
                             model=args.model, device=args.device, workers=args.workers, extra=extra,
                             timeout=args.timeout)  # fmt: skip
        folder = workdir / f"reference-{'val' if val else 'noval'}"
        folder.mkdir(exist_ok=True)
        refs[val] = reference_run(specs[val], folder, env)
        print(
            f"reference run ({'val' if val else 'no-val'}): {refs[val].seconds:.1f} s, best epoch {refs[val].best_epoch}"
        )

    trials = []
    for i in range(args.n):
        rng = random.Random(args.seed * 100_003 + i)
        val = rng.random() < 0.5
        kill, frac = kill_point(rng, args.epochs, val)
        delay = None if frac is None else frac * refs[val].seconds
        name = f"trial{i:03d}"
        res = kill_and_resume(specs[val], workdir, name, kill, refs[val], env, kill_after=delay)
        trials.append({"trial": i, **res.to_dict()})
        status = "ok  " if res.ok else "FAIL"
        print(f"{status} {i:3d} {'val   ' if val else 'no-val'} {res.kill:24s} {res.outcome:12s} "
              f"epochs at kill {res.done_at_kill}  tmp {len(res.tmp_at_kill)}  best re-created "
              f"{'yes' if res.best_recreated else 'no '}  {res.seconds:5.1f} s {'; '.join(res.failures)}")  # fmt: skip
        if res.ok and not args.keep:
            shutil.rmtree(workdir / name, ignore_errors=True)

    kinds = Counter(kind_of(t["kill"]) for t in trials)
    passed = Counter(kind_of(t["kill"]) for t in trials if t["ok"])
    summary = {
        "command": "python benchmarks/bench_kill_resume.py " + " ".join(sys.argv[1:]),
        "machine": f"{cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}"
        + ("" if args.device == "cpu" else f", {gpu_name(args.device)}"),
        "python": platform.python_version(),
        "run": {
            "model": args.model,
            "data": str(data),
            "images": args.images,
            "epochs": args.epochs,
            "imgsz": args.imgsz,
            "batch": args.batch,
            "device": args.device,
            "workers": args.workers,
            "options": list(extra),
        },  # fmt: skip
        "trials": len(trials),
        "passed": sum(t["ok"] for t in trials),
        "failed": sum(not t["ok"] for t in trials),
        "outcomes": dict(Counter(t["outcome"] for t in trials)),
        "kill_kinds": {k: {"trials": n, "passed": passed[k]} for k, n in sorted(kinds.items())},
        "killed_with_temporary_files_left": sum(bool(t["tmp_at_kill"]) for t in trials),
        "best_pt_recreated_on_resume": sum(t["best_recreated"] for t in trials),
        "finished_epochs_at_kill": dict(Counter(t["done_at_kill"] for t in trials)),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    print(json.dumps(summary, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps({"summary": summary, "trials": trials}, indent=2))
    if not args.keep and args.workdir is None and not summary["failed"]:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
