"""An arm that cannot be judged (most of its rows could not be carried out: the selector failed after its retries)
is NOT JUDGED, by name, in every selection gate that applies to it; a comparison of two error-ridden arms is not a
measured 0.0 change; and every format says so."""

from __future__ import annotations

from flows.exit_codes import EXIT_GATE_FAILED, EXIT_NOT_JUDGED, verdict_exit_code
from schemas.criteria import GateResult, Verdict
from schemas.selection.criteria import SelectionCriteria
from tasks.report.judge import judge
from tasks.report.render import render_html, render_markdown, render_text
from tasks.report_types import Report
from tasks.selection.figures import load_figures
from tasks.selection.gates import JUDGES, rows_not_carried_out
from tests.factories.rows import KnownRun, selection_row

WEIGHTS = {"t": 1.0}


def dead_server_run(errors: int, n: int = 24):
    """Two arms on the same 24 requests: base right on every one; cand's first ``errors`` rows are errors (a
    server that died), the rest right."""
    run = KnownRun(arms=["base", "cand"], comparisons=[("base", "cand")], weights=WEIGHTS)
    run.add([selection_row(f"r{i:02d}", "t", True) for i in range(n)])
    run.add([selection_row(f"r{i:02d}", "t", True, arm="cand", rung=2, outcome="error" if i < errors else None)
             for i in range(n)])
    return load_figures(run.finish(), "run1")


def criteria(*gates: dict) -> SelectionCriteria:
    return SelectionCriteria.model_validate({"name": "t", "gates": list(gates)})


GATES = (
    {"name": "busy-tools-hold", "kind": "tool_drop", "min_volume_share": 0.03, "max_drop_points": 10},
    {"name": "w-drop", "kind": "weighted_drop", "max_drop_points": 10},
    {"name": "w-floor", "kind": "weighted_floor", "min_accuracy": 0.5, "arms": "all"},
    {"name": "floors", "kind": "slice_floor", "floors": {"existing": 0.5}, "arms": "all"},
)


def test_an_arm_whose_rows_mostly_errored_is_not_judged_by_name_in_every_gate():
    figures = dead_server_run(errors=23)
    verdict = judge(figures, criteria(*GATES), JUDGES, not_carried_out=rows_not_carried_out(figures), items="rows")
    assert verdict.status == "NOT JUDGED" and verdict_exit_code(verdict) == EXIT_NOT_JUDGED
    assert {g.name: g.status for g in verdict.gates} == dict.fromkeys([g["name"] for g in GATES], "NOT JUDGED")
    for gate in verdict.gates:
        assert gate.not_judged == {"cand": "23 of 24 rows could not be carried out"}
        assert "NOT JUDGED cand: 23 of 24 rows could not be carried out" in gate.evidence
    # the first screen: which arm, and how many of each arm's rows could not be carried out
    assert "could not judge cand" in verdict.reason and "rows that could not be carried out: cand 23 of 24" \
        in verdict.reason


def test_a_real_failure_stays_a_failure_and_still_names_the_arm_not_judged():
    figures = dead_server_run(errors=23)
    verdict = judge(figures, criteria(*GATES, {"name": "clean", "kind": "failure_rate", "max_rate": 0.02}), JUDGES)
    assert verdict.status == "FAIL" and verdict_exit_code(verdict) == EXIT_GATE_FAILED
    assert verdict.reason.startswith("1 of 5 gates failed; 4 of 5 gates could not judge cand")


def test_a_few_errors_leave_the_arm_judged():
    figures = dead_server_run(errors=3)
    verdict = judge(figures, criteria(*GATES), JUDGES, not_carried_out=rows_not_carried_out(figures), items="rows")
    assert {g.status for g in verdict.gates} == {"FAIL", "PASS"} and not any(g.not_judged for g in verdict.gates)
    assert verdict.reason.endswith("rows that could not be carried out: cand 3 of 24")


def not_judged_report() -> Report:
    gate = GateResult(name="busy-tools-hold", kind="tool_drop", status="NOT JUDGED", statement="no busy tool drops",
                      evidence=["NOT JUDGED cand: 23 of 24 rows could not be carried out"],
                      not_judged={"cand": "23 of 24 rows could not be carried out"})
    verdict = Verdict(run_id="run1", status="NOT JUDGED", gates=[gate],
                      reason="1 of 1 gates could not judge cand (see below); rows that could not be carried out: "
                             "cand 23 of 24")
    return Report(run_id="run1", headline=[], verdict=verdict)


def test_the_markdown_names_a_not_judged_gate_once_and_says_what_the_terminal_and_html_say():
    report = not_judged_report()
    markdown = render_markdown(report)
    assert "- **NOT JUDGED** busy-tools-hold: no busy tool drops" in markdown
    assert "JUDGED JUDGED" not in markdown.replace("**", "")
    reason = "rows that could not be carried out: cand 23 of 24"
    assert reason in markdown and reason in render_text(report, width=200) and reason in render_html(report)
