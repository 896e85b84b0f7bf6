"""Fault run of issue 34 (items 3, 4, 5, 8, 9): hostile images and videos, a file-size limit, damaged caches, YAML
and label bombs, dataset oddities; and of issue 46: two writers of one file, damaged resume state and tagged YAML,
bad values at the boundary of Detections, unwarned oddities, messages, geometry options; and of issue 57: planted
links in y9's own files, hostile downloads, list files, model configs out of bounds, outputs and reports. Each case runs the real ``y9`` command in a child process and is counted as
``crash`` / ``loss`` / ``silent`` / ``clear`` (``fault_cases.py`` says how each is decided: a peak resident memory
over 500 MB counts as a crash).

    python benchmarks/bench_faults.py --json-out /tmp/y9-faults.json
    python benchmarks/bench_faults.py --code /path/to/another/checkout     # the same cases on other code

Cases run on CPU, one thread per process; ``--only WORD`` runs the cases whose name holds WORD.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from fault_cases import CACHE_CASES, DISK_CASES, IMAGE_CASES, Context, Outcome  # noqa: E402
from fault_cases_doors import DOOR_CASES, DOWNLOAD_CASES, LIST_CASES  # noqa: E402
from fault_cases_outputs import CONFIG_CASES, LEFTOVER_CASES, OUTPUT_CASES  # noqa: E402

# Issue 34's bounds and warnings and issue 46's groups (writers, resume + YAML, detections, notes, messages, geometry)
# answered their question (0 crash / 0 loss / 0 silent, docs/benchmarks.md) and became tests (tests/reliability/,
# tests/core/test_one_writer.py, tests/deploy/test_detections_boundary.py, test_geometry_bounds.py); their case files
# left this folder (issue 54): `git show 725e1fb:benchmarks/fault_cases_values.py` (and _input, _writers).
GROUPS = {"images (34.3)": IMAGE_CASES, "disk (34.4)": DISK_CASES, "caches (34.5)": CACHE_CASES,
          "doors (57.1)": DOOR_CASES, "downloads (57.2)": DOWNLOAD_CASES, "lists (57.3)": LIST_CASES,
          "configs (57.4)": CONFIG_CASES, "outputs (57.5-6)": OUTPUT_CASES, "leftovers (57.7)": LEFTOVER_CASES}  # fmt: skip
OUTCOMES = ("crash", "loss", "silent", "clear")


def cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "unknown CPU"
    return next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), "unknown CPU")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--code", type=Path, default=REPO, help="checkout whose y9 runs (default: this one)")
    ap.add_argument("--only", default=None, help="run only the cases whose name holds this text (several: comma-separated)")
    ap.add_argument("--groups", default=None, help="run only the groups whose name holds this text (e.g. 46.; several: 57.1,57.2)")
    ap.add_argument("--json-out", type=Path, default=None, help="write every case's outcome here")
    ap.add_argument("--keep", action="store_true", help="keep the case folders (printed)")
    args = ap.parse_args()

    from tests.deploy.runtime_support import export_tiny_onnx

    root = Path(tempfile.mkdtemp(prefix="y9-faults-"))
    ctx = Context(code=args.code.resolve(), onnx=export_tiny_onnx(root / "tiny.onnx", dynamic_batch=True))
    rows: list[tuple[str, Outcome, float]] = []
    t_all = time.perf_counter()
    for group, cases in GROUPS.items():
        if args.groups and not any(g in group for g in args.groups.split(",")):
            continue
        for k, (name, case) in enumerate(cases):
            if args.only and not any(w in name for w in args.only.split(",")):
                continue
            folder = root / f"{group.split()[0].replace('+', '-')}-{k}"
            folder.mkdir()
            t0 = time.perf_counter()
            try:
                out = case(ctx, folder)
            except Exception as exc:  # the harness itself failed: reported, not counted as y9's outcome
                out = Outcome(name, "harness error", -1, float("nan"), f"{type(exc).__name__}: {exc}"[:300])
            seconds = time.perf_counter() - t0
            rows.append((group, out, seconds))
            print(f"{out.outcome:>7}  {name}  (exit {out.exit_code}, {out.peak_mb} MB, {seconds:.1f} s)\n"
                  f"         {out.said}", flush=True)  # fmt: skip
    counts = Counter(o.outcome for _, o, _ in rows)
    wall = time.perf_counter() - t_all
    print("\n| group | cases | " + " | ".join(OUTCOMES) + " |")
    print("|---|---:|" + "---:|" * len(OUTCOMES))
    for group in GROUPS:
        got = Counter(o.outcome for g, o, _ in rows if g == group)
        if got:
            print(f"| {group} | {sum(got.values())} | " + " | ".join(str(got[k]) for k in OUTCOMES) + " |")
    print(f"| all | {len(rows)} | " + " | ".join(str(counts[k]) for k in OUTCOMES) + f" |  ({wall:.0f} s)")
    if args.json_out:
        meta = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "cpu": cpu_model(),
                "python": platform.python_version(), "code": str(ctx.code), "wall_s": round(wall, 1)}  # fmt: skip
        cases = [{"group": g, **asdict(o), "seconds": round(s, 1)} for g, o, s in rows]
        args.json_out.write_text(json.dumps({"meta": meta, "counts": dict(counts), "cases": cases}, indent=1))
    if args.keep:
        print(f"case folders: {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if not (counts["crash"] or counts["loss"] or counts["silent"]) else 1


if __name__ == "__main__":
    sys.exit(main())
