"""Tracking and counting measured on public MOT ground truth: y9's trackers against the maintained ones (issues 45, 53).

    PYTHONPATH=. VENV/bin/python benchmarks/bench_mot.py --sv030-python .venv/bin/python [--seeds 3] [--json out.json]
    PYTHONPATH=. VENV/bin/python benchmarks/bench_mot.py --families --sv030-python .venv/bin/python [--seeds 3]
        [--split tuning,held-out] [--trackers NAMES] [--json out.json]

VENV: a venv of its own with ``motmetrics``, ``trackeval`` and ``trackers`` (which brings supervision 0.31 and the
non-headless OpenCV); supervision 0.30's ByteTrack runs in ``--sv030-python`` (left out, that row is skipped).
Issue 45's table: ``mot_noise``'s detections (TUD-Campus and TUD-Stadtmitte ground truth, levels none to high) for
every tracker of ``mot_trackers``; MOTA, IDF1, ID switches (``mot_scoring``: motmetrics, IoU >= 0.5), HOTA
(trackeval), line and zone count errors, ms a frame (median ``update`` at 100 detections, one thread); means over
seeds. ``--families``: issue 53's per-family tables (``mot_family_table``), tuning and held-out sets apart
(``--seeds N``: each split's first N seeds); ``--trackers`` may name ``mot_trackers.RULES_OFF`` / ``SIGHTINGS`` rows.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from mot_family_table import main_families  # noqa: E402
from mot_noise import LEVELS, SEQUENCES, crowd_scene, load_sequence, make_detections  # noqa: E402
from mot_scoring import RAW, clear_identity, counts, hota_combined, hota_sequence, summarise  # noqa: E402
from mot_trackers import RULES_OFF, SIGHTINGS, SV030, TRACKERS, run, run_in_worker  # noqa: E402


def score_runs(outputs: dict, seqs: dict, truth_counts: dict) -> dict:
    """outputs[(level, seed, seq)] = frames of (xyxy, ids) -> per level: mean over seeds of the figures."""
    per_level: dict[str, list[dict]] = {}
    for level in LEVELS:
        seeds = sorted({s for (lv, s, _) in outputs if lv == level})
        for seed in seeds:
            raw = dict.fromkeys(RAW, 0)
            hota, line_err, zone_err = {}, 0, 0
            for name, seq in seqs.items():
                out = outputs[(level, seed, name)]
                for k, v in clear_identity(seq.frames, out).items():
                    raw[k] += v
                hota[name] = hota_sequence(seq.frames, out)
                c = counts(out, seq.width, seq.height, seq.fps)
                t = truth_counts[name]
                line_err += abs(c[0] - t[0]) + abs(c[1] - t[1])
                zone_err += abs(c[2] - t[2])
            per_level.setdefault(level, []).append({**summarise(raw), "hota": hota_combined(hota),
                                                    "line_err": line_err, "zone_err": zone_err})  # fmt: skip
    return {lv: {k: float(np.mean([r[k] for r in rows])) for k in rows[0]} for lv, rows in per_level.items()}


def median_ms(times: list[float], skip: int = 20) -> float:
    return float(np.median(np.asarray(times[skip:]))) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--trackers", default=None, help="comma-separated names (default: all); see mot_trackers")
    ap.add_argument("--sv030-python", default=None, help="an interpreter with supervision 0.30 (its ByteTrack row)")
    ap.add_argument("--timing-frames", type=int, default=300)
    ap.add_argument("--json", default=None)
    ap.add_argument("--families", action="store_true", help="issue 53's per-family tables (mot_family_table)")
    ap.add_argument("--split", default="tuning,held-out", help="--families: tuning, held-out or both")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    t_start = time.perf_counter()
    seqs = {name: load_sequence(name) for name in SEQUENCES}
    truth_counts = {n: counts([(b, i) for i, b in s.frames], s.width, s.height, s.fps) for n, s in seqs.items()}
    if args.families:
        print(f"TUD-Campus + TUD-Stadtmitte, noise families of benchmarks/mot_families.py; ms: 100 detections a "
              f"frame, one thread, {platform.machine()}; ground-truth counts: {truth_counts}")  # fmt: skip
        result = main_families(args, seqs, truth_counts)
        if args.json:
            Path(args.json).write_text(json.dumps({"truth_counts": truth_counts, **result}, indent=1))
        return
    cases = {(lv, seed, n): make_detections(s, LEVELS[lv], seed) for lv in LEVELS for seed in range(args.seeds)
             for n, s in seqs.items()}  # fmt: skip
    rows = [n for n in TRACKERS if n not in RULES_OFF and n not in SIGHTINGS]  # the ablation rows on request only
    names = args.trackers.split(",") if args.trackers else rows + ([SV030] if args.sv030_python else [])
    timing_scene = crowd_scene(100, args.timing_frames)
    table = {}
    for name in names:
        if name == SV030:
            keys = list(cases)
            results = run_in_worker(args.sv030_python, [(cases[k], seqs[k[2]].fps) for k in keys] +
                                    [(timing_scene, 30.0)])  # fmt: skip
            outputs = {k: r[0] for k, r in zip(keys, results)}
            timing = results[-1][1]
        else:
            factory = TRACKERS[name]
            outputs = {k: run(factory, dets, seqs[k[2]].fps)[0] for k, dets in cases.items()}
            timing = run(factory, timing_scene, 30.0)[1]
        table[name] = {"levels": score_runs(outputs, seqs, truth_counts), "ms_per_frame": median_ms(timing)}
        print(f"... {name} done ({time.perf_counter() - t_start:.0f} s)", file=sys.stderr, flush=True)

    print(f"TUD-Campus + TUD-Stadtmitte (motmetrics' ground truth), noise levels of benchmarks/mot_noise.py, "
          f"{args.seeds} seeds (means); ms: 100 detections a frame, one thread, {platform.machine()}")  # fmt: skip
    print(f"ground-truth counts (line in, out, zone visits): {truth_counts}")
    print("| tracker | noise | MOTA | IDF1 | HOTA | ID switches | count error line / zone | ms per frame |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, row in table.items():
        for lv, m in row["levels"].items():
            print(f"| {name} | {lv} | {m['mota']:.3f} | {m['idf1']:.3f} | {m['hota']:.3f} | {m['idsw']:.1f} | "
                  f"{m['line_err']:.1f} / {m['zone_err']:.1f} | {row['ms_per_frame']:.2f} |")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps({"truth_counts": truth_counts, "seeds": args.seeds, "table": table},
                                              indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
