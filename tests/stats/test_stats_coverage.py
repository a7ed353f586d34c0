"""Coverage of the report's 95% intervals by simulation, on a small grid with a fixed seed (the full grid is
benchmarks/interval_coverage.py, its table in docs/numbers-coverage.md). Each interval must hold the true figure in at
least 93.5% of the simulated sets, and, from 200 requests up, in at most 96.5% (no wider than it must be).

The grid holds the cases an earlier interval failed: changes in one direction at 10, 20 and 40 requests
(a deterministic router and seeds that vary), seed-varying selectors at 200 and 540 requests, weighted and
unweighted changes over tools, a 2x2 gap, and the clustered Wilson interval at 20-24 requests, p = 0.9,
seed correlation 0.5.
"""

from __future__ import annotations

import pytest

from benchmarks.simulations.coverage import (
    InteractionScenario,
    PairedScenario,
    ProportionScenario,
    WeightedScenario,
    run_interaction,
    run_paired,
    run_proportion,
    run_weighted,
    three_tools,
)

SEED = 20261201
LOW, HIGH = 0.935, 0.965

PAIRED = [
    (PairedScenario("one-way", 10, 0.1), 1000),
    (PairedScenario("one-way", 10, 0.2, seed_correlation=0.5), 1000),
    (PairedScenario("one-way", 20, 0.2), 1000),
    (PairedScenario("shift", 20, 0.2, seed_correlation=0.5), 1000),
    (PairedScenario("one-way", 40, 0.2), 1000),
    (PairedScenario("shift", 40, 0.1, seed_correlation=0.5), 1000),
    (PairedScenario("one-way", 200, 0.1), 800),
    (PairedScenario("one-way", 200, 0.1, seed_correlation=0.5), 800),
    (PairedScenario("shift", 540, 0.05, seed_correlation=0.5), 600),
    (PairedScenario("two-way", 540, 0.05), 600),
]


@pytest.mark.parametrize("scenario,replicates", PAIRED, ids=[f"{s.n}-{s.label()}" for s, _ in PAIRED])
def test_paired_change_intervals_cover(scenario, replicates):
    coverage = run_paired(scenario, replicates, SEED)
    assert coverage.rate >= LOW, f"{coverage.label} at {scenario.n}: {100 * coverage.rate:.1f}%"
    if scenario.n >= 200:
        assert coverage.rate <= HIGH, f"{coverage.label} at {scenario.n}: {100 * coverage.rate:.1f}%"


def test_no_change_with_seeds_varying_is_covered_at_least_as_often_as_the_exact_test_accepts():
    # at a true change of 0 the interval reaches 0 whenever exact McNemar cannot reject, so its coverage
    # is at least the exact test's acceptance rate (above 95%: the exact test is conservative)
    coverage = run_paired(PairedScenario("none", 200, 0.0, seed_correlation=0.5), 600, SEED)
    assert coverage.rate >= 0.95


WEIGHTED = [
    WeightedScenario(three_tools(20), "one-way", 0.5, weighted=True, name="3 tools"),
    WeightedScenario(three_tools(40), "one-way", 1.0, weighted=True, name="3 tools"),
    WeightedScenario(three_tools(40), "one-way", 0.5, weighted=False, name="3 tools"),
]


@pytest.mark.parametrize("scenario", WEIGHTED, ids=[f"{s.n}-{s.label()}" for s in WEIGHTED])
def test_weighted_and_unweighted_change_intervals_cover(scenario):
    coverage = run_weighted(scenario, 800, SEED)
    assert coverage.rate >= LOW, f"{coverage.label}: {100 * coverage.rate:.1f}%"


@pytest.mark.parametrize("correlation", [1.0, 0.5])
def test_interaction_gap_intervals_cover(correlation):
    coverage = run_interaction(InteractionScenario(40, seed_correlation=correlation), 800, SEED)
    assert coverage.rate <= 0.99, f"{coverage.label}: {100 * coverage.rate:.1f}% (no wider than it must be)"
    assert coverage.rate >= LOW, f"{coverage.label}: {100 * coverage.rate:.1f}%"


PROPORTIONS = [ProportionScenario(20, 0.9, 0.5), ProportionScenario(24, 0.9, 0.5), ProportionScenario(24, 0.9, 0.0),
               ProportionScenario(40, 0.8, 0.5), ProportionScenario(200, 0.97, 0.5)]


@pytest.mark.parametrize("scenario", PROPORTIONS, ids=[f"{s.n}-{s.label()}" for s in PROPORTIONS])
def test_the_clustered_wilson_interval_covers_from_20_requests(scenario):
    coverage = run_proportion(scenario, 1500, SEED)
    assert coverage.rate >= LOW, f"{coverage.label} at {scenario.n}: {100 * coverage.rate:.1f}%"
    if scenario.n >= 200:
        assert coverage.rate <= HIGH, f"{coverage.label} at {scenario.n}: {100 * coverage.rate:.1f}%"
