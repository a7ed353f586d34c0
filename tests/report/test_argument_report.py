"""The report's argument section on a known run: argument accuracy per slice and rung (NOT JUDGED where nothing
was scored), the per-parameter errors with their shares of the tool's scored calls, and, beside the confused
pairs, the calls of the right tool with wrong arguments per tool; per-tool argument accuracy across rungs and
its paired change; a run with no scored arguments gets one line and no argument table. The tables fit 80
columns without being split into panels."""

from __future__ import annotations

import pytest

from tasks.report.format import change_span, interval_text
from tasks.report.render import render_html, render_markdown, render_text
from tasks.selection.tables import build_report
from tasks.stats.wilson import clustered_wilson_interval
from tests.factories.rows import RUN, KnownRun, records, selection_row

RIGHT = [("order_id", "right"), ("reason", "right")]


def scored(request_id: str, seed: int, outcomes, arm: str, rung: int, tool: str = "refund") -> dict:
    return selection_row(request_id, tool, True, arm=arm, rung=rung, seed=seed,
                         arguments_correct=all(o in ("right", "extra_allowed") for _, o in outcomes),
                         argument_outcomes=[{"parameter": p, "outcome": o} for p, o in outcomes])


def arm_rows(arm: str, rung: int) -> list[dict]:
    """refund: q0 right twice; q1 reason wrong once; q2 order_id missing and a hallucinated code once, the
    other seed another tool; q3 reason wrong twice. track_shipment: t0 right twice, t1 another tool twice;
    an extra parameter the schema allows (t0, seed 2) is free."""
    return [scored("q0", 1, RIGHT, arm, rung), scored("q0", 2, RIGHT, arm, rung),
            scored("q1", 1, [("order_id", "right"), ("reason", "wrong_value")], arm, rung),
            scored("q1", 2, RIGHT, arm, rung),
            scored("q2", 1, [("order_id", "missing_required"), ("reason", "right"), ("code", "hallucinated")],
                   arm, rung),
            selection_row("q2", "refund", False, arm=arm, rung=rung, seed=2),
            scored("q3", 1, [("order_id", "right"), ("reason", "wrong_value")], arm, rung),
            scored("q3", 2, [("order_id", "right"), ("reason", "wrong_value")], arm, rung),
            scored("t0", 1, [("tracking_number", "right")], arm, rung, "track_shipment"),
            scored("t0", 2, [("tracking_number", "right"), ("carrier", "extra_allowed")], arm, rung,
                   "track_shipment"),
            selection_row("t1", "track_shipment", False, arm=arm, rung=rung, seed=1),
            selection_row("t1", "track_shipment", False, arm=arm, rung=rung, seed=2)]


@pytest.fixture(scope="module")
def known():
    run = KnownRun(arms=("hosted", "offline"), seeds=2)
    run.add(arm_rows("hosted", 1))
    # an arm that sends no arguments: right tools, nothing scored
    run.add([selection_row(r, "refund", True, arm="offline", rung=2, seed=s) for r in ("q0", "q1") for s in (1, 2)])
    return run.finish()


def test_the_figures_count_what_the_rows_hold(known):
    from tasks.selection.figures import load_figures

    breakdown = load_figures(known, RUN).argument_breakdown
    hosted, offline = sorted(breakdown.slices, key=lambda x: x.rung)
    assert (hosted.scored, hosted.right, hosted.not_scored, hosted.n_requests) == (9, 5, 3, 5)
    assert (offline.scored, offline.not_scored, offline.accuracy) == (4 - 4, 4, None)
    assert breakdown.wrong_tool == {("hosted", "existing", "refund"): 1, ("hosted", "existing", "track_shipment"): 2}
    reason = next(p for p in breakdown.parameters if (p.tool, p.parameter, p.outcome) == ("refund", "reason",
                                                                                          "wrong_value"))
    assert (reason.rows, reason.n_requests, reason.scored_rows) == (3, 2, 7)
    assert reason.share == clustered_wilson_interval([0, 1, 0, 2], [2, 2, 1, 2])
    kinds = {k.outcome: k for k in breakdown.kinds if k.arm == "hosted"}
    assert {o: (k.calls, k.n_requests, k.scored) for o, k in kinds.items()} == {
        "wrong_value": (3, 2, 9), "missing_required": (1, 1, 9), "hallucinated": (1, 1, 9)}
    # per request (calls with a wrong value, scored calls): q0 (0, 2), q1 (1, 2), q2 (0, 1), q3 (2, 2), t0 (0, 2)
    assert kinds["wrong_value"].share == clustered_wilson_interval([0, 1, 0, 2, 0], [2, 2, 1, 2, 2])
    view = {(r["tool"], r["parameter"], r["outcome"]): r["share"]
            for r in records(known, "select * from argument_outcome_counts where arm = 'hosted'")}
    for p in breakdown.parameters:  # the share the view gives, with its interval around it
        assert p.share.estimate == pytest.approx(view[(p.tool, p.parameter, p.outcome)])
        assert p.share.low <= p.share.estimate <= p.share.high


def test_the_report_shows_the_argument_tables_within_80_columns(known):
    report = build_report(known, RUN)
    keys = [t.key for t in report.tables]
    assert keys.index("pairs") + 1 == keys.index("tool-arguments-existing")  # beside the confused pairs
    assert keys.index("arguments") + 1 == keys.index("argument-errors")
    assert keys.index("argument-errors") + 1 == keys.index("parameter-errors-existing")
    assert [row[2:5] for row in table_rows(report, "argument-errors")] == [
        ["wrong value", "3", "33.3% (3/9)\n" + span_of(3, 9, [0, 1, 0, 2, 0], [2, 2, 1, 2, 2])],
        ["hallucinated", "1", "11.1% (1/9)\n" + span_of(1, 9, [0, 0, 1, 0, 0], [2, 2, 1, 2, 2])],
        ["missing required", "1", "11.1% (1/9)\n" + span_of(1, 9, [0, 0, 1, 0, 0], [2, 2, 1, 2, 2])]]
    text = render_text(report, width=80)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    # one panel each: every column header on the header line
    assert any(all(c in line for c in ("slice", "rung", "scored", "req", "args right", "95% CI", "not scored"))
               for line in lines)
    assert any(all(c in line for c in ("tool: parameter", "rung", "error", "rows", "of tool's calls", "req"))
               for line in lines)
    table = {t.key: t for t in report.tables}
    accuracy = {row[1]: row for row in table["arguments"].rows}
    assert accuracy["1. hosted"][2:5] == ["9", "5", "55.6% (5/9)"]
    assert accuracy["2. offline"][4:6] == ["NOT JUDGED", ""]  # nothing scored: never 0%
    errors = [row[:1] + row[2:5] for row in table["parameter-errors-existing"].rows]
    assert errors[0] == ["refund: reason", "wrong value", "3", "42.9% (3/7)\n" + span_of(3, 7, [0, 1, 0, 2])]
    assert {(r[0], r[1]) for r in errors} == {("refund: reason", "wrong value"),
                                              ("refund: order_id", "missing required"),
                                              ("refund: code", "hallucinated")}  # extra_allowed is free
    tools = {row[0]: row for row in table["tool-arguments-existing"].rows}
    assert tools["refund"][2:] == ["8", "12.5% (1/8)", "57.1% (4/7)\n" + span_of(4, 7, [0, 1, 1, 2])]
    assert tools["track_shipment"][3:5] == ["50.0% (2/4)", "0.0% (0/2)\n" + span_of(0, 2, [0], [2])]
    assert "arguments not scored" not in text
    markdown, page = render_markdown(report), render_html(report)
    for title in ("Argument accuracy by slice and rung", "Per-parameter errors, slice existing",
                  "Kinds of argument error by slice and rung",
                  "Tool right, arguments wrong, slice existing"):
        assert title in markdown and title in page


def table_rows(report, key: str) -> list[list[str]]:
    return next(t for t in report.tables if t.key == key).rows


def span_of(k: int, n: int, per_request: list[int], trials: list[int] | None = None) -> str:
    trials = trials or [2, 2, 1, 2]
    interval = clustered_wilson_interval(per_request, trials)
    assert sum(per_request) == k and sum(trials) == n
    return f"{100 * interval.low:.1f}–{100 * interval.high:.1f}"


def test_a_run_without_scored_arguments_says_so_once_and_prints_no_argument_table():
    run = KnownRun(arms=("offline",), seeds=2)
    run.add([selection_row(r, "refund", True, arm="offline", seed=s) for r in ("q0", "q1") for s in (1, 2)])
    report = build_report(run.finish(), RUN)
    assert not [t for t in report.tables if t.key == "arguments" or "argument" in t.title.lower()]
    for text in (render_text(report, width=80), render_markdown(report), render_html(report)):
        assert text.count("arguments not scored: no arm sent arguments") == 1


def test_calls_with_arguments_on_requests_expecting_none_say_there_are_no_expected_arguments():
    run = KnownRun(arms=("hosted",), seeds=2)
    run.add([selection_row(r, "refund", True, arm="hosted", seed=s, arguments='{"order_id": "NW-1"}')
             for r in ("q0", "q1") for s in (1, 2)] + [selection_row("q2", "refund", False, arm="hosted")])
    report = build_report(run.finish(), RUN)
    assert not [t for t in report.tables if "argument" in t.title.lower()]
    text = render_text(report, width=80)
    assert text.count("arguments not scored: no expected arguments (4 calls of the expected") == 1


def test_long_names_wrap_in_the_tool_column_instead_of_splitting_the_tables():
    tool, parameter = "corporate_finance.calculate_YOY_growth_rate_of_the_company", "allele_frequency_of_the_dominant"
    run = KnownRun(arms=("hosted",), seeds=1)
    run.add([scored(f"q{i}", 1, [(parameter, "wrong_type" if i % 2 else "right")], "hosted", 1, tool)
             for i in range(6)])
    text = render_text(build_report(run.finish(), RUN), width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    for title in ("Argument accuracy by slice", "Per-parameter errors", "Tool right, arguments wrong"):
        assert title in text
    assert " of 2)" not in text.split("Top 5 confused pairs")[1]  # no argument table split into panels
    assert "50.0% (3/6)" in text and parameter in text


def test_per_tool_argument_accuracy_across_rungs_and_its_paired_change():
    """The second hosted arm gets q3's arguments right on both seeds: refund 3/7 -> 5/7, one request better;
    the offline arm sends no arguments: NOT JUDGED."""
    run = KnownRun(arms=("hosted", "hosted-new", "offline"), comparisons=[("hosted", "hosted-new")], seeds=2)
    run.add(arm_rows("hosted", 1))
    fixed = arm_rows("hosted-new", 2)
    for row in fixed:
        if row["request_id"] == "q3":
            row.update(arguments_correct=True, argument_outcomes=[{"parameter": "order_id", "outcome": "right"}])
    run.add(fixed)
    run.add([selection_row(r, "refund", True, arm="offline", rung=3, seed=s) for r in ("q0", "q1") for s in (1, 2)])
    report = build_report(run.finish(), RUN)
    levels = {(x.arm, x.tool): x for x in report.figures.arguments.tools}
    rows = {row[0]: row for row in table_rows(report, "argument-tools-existing-1")}
    assert rows["refund"][1] == "4/4/0"
    assert rows["refund"][2].startswith("42.9% 3/7\n" + interval_text(levels[("hosted", "refund")].accuracy))
    assert rows["refund"][3].startswith("71.4% 5/7\n" + interval_text(levels[("hosted-new", "refund")].accuracy))
    assert rows["refund"][4] == "NOT JUDGED" and rows["track_shipment"][4] == ""  # none scored / no rows
    [change] = table_rows(report, "argument-changes-hosted-hosted-new-existing")  # track_shipment did not move
    paired = next(c.paired for c in report.figures.arguments.changes if c.tool == "refund")
    assert change[:3] == ["refund", "4", "+28.6"] and change[4] == "0 / 1"
    assert change[3] == change_span(paired.change) and paired.change.low < 0 < paired.change.high
    assert change[6] == "could be chance"  # the interval holds 0
    text = render_text(report, width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "Per-tool argument accuracy, slice existing" in text and "Per-tool argument changes" in text
