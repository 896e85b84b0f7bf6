"""The per-family table of ``bench_mot.py --families`` (issue 53): each tracker over every family of ``mot_families``
at each level, tuning and held-out sets apart: MOTA, IDF1, ID switches (motmetrics, IoU >= 0.5), count error (line
in, out and zone visits against the same counter on the ground truth), means over seeds of the sums over the two
sequences; ms a frame: median ``update`` at 100 detections (``mot_noise.crowd_scene``), one thread.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from mot_families import FAMILY_LEVELS, HELD_OUT, TUNING, family_detections, split_seeds, unwarp
from mot_noise import crowd_scene
from mot_scoring import RAW, clear_identity, counts, summarise
from mot_trackers import SIGHTINGS, SV030, TRACKERS, run, run_in_worker

DEFAULT_ROWS = ("y9 bytetrack", "trackers ByteTrack", "trackers ByteTrack matched")
REFERENCES = ("trackers ByteTrack", "trackers ByteTrack matched", SV030)


def cases_of(split: dict, seqs: dict, n_seeds: int | None = None) -> tuple[dict, dict]:
    """(family, level, seed, sequence) -> detections, over a split's families and each one's seeds (the first
    ``n_seeds`` of them); and the same key -> the camera's per-frame similarities where the camera moves."""
    made = {(f, lv, s, n): family_detections(seq, f, lv, s) for f in split["families"] for lv in FAMILY_LEVELS
            for s in split_seeds(split, f)[:n_seeds] for n, seq in seqs.items()}  # fmt: skip
    return {k: v[0] for k, v in made.items()}, {k: v[1]["warp"] for k, v in made.items() if "warp" in v[1]}


def score(outputs: dict, seqs: dict, truth: dict, sightings: int | None) -> dict:
    """outputs[(family, level, seed, seq)] -> {(family, level): mean figures over seeds}."""
    per: dict[tuple[str, str], list[dict]] = {}
    for f, lv, s in sorted({k[:3] for k in outputs}):
        raw, err = dict.fromkeys(RAW, 0), 0
        for name, seq in seqs.items():
            out = outputs[(f, lv, s, name)]
            for k, v in clear_identity(seq.frames, out).items():
                raw[k] += v
            c, t = counts(out, seq.width, seq.height, seq.fps, sightings), truth[name]
            err += sum(abs(a - b) for a, b in zip(c, t))
        per.setdefault((f, lv), []).append({**summarise(raw), "count_err": err})
    return {k: {m: float(np.mean([r[m] for r in rows])) for m in rows[0]} for k, rows in per.items()}


def run_rows(names: list[str], cases: dict, seqs: dict, truth: dict, sv030_python: str | None,
             timing_frames: int = 300, warps: dict | None = None) -> dict:  # fmt: skip
    scene, table, t0 = crowd_scene(100, timing_frames), {}, time.perf_counter()
    for name in names:
        if name == SV030:
            if not sv030_python:
                continue
            keys = list(cases)
            res = run_in_worker(sv030_python, [(cases[k], seqs[k[3]].fps) for k in keys] + [(scene, 30.0)])
            outputs, timing = {k: r[0] for k, r in zip(keys, res)}, res[-1][1]
        else:
            outputs = {k: run(TRACKERS[name], d, seqs[k[3]].fps)[0] for k, d in cases.items()}
            timing = run(TRACKERS[name], scene, 30.0)[1] if timing_frames else [0.0] * 21
        outputs = {k: unwarp(seqs[k[3]], o, (warps or {}).get(k)) for k, o in outputs.items()}
        ms = float(np.median(timing[20:])) * 1e3
        table[name] = {"cells": score(outputs, seqs, truth, SIGHTINGS.get(name)), "ms": ms}
        print(f"... {name} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    return table


def verdict(table: dict, family: str, level: str, y9: str = "y9 bytetrack") -> str:
    """Issue 53's test: is ``y9`` at least the best reference on MOTA and on IDF1 (each against the best on it), and
    no worse on ID switches and count error than the best reference (the one of the highest IDF1)?"""
    refs = {r: table[r]["cells"][(family, level)] for r in REFERENCES if r in table}
    if not refs or y9 not in table:
        return ""
    m, best = table[y9]["cells"][(family, level)], max(refs, key=lambda r: (refs[r]["idf1"], refs[r]["mota"]))
    fails = [k for k in ("mota", "idf1") if m[k] < max(r[k] for r in refs.values()) - 1e-9]
    fails += [k for k in ("idsw", "count_err") if m[k] > refs[best][k] + 1e-9]
    return ("yes" if not fails else "no: " + ", ".join(fails)) + f" (best: {best})"


def print_table(title: str, table: dict, families: tuple[str, ...]) -> None:
    print(f"\n{title}")
    print("| family | level | tracker | MOTA | IDF1 | ID switches | count error | ms a frame | y9 at least the best |")
    print("|---|---|---|---:|---:|---:|---:|---:|---|")
    for f in families:
        for lv in FAMILY_LEVELS:
            for i, (name, row) in enumerate(table.items()):
                m = row["cells"][(f, lv)]
                v = verdict(table, f, lv) if i == 0 else ""
                print(f"| {f} | {lv} | {name} | {m['mota']:.3f} | {m['idf1']:.3f} | {m['idsw']:.2f} | "
                      f"{m['count_err']:.2f} | {row['ms']:.2f} | {v} |")  # fmt: skip


def main_families(args, seqs: dict, truth: dict) -> dict:
    """``bench_mot.py --families``: the tuning and held-out tables -> {split: table} (also printed)."""
    names, out = args.trackers.split(",") if args.trackers else [*DEFAULT_ROWS, SV030], {}
    for split in args.split.split(","):
        sp = {"tuning": TUNING, "held-out": HELD_OUT}[split]
        used = {f: list(split_seeds(sp, f)[: args.seeds]) for f in sp["families"]}
        cases, warps = cases_of(sp, seqs, args.seeds)
        table = run_rows(names, cases, seqs, truth, args.sv030_python, args.timing_frames, warps)
        seeds = "; ".join(f"{f} {', '.join(map(str, s))}" for f, s in used.items())
        print_table(f"{split}: seeds (means over them): {seeds}", table, sp["families"])
        out[split] = {"families": sp["families"], "seeds": used,
                      "table": {n: {"ms": r["ms"], "cells": {f"{f}/{lv}": m for (f, lv), m in r["cells"].items()}}
                                for n, r in table.items()}}  # fmt: skip
    return out
