"""Is one trainer better than another, or within W of it? Two groups of runs (one figure per run, e.g. final
mAP50-95 of each seed) compared the way docs/benchmarks.md reports them:

- the difference of the means and its standard error (Welch: ``sqrt(var_a / n_a + var_b / n_b)``);
- a two-sided permutation p-value: the share of all ways to split the pooled runs into groups of the same sizes
  whose difference of means is at least as far from 0 as the observed one (exact enumeration up to
  ``EXACT_LIMIT`` splits, else that many random splits from a fixed seed);
- a verdict: ``gap`` when p < 0.05; ``within W`` when the difference +- 2 standard errors lies inside +-W (an
  approximate 95% interval: the normal quantile, not Student's t, so few runs make it a little narrow); else
  ``undecided``. Two seeds per trainer with a run-to-run spread of several points give ``undecided`` for a 1-point W.
- for ``undecided``, how many runs per trainer ``within W`` would take if the observed difference and spreads held
  (``runs_for_within``): the cost of deciding, in runs.

Pure functions on lists of floats; ``bench_accuracy.py compare`` reads the runs' result.json files.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from dataclasses import dataclass

EXACT_LIMIT = 200_000


@dataclass(frozen=True)
class Comparison:
    """B minus A. ``se`` is nan with fewer than two runs in a group."""

    mean_a: float
    mean_b: float
    sd_a: float
    sd_b: float
    n_a: int
    n_b: int
    diff: float
    se: float
    p: float
    verdict: str
    runs_needed: int | None = None


def _sd(x: list[float]) -> float:
    return statistics.stdev(x) if len(x) > 1 else math.nan


def permutation_p(a: list[float], b: list[float], limit: int = EXACT_LIMIT, seed: int = 0) -> float:
    """Two-sided permutation p-value of mean(b) - mean(a) (the observed split counts as one of the splits)."""
    pooled, n_a, total = a + b, len(a), sum(a) + sum(b)
    observed = abs(statistics.fmean(b) - statistics.fmean(a))
    n_b = len(b)

    def far(idx) -> bool:
        s_a = sum(pooled[i] for i in idx)
        return abs((total - s_a) / n_b - s_a / n_a) >= observed - 1e-12

    if math.comb(len(pooled), n_a) <= limit:
        splits = list(itertools.combinations(range(len(pooled)), n_a))
        return sum(far(idx) for idx in splits) / len(splits)
    rng = random.Random(seed)
    hits = sum(far(rng.sample(range(len(pooled)), n_a)) for _ in range(limit))
    return (hits + 1) / (limit + 1)


def runs_for_within(sd_a: float, sd_b: float, diff: float, within: float) -> int | None:
    """Runs per trainer (equal groups) at which ``|diff| + 2 * sqrt((sd_a**2 + sd_b**2) / n) <= within``: the
    smallest such n, at least 2. None when no number of runs can (``|diff| >= within``) or a spread is unknown."""
    margin = within - abs(diff)
    if margin <= 0 or math.isnan(sd_a) or math.isnan(sd_b):
        return None
    n = max(2, math.ceil(4 * (sd_a**2 + sd_b**2) / margin**2))
    while n > 2 and abs(diff) + 2 * math.sqrt((sd_a**2 + sd_b**2) / (n - 1)) <= within:  # ceil's rounding
        n -= 1
    while abs(diff) + 2 * math.sqrt((sd_a**2 + sd_b**2) / n) > within:
        n += 1
    return n


def compare(a: list[float], b: list[float], within: float) -> Comparison:
    """Group B against group A (each at least one run); ``within`` in the figures' own unit (0.01 = 1 point)."""
    if not a or not b:
        raise ValueError(f"compare needs at least one run per group, got {len(a)} and {len(b)}")
    mean_a, mean_b, sd_a, sd_b = statistics.fmean(a), statistics.fmean(b), _sd(a), _sd(b)
    diff = mean_b - mean_a
    se = math.sqrt(sd_a**2 / len(a) + sd_b**2 / len(b))
    p = permutation_p(a, b)
    if p < 0.05:
        verdict = "gap"
    elif not math.isnan(se) and abs(diff) + 2 * se <= within:
        verdict = f"within {within:g}"
    else:
        verdict = "undecided"
    needed = runs_for_within(sd_a, sd_b, diff, within) if verdict == "undecided" else None
    return Comparison(mean_a, mean_b, sd_a, sd_b, len(a), len(b), diff, se, p, verdict, needed)
