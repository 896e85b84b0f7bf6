"""benchmarks/accuracy_stats.py: the permutation p-value against a brute-force oracle over every labelling, its
sampled path against the exact one, and the verdicts (gap / within W / undecided) on groups built to show each."""

from __future__ import annotations

import importlib.util
import itertools
import statistics
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("accuracy_stats", ROOT / "benchmarks" / "accuracy_stats.py")
stats = importlib.util.module_from_spec(spec)
sys.modules.setdefault("accuracy_stats", stats)  # dataclasses look their module up there
spec.loader.exec_module(stats)


def _oracle(a, b):
    """Every assignment of the pooled runs to groups A/B (2^n of them) with the original group sizes."""
    pooled = a + b
    observed = abs(statistics.fmean(b) - statistics.fmean(a))
    hits = total = 0
    for labels in itertools.product((0, 1), repeat=len(pooled)):
        if sum(labels) != len(b):
            continue
        ga = [x for x, l in zip(pooled, labels) if l == 0]
        gb = [x for x, l in zip(pooled, labels) if l == 1]
        total += 1
        hits += abs(statistics.fmean(gb) - statistics.fmean(ga)) >= observed - 1e-12
    return hits / total


@pytest.mark.parametrize(
    "a, b",
    [
        ([0.658, 0.492, 0.509, 0.414, 0.582, 0.524], [0.291, 0.313, 0.637, 0.480, 0.427, 0.581]),
        ([0.1, 0.2, 0.3], [0.35, 0.5, 0.6, 0.55]),
        ([0.4, 0.4, 0.4], [0.4, 0.4]),
    ],
)
def test_exact_permutation_p_equals_the_brute_force_oracle(a, b):
    assert stats.permutation_p(a, b) == pytest.approx(_oracle(a, b), abs=1e-12)


def test_sampled_permutation_p_agrees_with_the_exact_one():
    a = [0.658, 0.492, 0.509, 0.414, 0.582, 0.524]
    b = [0.291, 0.313, 0.637, 0.480, 0.427, 0.581, 0.324, 0.342]
    exact = stats.permutation_p(a, b)  # C(14, 6) = 3,003 splits: enumerated
    assert exact == pytest.approx(_oracle(a, b), abs=1e-12)
    sampled = stats.permutation_p(a, b, limit=2_000)  # more splits than the limit: 2,000 random ones
    assert sampled == pytest.approx(exact, abs=0.03) and sampled != exact


def test_verdicts():
    separated = stats.compare([0.40, 0.41, 0.42, 0.43], [0.50, 0.51, 0.52, 0.53], within=0.01)
    assert separated.verdict == "gap" and separated.diff == pytest.approx(0.10)
    assert separated.p == pytest.approx(2 / 70)  # only the observed split and its mirror are as far apart

    tight = stats.compare([0.500, 0.501, 0.499, 0.500], [0.501, 0.500, 0.502, 0.500], within=0.01)
    assert tight.verdict == "within 0.01" and abs(tight.diff) + 2 * tight.se <= 0.01

    noisy = stats.compare([0.509, 0.414], [0.637, 0.480], within=0.01)  # two seeds of a 10-point spread
    assert noisy.verdict == "undecided"
    one_each = stats.compare([0.5], [0.5], within=0.01)  # no spread known: never "within"
    assert one_each.verdict == "undecided"
    with pytest.raises(ValueError, match="at least one run per group"):
        stats.compare([], [0.5], within=0.01)


@pytest.mark.parametrize(
    "sd_a, sd_b, diff, within",
    [
        (0.0912, 0.0862, -0.0049, 0.01),
        (0.0498, 0.0130, 0.0139, 0.02),
        (0.01, 0.01, 0.0, 0.01),
        (0.001, 0.0, 0.0, 1.0),
    ],
)
def test_runs_for_within_is_the_smallest_n_that_a_search_finds(sd_a, sd_b, diff, within):
    """Oracle: count n up from 2 until |diff| + 2 * sqrt((sd_a^2 + sd_b^2) / n) <= within."""
    n = 2
    while abs(diff) + 2 * ((sd_a**2 + sd_b**2) / n) ** 0.5 > within:
        n += 1
    assert stats.runs_for_within(sd_a, sd_b, diff, within) == n


def test_runs_for_within_is_none_where_no_number_of_runs_can_show_it():
    assert stats.runs_for_within(0.05, 0.05, 0.02, 0.01) is None  # the difference alone exceeds the margin
    assert stats.runs_for_within(0.05, 0.05, -0.01, 0.01) is None
    assert stats.runs_for_within(float("nan"), 0.05, 0.0, 0.01) is None  # one run: no spread known


def test_an_undecided_comparison_says_what_deciding_would_take():
    noisy = stats.compare([0.509, 0.414, 0.60], [0.637, 0.480, 0.52], within=0.05)
    assert noisy.verdict == "undecided"
    assert noisy.runs_needed == stats.runs_for_within(noisy.sd_a, noisy.sd_b, noisy.diff, 0.05) > 3
    decided = stats.compare([0.500, 0.501, 0.499, 0.500], [0.501, 0.500, 0.502, 0.500], within=0.01)
    assert decided.verdict == "within 0.01" and decided.runs_needed is None
