"""The version-calibration interval (tasks/stats/unpaired.py) on given counts: Newcombe's published example
when the versions share nothing, the correlation through shared units, and its coverage on a few cells of
the simulation (the grid: benchmarks/version_calibration_coverage.py)."""

from __future__ import annotations

import pytest

from benchmarks.simulations.coverage_versions import VersionScenario, run_version
from tasks.stats.mover import mover_difference
from tasks.stats.unpaired import shared_correlation, unpaired_change
from tasks.stats.wilson import clustered_wilson_interval, wilson_interval


def test_disjoint_versions_give_newcombes_hybrid_score_interval():
    # Newcombe (1998), method 10: 56/70 vs 48/80 -> difference 0.2, 95% CI 0.0524 to 0.3339. Here 70 tasks
    # on the new version (56 right under all 3 seeds) and 80 on the old (48 right): seeds that always agree
    # make each side Wilson on the tasks, and no task is shared, so the interval is Newcombe's.
    new = [3] * 56 + [0] * 14
    old = [3] * 48 + [0] * 32
    change = unpaired_change([f"o{i}" for i in range(80)], old, [3] * 80, [f"n{i}" for i in range(70)], new, [3] * 70)
    assert change.correlation == 0
    assert change.change.estimate == pytest.approx(0.2)
    assert change.change.low == pytest.approx(0.0524, abs=5e-5)
    assert change.change.high == pytest.approx(0.3339, abs=5e-5)
    assert (change.units_before, change.units_after, change.rows_before, change.rows_after) == (80, 70, 240, 210)


def test_shared_units_correlate_the_two_sides_and_narrow_the_interval():
    # 20 tasks x 3 seeds on v1 (15 always right, 5 right once: 50/60); v2 = the same tasks answered alike plus
    # 5 failed under every seed (50/75). Residuals e = k - p m: v1 0.5 (x15), -1.5 (x5); v2 on the shared
    # tasks 1 (x15), -1 (x5), on the added -2 (x5): r = (15 x 0.5 + 5 x 1.5) / sqrt(15 x 40) = 15 / sqrt(600)
    old_ids = [f"t{i}" for i in range(20)]
    old_k = [3] * 15 + [1] * 5
    new_ids = old_ids + [f"h{i}" for i in range(5)]
    new_k = old_k + [0] * 5
    r = shared_correlation(old_ids, old_k, [3] * 20, new_ids, new_k, [3] * 25)
    assert r == pytest.approx(15 / 600 ** 0.5)
    change = unpaired_change(old_ids, old_k, [3] * 20, new_ids, new_k, [3] * 25)
    assert change.change.estimate == pytest.approx(50 / 75 - 50 / 60)
    before, after = clustered_wilson_interval(old_k, [3] * 20), clustered_wilson_interval(new_k, [3] * 25)
    assert change.change == mover_difference(after, before, change.change.method, r)
    plain = mover_difference(after, before)
    assert plain.low < change.change.low and change.change.high < plain.high  # narrower on both sides
    assert change.change.high < 0 < plain.high  # the added difficulty is shown; as if disjoint it was not


def test_a_zero_correlation_is_plain_mover_and_the_radicand_never_goes_negative():
    a, b = wilson_interval(8, 10), wilson_interval(2, 10)
    assert mover_difference(a, b, correlation=0.0) == mover_difference(a, b)
    same = mover_difference(a, a, correlation=1.0)
    assert same.estimate == 0 and same.low <= 0 <= same.high


@pytest.mark.parametrize("scenario", [
    VersionScenario("disjoint", 20, 12, 0.61, 0.79),
    VersionScenario("nested", 20, 5, 0.83, 0.3),
    VersionScenario("nested", 50, 10, 0.83, 0.3, seed_correlation=1.0),
    VersionScenario("overlap", 200, 100, 0.8, 0.8),
], ids=lambda s: s.label())
def test_the_interval_covers_the_difference_between_the_versions(scenario):
    coverage = run_version(scenario, 600, 20261201)
    assert coverage.rate >= 0.935, f"{scenario.label()}: {100 * coverage.rate:.1f}%"
