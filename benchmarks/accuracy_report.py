"""The reports of benchmarks/bench_accuracy.py on its runs' result.json files: one markdown row per run, a table of
mean and spread per configuration, and ``compare`` (group B against group A on one figure: the final mAP50-95, or
the mean of the last ten epochs by y9's evaluator; the statistics are accuracy_stats.py's)."""

from __future__ import annotations

import csv
import json
import math
import statistics
from pathlib import Path

#: figures ``compare`` reads: final / late10 / late16 mAP50-95, and the mean training loss term of the last ten epochs
FIGURES = ("final", "late10", "late16", "late10-box", "late10-cls", "late10-dfl")
# the trainers with per-epoch figures, and the loss columns of their per-epoch CSVs (the official pads its names)
LOSS_COLUMNS = {"y9": "train/{}", "official": "train/{}_loss"}


def row(r: dict) -> str:
    return (
        f"| {Path(r['data']).parent.name} | {r['trainer']} {r.get('label') or ''} | {r['model']} | {r['seed']} | "
        f"{r['map50_95']:.3f} | {r['map50']:.3f} | {r['wall_s']:.0f} s |"
    )


def table(paths: list[str]) -> str:
    groups: dict[tuple, list[dict]] = {}
    for p in paths:
        r = json.loads(Path(p).read_text())
        key = (Path(r["data"]).parent.name, r["trainer"], r.get("label") or "", r["model"])
        groups.setdefault(key, []).append(r)
    lines = [
        "| data | trainer | model | seeds | mAP50-95 mean (min-max) | mAP50 mean | wall s mean |",
        "|---|---|---|---|---|---|---|",
    ]
    for (data, trainer, label, model), rs in sorted(groups.items()):
        m = [r["map50_95"] for r in rs]
        lines.append(
            f"| {data} | {trainer} {label} | {model} | {','.join(str(r['seed']) for r in rs)} | "
            f"{statistics.mean(m):.3f} ({min(m):.3f}-{max(m):.3f}) | "
            f"{statistics.mean(r['map50'] for r in rs):.3f} | {statistics.mean(r['wall_s'] for r in rs):.0f} |"
        )
    return "\n".join(lines)


def _results_csv(path: Path) -> Path:
    """The per-epoch CSV of a run: NAME-results.csv beside NAME.json (docs/results), or RUN/*/results.csv."""
    for candidate in [path.with_name(path.stem + "-results.csv"), *sorted(path.parent.glob("*/results.csv"))]:
        if candidate.is_file():
            return candidate
    raise SystemExit(
        f"{path}: no per-epoch CSV beside it (NAME-results.csv or */results.csv); a loss figure needs one"
    )


def late_loss(path: Path, trainer: str, term: str) -> float:
    """Mean training loss ``term`` (box, cls or dfl) of the run's last ten epochs, from its per-epoch CSV."""
    with open(_results_csv(path), newline="") as f:
        rows = [{k.strip(): v.strip() for k, v in line.items()} for line in csv.DictReader(f)]
    column = LOSS_COLUMNS[trainer].format(term)
    if len(rows) < 10 or column not in rows[0]:
        raise SystemExit(
            f"{path}: its per-epoch CSV has no ten epochs of {column!r} (found {len(rows)} rows)"
        )
    return statistics.fmean(float(line[column]) for line in rows[-10:])


def per_epoch_map(r: dict) -> dict[int, float]:
    """A run's mAP50-95 by y9's evaluator per 1-based epoch, in epoch order: y9's own per-epoch validation, or the
    official's ``--score-epochs`` checkpoints (only those epochs); empty for a run without either."""
    if "per_epoch_scored" in r:
        return {int(e): v for e, v in sorted(r["per_epoch_scored"].items(), key=lambda kv: int(kv[0]))}
    return {e: v for e, v in enumerate(r.get("per_epoch_map50_95") or [], start=1)}


def run_figure(path: str, figure: str) -> float:
    """One run's figure (``FIGURES``): ``final`` (last-epoch mAP50-95), ``late10`` / ``late16`` (mean mAP50-95 of its
    last ten / sixteen epochs by y9's evaluator: y9's own per-epoch validation, or the official's
    ``--score-epochs`` checkpoints), or ``late10-box`` / ``-cls`` / ``-dfl`` (a training loss term's mean over the last ten epochs)."""
    r = json.loads(Path(path).read_text())
    if figure == "final":
        return r["map50_95"]
    if r.get("trainer") not in LOSS_COLUMNS:
        raise SystemExit(
            f"{path}: {figure} needs a y9 or official run, not one of trainer {r.get('trainer')!r}"
        )
    if figure.startswith("late10-"):
        return late_loss(Path(path), r["trainer"], figure.removeprefix("late10-"))
    n = int(figure.removeprefix("late"))
    per_epoch = list(per_epoch_map(r).values())
    if len(per_epoch) < n or None in per_epoch[-n:]:
        raise SystemExit(
            f"{path}: has no {n} last epochs scored by y9's evaluator (found {len(per_epoch)}); {figure} needs a y9 "
            f"run or an official run made with --score-epochs {n} or more"
        )
    return statistics.fmean(per_epoch[-n:])


def compare_runs(a: list[str], b: list[str], figure: str, within: float) -> str:
    from accuracy_stats import compare

    c = compare([run_figure(p, figure) for p in a], [run_figure(p, figure) for p in b], within)
    line = (
        f"{figure}: A {c.mean_a:.4f} (sd {c.sd_a:.4f}, {c.n_a} runs)  B {c.mean_b:.4f} (sd {c.sd_b:.4f}, "
        f"{c.n_b} runs)  B-A {c.diff:+.4f} (se {c.se:.4f})  permutation p {c.p:.3f}  -> {c.verdict}"
    )
    if c.verdict != "undecided" or math.isnan(c.se):
        return line
    if c.runs_needed is None:
        return f"{line} (within {within:g} cannot be shown if the observed difference of {abs(c.diff):.4f} holds)"
    return f"{line} (within {within:g} would take about {c.runs_needed} runs per trainer at these spreads)"
