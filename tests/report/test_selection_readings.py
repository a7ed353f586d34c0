"""Selection readings on given rows: a reading is what the interval beside it says (never the seed spread), churn
in the resolution table comes from both directions, the router threshold is read three ways from its
interval, and the words for traffic shares and pooled slices."""

from __future__ import annotations

from functools import partial

from schemas.selection.criteria import SelectionCriteria
from tasks.report.judge import judge as judge_with
from tasks.selection.figures import load_figures
from tasks.selection.gates import JUDGES
from tasks.report.format import paired_reading
from tasks.selection.tables import build_report_from, drops_table
from tests.factories.rows import KnownRun, tool_rows

judge = partial(judge_with, judges=JUDGES)


def table(report, key):
    return next(t for t in report.tables if t.key == key)


def noise_case_run() -> KnownRun:
    """200 requests x 3 seeds of one tool. In both arms 12 requests are right under seed 1 only (a per-seed
    spread of 12/200 = 6.0 points) and 100 under every seed; 8 requests right under every seed in the
    baseline are wrong under every seed in the candidate: -4.0 points, 8 worse / 0 better."""
    run = KnownRun(arms=["base", "cand"], comparisons=[("base", "cand")], seeds=3,
                   weights={"refund_order": 0.3, "other": 0.7})
    for arm, rung, turning in (("base", 1, 3), ("cand", 2, 0)):
        run.add(tool_rows("refund_order", 200, [turning] * 8 + [1] * 12 + [3] * 100 + [0] * 80, seeds=3,
                          arm=arm, rung=rung))
    return run


def test_a_significant_paired_drop_inside_the_seed_spread_is_a_drop_not_noise():
    figures = load_figures(noise_case_run().finish(), "run1")
    change = next(c for c in figures.tool_changes if c.tool == "refund_order")
    p = change.paired
    assert (p.worse, p.better, p.n_requests) == (8, 0, 200)
    assert round(100 * p.change.estimate, 1) == -4.0
    assert (round(100 * p.change.low, 1), round(100 * p.change.high, 1)) == (-7.9, -1.8)
    assert round(p.p_value, 4) == 0.0061  # the score test the interval inverts
    assert round(100 * change.noise_floor, 1) == 6.0  # the seed spread is larger than the change...
    assert change.significant  # ...and the interval, over every seed of every request, excludes 0
    assert paired_reading(change.paired) == "▼ drop"

    report = build_report_from(figures)
    (row,) = table(report, "tool-changes-base-cand-existing").rows
    assert row[-1] == "▼ drop"
    drops = drops_table(figures)
    assert drops is not None and [r[2] for r in drops.rows] == ["refund_order"]
    assert drops.columns[-1] == "seed spread" and drops.rows[0][-1] == "6.0"
    (slice_row,) = table(report, "slice-changes").rows
    assert slice_row[-1] == "▼ drop"


def test_the_gate_evidence_states_the_seed_spread_beside_the_interval_and_its_test():
    figures = load_figures(noise_case_run().finish(), "run1")
    gate = judge(figures, SelectionCriteria.model_validate({"name": "t", "gates": [
        {"name": "hold", "kind": "tool_drop", "min_volume_share": 0.03, "max_drop_points": 3}]})).gates[0]
    assert gate.status == "FAIL"
    assert "(95% CI -7.9 to -1.8)" in gate.evidence[0]
    assert "score test p=0.006; seed spread 6.0 pts" in gate.evidence[0]


def test_a_change_whose_interval_holds_zero_could_be_chance():
    run = KnownRun(arms=["base", "cand"], comparisons=[("base", "cand")], seeds=3)
    for arm, rung, turning in (("base", 1, 3), ("cand", 2, 0)):  # 3 worse / 0 better: p = 0.25
        run.add(tool_rows("refund_order", 200, [turning] * 3 + [1] * 12 + [3] * 105 + [0] * 80, seeds=3,
                          arm=arm, rung=rung))
    figures = load_figures(run.finish(), "run1")
    change = next(c for c in figures.tool_changes if c.tool == "refund_order")
    assert not change.significant and change.paired.change.low < 0 < change.paired.change.high
    assert change.paired.p_value >= 0.05
    assert paired_reading(change.paired) == "could be chance"
    assert drops_table(figures) is None


def test_a_one_way_gain_is_not_churn_in_the_resolution_table():
    """new_tools at the last rung: 140 requests, 89 right (63.6%); 33 turned wrong -> right from the rung
    before and none right -> wrong. Read as churn that gain gave a smallest detectable drop of 19.2 points;
    with the churn seen both ways (0) it is 4.8."""
    from tasks.selection.tables import observed_churn
    from tasks.stats.change_power import planned_drop

    assert round(100 * planned_drop(89 / 140, 140, churn=33 / 140).drop, 1) == 19.2  # the old reading
    run = KnownRun(arms=["before", "after"], comparisons=[("before", "after")])
    run.add(tool_rows("gift_card", 140, [1] * 56 + [0] * 33 + [0] * 51, arm="before", rung=1, slice_="new_tools"))
    run.add(tool_rows("gift_card", 140, [1] * 56 + [1] * 33 + [0] * 51, arm="after", rung=2, slice_="new_tools"))
    figures = load_figures(run.finish(), "run1")
    (change,) = figures.slice_changes
    assert (change.paired.worse, change.paired.better) == (0, 33)
    (row,) = table(build_report_from(figures), "resolution").rows
    assert row[:2] == ["new_tools", "140"]
    assert row[4].startswith("4.8 (")
    assert row[5] == "0.0% (0 worse / 33 better, before → after)"
    # churn both ways counts: 5 worse and 12 better of 140 is 5 of 140 going each way on top of a net gain
    assert observed_churn(5, 12, 140) == 5 / 140 and observed_churn(12, 5, 140) == 5 / 140
    assert planned_drop(89 / 140, 140, churn=5 / 140).drop > planned_drop(89 / 140, 140).drop


def test_a_calibrated_router_whose_confirm_interval_straddles_the_target_reads_inconclusive():
    """A perfectly calibrated router (seeded): its fitted threshold's confirm half misses 90% on the point
    estimate in about half the runs; read from the interval most of those straddle the target."""
    import numpy as np

    from tasks.selection.tables import threshold_verdict
    from benchmarks.simulations.threshold import CalibratedRouter, point_reading

    rng = np.random.default_rng(23)
    fits = [CalibratedRouter().fit(rng) for _ in range(60)]
    straddling = [f for f in fits if point_reading(f) == "not confirmed"
                  and f.confirm_accuracy.low <= 0.90 <= f.confirm_accuracy.high]
    assert straddling  # the point estimate alone said "not confirmed" for these
    for fit in straddling:
        assert fit.confirmation == "inconclusive"
        assert threshold_verdict(fit) == f"inconclusive ({100 * fit.confirm_accuracy.estimate:.1f}%: the CI straddles 90%)"
    point_misses = sum(point_reading(f) == "not confirmed" for f in fits)
    interval_misses = sum(f.confirmation == "not confirmed" for f in fits)
    assert point_misses >= 20 and interval_misses <= point_misses / 2
    assert all(f.confirm_accuracy.high < 0.90 for f in fits if f.confirmation == "not confirmed")
    assert all(f.confirm_accuracy.low >= 0.90 for f in fits if f.confirmation == "confirmed")


def test_the_threshold_table_reads_inconclusive_on_given_rows():
    """60 confirm-half requests, 52 right (86.7%, 95% CI about 76-93): straddles 90%, so inconclusive."""
    from tasks.stats.calibration import request_split
    from tests.factories.rows import selection_row

    run = KnownRun(seeds=1)
    confirm_seen = 0
    for i in range(200):
        request_id = f"r{i:03d}"
        if request_split(request_id) == "fit":
            right = True
        elif confirm_seen < 60:
            right = confirm_seen % 15 >= 2  # 13 of each 15 right: 52 of 60
            confirm_seen += 1
        else:
            continue
        run.add([selection_row(request_id, "t", right, confidence=0.95)])
    report = build_report_from(load_figures(run.finish(), "run1"))
    (row,) = table(report, "threshold").rows
    fit = report.figures.calibration[0].threshold
    assert fit.confirm_accuracy.low < 0.90 < fit.confirm_accuracy.high
    assert row[5] == "inconclusive (86.7%: the CI straddles 90%)"


def two_slice_run() -> KnownRun:
    """refund_order holds 32.8% of all traffic and the compared tools 87.0% of it (so 37.7% of theirs).
    existing: refund_order 20 requests, 4 turn wrong; new_tools: open_dispute 10 requests, 5 turn right."""
    weights = {"refund_order": 0.328, "track_shipment": 0.542, "gift_card": 0.13}
    run = KnownRun(arms=["base", "cand"], comparisons=[("base", "cand")], weights=weights)
    for arm, rung in (("base", 1), ("cand", 2)):
        refund = [1] * 20 if arm == "base" else [0] * 4 + [1] * 16
        run.add(tool_rows("refund_order", 20, refund, arm=arm, rung=rung))
        run.add(tool_rows("track_shipment", 20, [1] * 20, arm=arm, rung=rung))
        dispute = [0] * 10 if arm == "base" else [1] * 5 + [0] * 5
        run.add(tool_rows("open_dispute", 10, dispute, arm=arm, rung=rung, slice_="new_tools"))
    return run


def test_the_unweighted_change_beside_the_weighted_one_is_per_slice():
    figures = load_figures(two_slice_run().finish(), "run1")
    report = build_report_from(figures)
    weighted = table(report, "weighted-changes")
    assert weighted.columns == ["comparison", "weighted Δ", "95% CI", "traffic covered", "slice", "unweighted Δ",
                                "95% CI"]
    (existing, new_tools) = weighted.rows
    assert existing[:2] == ["base → cand", "-7.5"] and existing[3] == "87.0%"  # 0.328/0.87 x -20 points
    assert (existing[4], existing[5]) == ("existing", "-10.0")  # 4 of 40 requests, the slice-change figure
    assert (new_tools[4], new_tools[5]) == ("new_tools", "+50.0")
    pooled = figures.weighted_changes[("base", "cand")].unweighted.estimate  # (−4 + 5) / 50: both slices averaged
    assert f"{100 * pooled:+.1f}" not in {cell for row in weighted.rows for cell in row}
    levels = table(report, "weighted")
    assert levels.columns[-1] == "unweighted by slice" and levels.rows[1][-1] == "existing 90.0%\nnew_tools 50.0%"
    gate = judge(figures, SelectionCriteria.model_validate({"name": "t", "gates": [
        {"name": "w", "kind": "weighted_drop", "max_drop_points": 5}]})).gates[0]
    assert gate.status == "FAIL" and "unweighted by slice: existing -10.0, new_tools +50.0" in gate.evidence[0]


def test_traffic_is_the_share_of_all_traffic_and_the_compared_share_is_named_apart():
    figures = load_figures(two_slice_run().finish(), "run1")
    report = build_report_from(figures)
    tools = table(report, "tools-existing-1")
    assert next(r for r in tools.rows if r[0] == "refund_order")[1] == "32.8%"
    contributions = table(report, "contributions-base-cand")
    assert contributions.columns[1:3] == ["traffic", "share of compared traffic"]
    refund = next(r for r in contributions.rows if r[0] == "refund_order")
    assert refund[1:3] == ["32.8%", "37.7%"]


def test_compare_prints_the_share_of_all_traffic_as_traffic(tmp_path, capsys):
    from flows.cli import main
    from tests.report.test_run_comparison import add_run
    from tests.factories.rows import memory_warehouse

    root = tmp_path / "wh"
    root.mkdir()
    con = memory_warehouse(root / "tooleval.duckdb")
    weights = {"refund": 0.328, "track": 0.542, "gift": 0.13}  # no request for 'gift': 87.0% compared
    add_run(con, "a", [1, 2, 3], {f"refund-{i}": [1, 2, 3] for i in range(10)}
            | {f"track-{i}": [1, 2, 3] for i in range(10)}, weights=weights)
    add_run(con, "b", [1, 2, 3], {f"refund-{i}": ([] if i < 6 else [1, 2, 3]) for i in range(10)}
            | {f"track-{i}": [1, 2, 3] for i in range(10)}, weights=weights)
    con.close()
    assert main(["compare", "a", "b", "--warehouse", str(root)]) == 0
    out = capsys.readouterr().out
    per_tool = out.split("Per tool, slice existing")[1].split("Contributions")[0]
    assert "refund" in per_tool and "32.8%" in per_tool and "37.7%" not in per_tool
    contributions = out.split("Contributions")[1]
    assert "share of" in contributions and "32.8%" in contributions and "37.7%" in contributions
    assert "unweighted: per slice below" in " ".join(out.split())
