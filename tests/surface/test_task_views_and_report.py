"""The views and the report from given rows: known figures reproduced (128/1,201 = 10.7% invalid, the
47/37 first-call split, 61/74/80/85 -> 93 predicted vs 85 measured), and both denominators of the counters
allowed to get worse."""

from __future__ import annotations

import pytest

from schemas.surface.criteria import SurfaceCriteria
from tasks.report.judge import judge
from tasks.report.render import render_html, render_text
from tasks.stats.interaction import find_factorials
from tasks.surface.figures import ARM_RESPECTS, load_surface_figures
from tasks.surface.gates import JUDGES
from tasks.surface.tables import build_surface_report
from tests.surface.known_task_rows import RUN, KnownTaskRun, call_row, run_row, spread_calls

# the known figures: eight support tools, 200 runs, 1,201 calls of which 128 invalid
SEED_001_TOOLS = [  # tool, calls, invalid, runs in which it appears
    ("search_kb", 380, 19, 196), ("lookup_article", 210, 61, 120), ("get_article", 170, 9, 160),
    ("create_ticket", 120, 6, 120), ("escalate_ticket", 61, 3, 61), ("close_ticket", 90, 5, 90),
    ("list_open_tickets", 100, 16, 80), ("get_ticket", 70, 9, 70),
]


@pytest.fixture(scope="module")
def seed_001():
    run = KnownTaskRun()
    run.runs = [run_row(f"t{i:03d}") for i in range(200)]
    for tool, calls, invalid, runs in SEED_001_TOOLS:
        run.calls += spread_calls(tool, calls, invalid, runs, retries=40 if tool == "lookup_article" else 0)
    run.calls.append(call_row("t000", "search_kb", 999, skipped=True))  # over the budget: not a call that counts
    return run.finish()


def test_the_aggregate_invalid_rate_is_128_of_1201(seed_001):
    (total,) = seed_001.execute("SELECT calls, invalid, round(invalid_rate, 3), round(tool_invalid_min, 3), "
                                "round(tool_invalid_max, 3), runs FROM task_call_totals").fetchall()
    assert total == (1201, 128, 0.107, 0.049, 0.29, 200)


def test_the_per_tool_rates_the_aggregate_hides(seed_001):
    rows = {r[0]: r[1:] for r in seed_001.execute(
        "SELECT tool, calls, invalid, round(invalid_rate, 3), retries, runs_with_tool, "
        "round(calls_per_run_with_tool, 2) FROM task_tool_counters").fetchall()}
    assert rows["lookup_article"] == (210, 61, 0.29, 40, 120, 1.75)   # nearly a third invalid, retried often
    assert rows["search_kb"] == (380, 19, 0.05, 0, 196, 1.94)         # nearly twice per run where it appears
    assert sum(r[0] for r in rows.values()) == 1201


def test_the_report_prints_the_aggregate_beside_the_per_tool_rates(seed_001):
    report = build_surface_report(load_surface_figures(seed_001, RUN), None)
    text = render_text(report, 10**4)
    assert "aggregate invalid rate 128/1,201 = 10.7%, an average over per-tool rates from 4.9% to 29.0%" in text
    tools = next(t for t in report.tables if t.title == "Per-tool counters, arm A")
    lookup = next(r for r in tools.rows if r[0] == "lookup_article")
    assert lookup[1:4] == ["210", "61", "29.0%"] and tools.rows[-1][:4] == ["(all tools)", "1,201", "128", "10.7%"]
    assert "<td>(all tools)</td><td class='num'>1,201</td><td class='num'>128</td><td class='num'>10.7%</td>" in \
        render_html(report)


def test_the_first_call_intent_cross_tab():
    run = KnownTaskRun()
    splits = {"find_article": {"search_kb": 47, "lookup_article": 37},
              "ticket_status": {"get_ticket": 21, "list_open_tickets": 31},
              "read_article": {"get_article": 57, "search_kb": 7}}
    n = 0
    for intent, tools in splits.items():
        for tool, count in tools.items():
            for _ in range(count):
                run.runs.append(run_row(f"t{n:03d}", intent=intent, first_tool=tool))
                n += 1
    run.runs.append(run_row("t999", intent="find_article", first_tool=None))
    con = run.finish()
    got = {(r[0], r[1]): (r[2], round(r[3], 3)) for r in con.execute(
        "SELECT intent, first_tool, n, share_of_intent FROM task_first_calls").fetchall()}
    assert got[("find_article", "search_kb")] == (47, round(47 / 85, 3))
    assert got[("find_article", "lookup_article")] == (37, round(37 / 85, 3))
    assert got[("find_article", "(no call)")] == (1, round(1 / 85, 3))
    assert got[("ticket_status", "list_open_tickets")] == (31, round(31 / 52, 3))
    assert got[("read_article", "get_article")] == (57, round(57 / 64, 3))
    table = next(t for t in build_surface_report(load_surface_figures(con, RUN), None).tables
                 if t.title == "First call by declared intent, arm A")
    assert ["find_article", "search_kb", "47 of 85", "55.3%"] in table.rows
    assert ["read_article", "get_article", "57 of 64", "89.1%"] in table.rows


@pytest.fixture
def counters():
    """A: 200 runs, 100 completed, 8 irreversible actions, 300 reads over 600 executed calls.
    C: 200 runs, 140 completed, 14 irreversible actions, 800 reads over 400 executed calls."""
    run = KnownTaskRun(arms={"A": {}, "C": {"surface_hash": "s1"}}, comparisons=[("A", "C", ["surface"])])
    for arm, completed, actions, reads, calls in (("A", 100, 8, 300, 600), ("C", 140, 14, 800, 400)):
        rung = 1 if arm == "A" else 2
        for i in range(200):
            run.runs.append(run_row(f"t{i:03d}", arm=arm, rung=rung, success=i < completed, irreversible=int(i < actions),
                                    reads=reads // 200 + int(i < reads % 200), handed=i < 30))
        run.calls += [call_row(f"t{i % 200:03d}", "get", i, arm=arm, reads=0) for i in range(calls)]
        run.calls += [call_row("t000", "broken", 9000 + i, arm=arm, valid=False) for i in range(50)]  # never executed
    return run.finish()


def test_irreversible_actions_per_100_completed_and_attempted(counters):
    rows = {r[0]: r[1:] for r in counters.execute(
        "SELECT arm, attempted, completed, irreversible_actions, irreversible_per_100_attempted, "
        "irreversible_per_100_completed, upstream_reads_per_run, upstream_reads_per_call, handoff_rate "
        "FROM task_side_effects").fetchall()}
    assert rows["A"] == (200, 100, 8, 4.0, 8.0, 1.5, 0.5, 0.15)
    assert rows["C"] == (200, 140, 14, 7.0, 10.0, 4.0, 2.0, 0.15)


def gates(*gate: dict) -> SurfaceCriteria:
    return SurfaceCriteria.model_validate({"name": "t", "gates": list(gate)})


def test_the_denominator_decides_the_irreversible_gate(counters):
    figures = load_surface_figures(counters, RUN)
    gate = {"name": "pages", "kind": "irreversible_actions", "max_increase_per_100": 2.5}
    per_completed = judge(figures, gates({**gate, "denominator": "completed"}), JUDGES)
    per_attempted = judge(figures, gates({**gate, "denominator": "attempted"}), JUDGES)
    assert per_completed.status == "PASS" and "8.00 -> 10.00 (+2.00, allowed +2.5)" in per_completed.gates[0].evidence[0]
    assert per_attempted.status == "FAIL" and "4.00 -> 7.00 (+3.00, allowed +2.5)" in per_attempted.gates[0].evidence[0]


def test_upstream_reads_per_run_and_per_call_are_gateable(counters):
    figures = load_surface_figures(counters, RUN)
    per_run = judge(figures, gates({"name": "reads", "kind": "upstream_reads", "per": "run", "max_ratio": 2.0}), JUDGES)
    per_call = judge(figures, gates({"name": "reads", "kind": "upstream_reads", "per": "call", "max_ratio": 5.0,
                                     "max": 1.5, "arms": "all"}), JUDGES)
    assert per_run.status == "FAIL" and "1.50 -> 4.00 (x2.67, allowed x2)" in per_run.gates[0].evidence[0]
    assert per_call.status == "FAIL" and per_call.gates[0].n_failed == 1
    assert "C: upstream reads per executed call 2.00 vs cap 1.5" in per_call.gates[0].evidence
    handoff = judge(figures, gates({"name": "h", "kind": "handoff_rate", "max_rate": 0.1}), JUDGES)
    assert handoff.status == "FAIL" and handoff.gates[0].evidence == [
        "C: runs handed to a human 15.0% (30 of 200 runs) vs cap 10.0%"]  # a percentage, and what it divides


def four_arms(rates: dict[str, int], n: int = 100) -> KnownTaskRun:
    arms = {"A": {}, "B": {"prompt_hash": "p1"}, "C": {"surface_hash": "s1"}, "D": {"prompt_hash": "p1", "surface_hash": "s1"}}
    run = KnownTaskRun(arms=arms, comparisons=[("A", "B", ["prompt"]), ("A", "C", ["surface"]), ("B", "D", ["surface"])])
    for rung, (arm, right) in enumerate(rates.items(), start=1):
        run.runs += [run_row(f"t{i:03d}", arm=arm, rung=rung, success=i < right) for i in range(n)]
    return run


def test_the_interaction_table_of_seed_001():
    figures = load_surface_figures(four_arms({"A": 61, "B": 74, "C": 80, "D": 85}).finish(), RUN)
    (found,) = figures.interactions
    t = found.table
    assert (found.factorial.first, found.factorial.second, found.factorial.both) == ("B", "C", "D")
    assert (t.baseline, t.first, t.second, t.both) == (0.61, 0.74, 0.80, 0.85)
    assert round(t.first_effect, 2) == 0.13 and round(t.second_effect, 2) == 0.19
    assert round(t.additive_prediction, 2) == 0.93 and round(t.gap.estimate, 2) == -0.08
    text = render_text(build_surface_report(figures, None), 10**4)
    assert "s        100     61.0%  +13.0 / +19.0                93.0%     85.0%  -8.0 (" in text


def test_paired_comparisons_count_discordant_tasks():
    figures = load_surface_figures(four_arms({"A": 61, "B": 74, "C": 80, "D": 85}).finish(), RUN)
    a_to_c = next(c for c in figures.comparisons if (c.baseline, c.arm) == ("A", "C"))
    assert (a_to_c.paired.worse, a_to_c.paired.better, a_to_c.paired.n_requests) == (0, 19, 100)
    assert a_to_c.paired.p_value < 0.001 and a_to_c.slice == "s"


def test_squares_are_found_when_a_baseline_has_more_than_one():
    arms = [{"arm": n, "surface_hash": s, "prompt_hash": p, "model_id": "m", "agent": "baseline",
             "agent_options_hash": "o", "taskset_version": "t1"}
            for n, s, p in (("A", "s0", "p0"), ("B", "s0", "p1"), ("C", "s1", "p0"), ("D", "s1", "p1"),
                            ("E", "s2", "p0"), ("F", "s2", "p1"))]
    squares = {(f.baseline, f.first, f.second, f.both) for f in find_factorials(arms, ARM_RESPECTS)}
    assert ("A", "B", "C", "D") in squares and ("A", "B", "E", "F") in squares


def test_the_all_tools_calls_per_run_divides_by_the_runs_with_a_call():
    """20 runs, 16 with calls (a: 12 runs x 2 calls; b: 3 calls in 3 of those runs; c: 8 calls in 4 more runs):
    35 calls / 16 runs with a call = 2.19, not 35 / 20 = 1.75 as the per-tool rows' "where it appears" reads."""
    run = KnownTaskRun()
    run.runs = [run_row(f"t{i:03d}") for i in range(20)]
    run.calls = (spread_calls("a", 24, 0, 12) + spread_calls("b", 3, 0, 3)
                 + spread_calls("c", 8, 0, 4, offset=12))
    con = run.finish()
    (total,) = con.execute("SELECT calls, runs, runs_with_call, round(calls_per_run, 2), "
                           "round(calls_per_run_with_call, 2) FROM task_call_totals").fetchall()
    assert total == (35, 20, 16, 1.75, 2.19)
    tools = next(t for t in build_surface_report(load_surface_figures(con, RUN), None).tables
                 if t.title == "Per-tool counters, arm A")
    assert tools.rows[-1][0] == "(all tools)" and tools.rows[-1][-1] == "2.19"
    assert "for (all tools), the 16 runs with any call (1.75 over all 20 runs)" in tools.note


def test_upstream_reads_per_call_is_labelled_per_executed_call(counters):
    """A: 300 reads over 600 executed calls of 650 (50 invalid, never executed): 0.50 per executed call, which
    the table, its note and the gate's field description call what it is (300/650 = 0.46 per call is not it)."""
    (row,) = counters.execute("SELECT upstream_reads, executed_calls, upstream_reads_per_call FROM task_side_effects "
                              "WHERE arm = 'A'").fetchall()
    assert row == (300, 600, 0.5)
    table = next(t for t in build_surface_report(load_surface_figures(counters, RUN), None).tables
                 if t.key == "side-effects")
    assert table.columns[8] == "per executed call" and "per call" not in table.columns
    assert [r[8] for r in table.rows if r[0] == "A"] == ["0.50"]
    assert "Upstream reads per executed call (calls rejected as invalid never reach a backend" in table.note
    assert "executed call" in SurfaceCriteria.model_json_schema()["$defs"]["UpstreamReadsGate"]["properties"]["per"][
        "description"]


def test_the_header_counts_the_calls_the_per_tool_tables_total():
    """29 calls that counted and 3 recorded after the budget was spent: 32 task_calls rows. The header says
    29 calls and the 3 skipped apart, as the per-tool tables total 29."""
    run = KnownTaskRun()
    run.runs = [run_row(f"t{i:03d}") for i in range(10)]
    run.calls = spread_calls("a", 20, 2, 10) + spread_calls("b", 9, 0, 9)
    run.calls += [call_row("t000", "a", 500 + i, skipped=True) for i in range(3)]
    con = run.finish()
    assert con.execute("SELECT calls, skipped_budget FROM task_call_totals").fetchall() == [(29, 3)]
    report = build_surface_report(load_surface_figures(con, RUN), None)
    assert "32 calls" not in report.headline[0]
    assert report.headline[0].endswith("10 task runs, 29 calls (3 more skipped: over budget)")
    tools = next(t for t in report.tables if t.title == "Per-tool counters, arm A")
    assert tools.rows[-1][:2] == ["(all tools)", "29"]


def test_runs_whose_prompt_did_not_grow_by_the_tool_results_are_counted_and_warned_of():
    """A server that drops tool results (llama-cpp-python's chatml-function-calling): the arm's row counts the
    runs, and the report's first lines say so; an arm without such runs gets no line."""
    run = KnownTaskRun(arms={"A": {}, "B": {}})
    run.runs = ([{**run_row(f"t{i}", n_turns=3), "results_unseen_turns": 2 if i < 3 else 0} for i in range(4)]
                + [run_row(f"t{i}", arm="B", rung=2, n_turns=3) for i in range(4)])
    con = run.finish()
    assert con.execute("SELECT arm, runs_results_unseen FROM task_arm_success ORDER BY arm").fetchall() == [
        ("A", 3), ("B", 0)]
    report = build_surface_report(load_surface_figures(con, RUN), None)
    warned = [line for line in report.headline if "did not grow by the tool results" in line]
    assert len(warned) == 1 and warned[0].startswith("Warning: arm A (t1): in 3 of 4 task runs")
