"""What the report says about its own numbers: tolerance at gate boundaries, p-values, the threshold that is
not confirmed, calibration per request with intervals, the seed noise floor, requests per rung, what the set
can resolve."""

from __future__ import annotations

from functools import partial

import pytest

from schemas.selection.criteria import SelectionCriteria
from tasks.selection.figures import load_figures
from tasks.report.format import p_value
from tasks.report.judge import beyond
from tasks.selection.tables import build_report_from, threshold_verdict
from tasks.stats.calibration import ThresholdFit, request_split
from tasks.stats.estimate import Interval
from tests.factories.rows import KnownRun, selection_row, tool_rows
from tests.report.test_report_render import known_run
from tasks.report.judge import judge as judge_with  # noqa: E402
from tasks.selection.gates import JUDGES  # noqa: E402

judge = partial(judge_with, judges=JUDGES)


@pytest.fixture(scope="module")
def report():
    return build_report_from(load_figures(known_run().finish(), "run1"))


def table(report, key):
    return next(t for t in report.tables if t.key == key)


@pytest.mark.parametrize("p,text", [(0.125, "0.125"), (0.0625, "0.063"), (0.03125, "0.031"), (0.5, "0.5"),
                                    (1.0, "1"), (0.0009, "<0.001"), (0.00195, "0.002"), (0.0703125, "0.07")])
def test_p_values_print_to_three_decimals_rounded_half_up(p, text):
    assert p_value(p) == text


@pytest.mark.parametrize("drop", [-0.10000000000000003, -0.09999999999999998, 0.7 - 0.8, 0.9 - 1.0])
def test_a_figure_that_prints_as_the_limit_is_judged_as_the_limit(drop):
    # all print as -10.0: none of them drops "more than 10 points"
    assert not beyond(Interval(drop, drop - 0.1, drop + 0.1, "t"), -0.10, True, "point")
    assert beyond(Interval(-0.1006, -0.2, 0.0, "t"), -0.10, True, "point")  # prints -10.1


def test_the_tool_drop_gate_states_its_tolerance_and_passes_exactly_10_points():
    weights = {"gift_cards": 0.5, "track_shipment": 0.5}
    run = KnownRun(arms=["base", "cand"], comparisons=[("base", "cand")], weights=weights)
    for arm, rung, gift in (("base", 1, [1] * 10), ("cand", 2, [1] * 9 + [0])):
        run.add(tool_rows("gift_cards", 10, gift, arm=arm, rung=rung))
        run.add(tool_rows("track_shipment", 20, [1] * 20, arm=arm, rung=rung))
    figures = load_figures(run.finish(), "run1")
    gate = judge(figures, SelectionCriteria.model_validate({"name": "t", "gates": [
        {"name": "hold", "kind": "tool_drop", "min_volume_share": 0.03, "max_drop_points": 10}]})).gates[0]
    assert gate.status == "PASS" and "compared as printed, to 0.1 point" in gate.statement
    assert "-10.0 pts" in gate.evidence[0]


def threshold_run() -> KnownRun:
    """Confident rows: right on every fit-half request, right on 70% of confirm-half requests."""
    run = KnownRun(seeds=1)
    confirm_seen = 0
    for i in range(120):
        request_id = f"r{i:03d}"
        if request_split(request_id) == "fit":
            right = True
        else:
            right = confirm_seen % 10 < 7
            confirm_seen += 1
        run.add([selection_row(request_id, "t", right, confidence=0.95)])
    return run


def test_the_threshold_table_says_not_confirmed_when_the_confirm_half_misses():
    run = threshold_run()
    confirm = [r["correct"] for r in run.rows if request_split(r["request_id"]) == "confirm"]
    report = build_report_from(load_figures(run.finish(), "run1"))
    (row,) = table(report, "threshold").rows
    assert row[3].startswith("100.0%")  # the fit half reached the target
    assert row[5] == f"not confirmed ({100 * sum(confirm) / len(confirm):.1f}% < 90%)"
    assert sum(confirm) / len(confirm) < 0.75
    assert "confirmed on the other" not in table(report, "threshold").title


def test_threshold_verdict_words():
    report = build_report_from(load_figures(known_run().finish(), "run1"))
    fits = [c.threshold for c in report.figures.calibration]
    assert all(threshold_verdict(f) == "confirmed" for f in fits if f.confirmation == "confirmed")


def test_a_not_confirmed_estimate_that_rounds_to_the_target_is_shown_below_it():
    """The verdict comes from the confirm half's interval (all of it below 90%); the line shows the estimate
    with the digits that keep it true: '89.96% < 90%', never '90.0% < 90%'."""
    def fit(estimate: float) -> ThresholdFit:
        return ThresholdFit(target_accuracy=0.90, threshold=0.5, fit_accuracy=0.95, fit_coverage=0.8, fit_rows=500,
                            confirm_accuracy=Interval(estimate, estimate - 0.0003, estimate + 0.00001, "wilson"),
                            confirm_coverage=0.8, confirm_rows=5000)

    assert threshold_verdict(fit(0.8996)) == "not confirmed (89.96% < 90%)"
    assert threshold_verdict(fit(0.89996)) == "not confirmed (89.996% < 90%)"
    assert threshold_verdict(fit(0.8512)) == "not confirmed (85.1% < 90%)"  # one digit when one is enough


def test_calibration_counts_requests_once_and_shows_intervals(report):
    calibration = table(report, "calibration")
    assert calibration.columns[1] == "req×seeds"
    row = calibration.rows[0]
    assert row[1] == "60×3"  # 60 requests under 3 seeds, not 180 units
    assert "\n" in row[3] and "–" in row[3]  # Brier with its interval
    assert all("\n" in cell and "–" in cell for cell in row[4:7])  # each third with its interval
    cal = report.figures.calibration[0]
    assert cal.n_requests == 60 and cal.n == 180
    assert all(t is not None and t.low <= t.estimate <= t.high for t in cal.tercile_intervals)


def test_reliability_bins_carry_request_clustered_intervals(report):
    rows = table(report, "reliability-1").rows
    filled = [cell for row in rows for cell in row[1:] if cell]
    assert filled and all(cell.count("\n") == 2 and "–" in cell.split("\n")[1] for cell in filled)


def test_a_spread_of_zero_is_not_called_the_noise_floor_beside_a_sampling_interval(report):
    note = table(report, "slices").note
    assert "a spread of 0.0 means the seeds agreed, not that the figure is exact" in note
    assert "(the noise floor)" not in note


def test_the_req_column_shows_the_requests_of_each_rung(report):
    rows = table(report, "tools-new_tools-1").rows
    assert next(r for r in rows if r[0] == "gift_cards")[2] == "–/10/10"
    assert next(r for r in rows if r[0] == "none")[2] == "10/–/–"
    existing = table(report, "tools-existing-1").rows
    assert next(r for r in existing if r[0] == "gift_cards")[2] == "12"


def test_the_resolution_table_prints_the_interval_and_the_drop_its_reading_detects(report):
    resolution = table(report, "resolution")
    existing = next(r for r in resolution.rows if r[0] == "existing")
    level = report.figures.level("subscriptions-26", "existing")
    assert existing[2] == f"{100 * level.ci_low:.1f}–{100 * level.ci_high:.1f}"
    assert existing[4].endswith("req)") or existing[4] == "none detectable"
    assert "95% CI excludes 0" in resolution.note and "worse /" in existing[5] and "min(worse, better)" in resolution.note
    new_tools = next(r for r in resolution.rows if r[0] == "new_tools")
    assert new_tools[4] == "none detectable" or float(new_tools[4].split()[0]) > 20  # 10 requests: only a collapse
