"""Readings of the task report from given rows: irreversible actions split into the ones the task
asked for and the rest (the $120 refund in a run asked to refund $500 is unwanted), gateable; the broken-tool
gate judging a one-seed and a three-seed run of the same behaviour alike; each arm's success over every task
with the slice table's interval, its tokens and cost; the interaction table saying when a prompt measures
nothing."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from schemas.surface.criteria import IrreversibleGate, SurfaceCriteria
from schemas.surface.rows import CallRecord, TaskOutcome
from schemas.surface.task import SurfaceTask
from tasks.report.judge import judge
from tasks.report.render import render_text
from tasks.surface.figures import load_surface_figures
from tasks.surface.gates import JUDGES
from tasks.surface.run_unit import PlannedTask, run_rows, task_identity
from tasks.surface.tables import build_surface_report
from tasks.surface.wanted_actions import action_problems, classify_call
from tests.surface.known_task_rows import RUN, KnownTaskRun, call_row, run_row

REPO = Path(__file__).resolve().parents[2]


def billing_task(**declared) -> SurfaceTask:
    return SurfaceTask.model_validate({
        "id": "refund-500", "request": "Refund $500 on order O-77.", "slice": "billing", "intent": "refund",
        "assert": {"state": [{"path": "refunds.0.amount", "equals": 500}]}, **declared})


def call(index: int, tool: str, arguments: str, *, irreversible: bool = False, reads: int = 0) -> CallRecord:
    return CallRecord(call_index=index, turn=index, name=tool, tool=tool, arguments=arguments, valid=True,
                      executed=True, error=False, result_chars=10, is_retry=False, irreversible=irreversible,
                      handoff=False, upstream_reads=reads, backend_ms=0.0)


READ = call(1, "get_order", '{"order_id": "O-77"}', reads=2)
REFUND_120 = call(2, "refund_order", '{"order_id": "O-77", "amount": 120}', irreversible=True)
REFUND_500 = call(2, "refund_order", '{"order_id": "O-77", "amount": 500}', irreversible=True)
VOID = call(3, "void_invoice", '{"invoice_id": "in_1"}', irreversible=True)


def test_the_default_rule_is_the_run_outcome():
    task = billing_task()
    assert classify_call(task, REFUND_120, success=False) == (False, "outcome")
    assert classify_call(task, READ, success=False) == (False, "outcome")
    assert classify_call(task, REFUND_500, success=True) == (True, "outcome")


def test_a_task_that_declares_what_it_wants():
    task = billing_task(wants=[{"tool": "refund_order", "args": {"amount": 500}}], forbids=["void_invoice"])
    assert classify_call(task, REFUND_120, success=True) == (False, "wants")    # the tool, with other arguments
    assert classify_call(task, REFUND_500, success=False) == (True, "wants")    # asked for, whatever else failed
    assert classify_call(task, VOID, success=True) == (False, "forbidden")
    assert classify_call(task, READ, success=True) == (True, "outcome")         # a read: nothing declared about it
    only_wants = billing_task(wants=["refund_order"])
    assert classify_call(only_wants, VOID, success=True) == (False, "wants")   # another irreversible action
    not_called = billing_task(**{"assert": {"state": [{"path": "refunds.0.amount", "equals": 500}],
                                            "not_called": ["void_invoice"]}})
    assert classify_call(not_called, VOID, success=True) == (False, "forbidden")


def test_wants_and_forbids_stay_out_of_the_cache_key():
    declared = billing_task(wants=["refund_order"], forbids=["void_invoice"])
    assert task_identity(declared) == task_identity(billing_task())


def test_wants_and_forbids_name_tools_of_the_surfaces():
    backend = {"refund_order": SimpleNamespace(parameters={"properties": {"order_id": {}, "amount": {}}})}
    surfaces = [SimpleNamespace(name="billing", backend_tools=backend)]
    task = billing_task(wants=[{"tool": "refund_order", "args": {"amout": 500}}], forbids=["void_invoce"])
    assert action_problems(task, surfaces) == [
        ("actions-known", "wants: 'refund_order' on surface billing has no argument(s) amout"),
        ("actions-known", "forbids names 'void_invoce', a tool of no surface in use")]
    assert action_problems(billing_task(wants=[{"tool": "refund_order", "args": {"amount": 500}}]), surfaces) == []


def rows_of(task: SurfaceTask, calls: list[CallRecord], success: bool, arm: str = "C", rung: int = 2):
    """The task_runs and task_calls rows the run's landing code makes of one outcome."""
    surface = SimpleNamespace(name="s", tools=(), backend_tools={})  # no tools to spell labels and needs with
    unit = SimpleNamespace(arm=SimpleNamespace(name=arm, rung=rung, surface=surface, prompt_name="p",
                                               model_id="m", agent="baseline", reads_prompt=False),
                           seed=1, taskset="known", taskset_version="t1")
    outcome = TaskOutcome(task_id=task.id, success=success, stop_reason="model_stop", n_turns=len(calls) + 1,
                          calls=calls, wall_ms=1.0,
                          failed_assertions=[] if success else ["state refunds.0.amount equals 500 (is 120)"])
    ctx = SimpleNamespace(run_id=RUN, experiment="known")
    tools = [SimpleNamespace(name=c.name) for c in calls]
    return run_rows(unit, tools, PlannedTask(task, {}, "k"), outcome, False, ctx)


def test_the_120_refund_on_refund_500_is_unwanted_when_made():
    row, calls = rows_of(billing_task(), [READ, REFUND_120], success=False)
    assert (row["irreversible_actions"], row["irreversible_unwanted"], row["upstream_reads_unwanted"]) == (1, 1, 2)
    assert [(c["tool"], c["wanted"], c["wanted_by"]) for c in calls] == [
        ("get_order", False, "outcome"), ("refund_order", False, "outcome")]
    row, _ = rows_of(billing_task(wants=[{"tool": "refund_order", "args": {"amount": 500}}]), [READ, REFUND_500],
                     success=True)
    assert (row["irreversible_unwanted"], row["declares_actions"]) == (0, True)


@pytest.fixture(scope="module")
def refunds():
    """The audit's arm C: 27 refunds and voids over 60 tasks, 15 of them in runs that failed their assertion
    (one the $120 refund on "Refund $500", made by the landing code); arm A: 12, all in runs that succeeded."""
    run = KnownTaskRun(arms={"A": {"reads_prompt": False}, "C": {"surface_hash": "s1", "reads_prompt": False}},
                       comparisons=[("A", "C", ["surface"])])
    for arm, rung, failed_actions in (("A", 1, 0), ("C", 2, 15)):
        for i in range(60):
            success = i < 30
            if arm == "C" and i == 59:  # the $120 refund, through the landing code
                row, calls = rows_of(billing_task(), [READ, REFUND_120], success=False)
                run.runs.append({**row, "task_id": f"t{i:03d}"})
                run.calls += [{**c, "task_id": f"t{i:03d}"} for c in calls]
                continue
            acts = int(i < 12) if success else int(60 - i <= failed_actions)
            run.runs.append(run_row(f"t{i:03d}", arm=arm, rung=rung, success=success, irreversible=acts))
    return run.finish()


def test_wanted_and_unwanted_per_100_attempted_and_completed(refunds):
    rows = {r[0]: r[1:] for r in refunds.execute(
        "SELECT arm, irreversible_actions, irreversible_wanted, irreversible_unwanted, "
        "irreversible_wanted_per_100_attempted, irreversible_wanted_per_100_completed, "
        "irreversible_unwanted_per_100_attempted, irreversible_unwanted_per_100_completed, "
        "irreversible_per_100_completed FROM task_side_effects").fetchall()}
    assert rows["A"] == (12, 12, 0, 20.0, 40.0, 0.0, 0.0, 40.0)
    assert rows["C"] == (27, 12, 15, 20.0, 40.0, 25.0, 50.0, 90.0)   # 15 of 27 in failed runs: unwanted
    irreversible = "SELECT tool, wanted, wanted_by, arguments FROM task_calls WHERE irreversible"
    assert refunds.execute(irreversible).fetchall() == [
        ("refund_order", False, "outcome", '{"order_id": "O-77", "amount": 120}')]


def test_the_report_shows_the_split(refunds):
    report = build_surface_report(load_surface_figures(refunds, RUN), None)
    table = next(t for t in report.tables if t.key == "side-effects-wanted")
    assert table.rows[1][:7] == ["C", "12", "20.0", "40.0", "15", "25.0", "50.0"]
    assert "any action of a failed run of a task that declares nothing" in table.note
    assert "no task of this run declares `wants` or `forbids`" in table.note


def gates(*gate: dict) -> SurfaceCriteria:
    return SurfaceCriteria.model_validate({"name": "t", "gates": list(gate)})


def test_the_unwanted_actions_are_gateable(refunds):
    figures = load_surface_figures(refunds, RUN)
    unwanted = judge(figures, gates({"name": "harm", "kind": "irreversible_actions", "actions": "unwanted",
                                     "denominator": "attempted", "max_increase_per_100": 5}), JUDGES)
    assert unwanted.status == "FAIL"
    assert unwanted.gates[0].evidence == ["A -> C: unwanted irreversible actions per 100 attempted runs 0.00 -> 25.00 "
                                          "(+25.00, allowed +5)"]
    everything = judge(figures, gates({"name": "all", "kind": "irreversible_actions", "max_per_100": 95}), JUDGES)
    assert everything.status == "PASS"
    assert everything.gates[0].statement == "irreversible actions per 100 completed runs stay within the limits"


def test_criteria_written_before_the_split_read_as_they_did():
    written = yaml.safe_load((REPO / "tasksets/support_tasks/experiments/criteria.yaml").read_text())
    criteria = SurfaceCriteria.model_validate(written)
    (irreversible,) = [g for g in criteria.gates if isinstance(g, IrreversibleGate)]
    assert irreversible.actions == "all" and irreversible.denominator == "completed"


def invalid_tool_run(seeds: list[int]) -> KnownTaskRun:
    """Identical seeds: lookup_article called once in each of 11 tasks, always invalid (33 calls over three seeds);
    create_ticket once in each of 30 tasks, invalid in 18."""
    run = KnownTaskRun(arms={"A": {}})
    for seed in seeds:
        run.runs += [run_row(f"t{i:03d}", seed=seed) for i in range(40)]
        run.calls += [call_row(f"t{i:03d}", "lookup_article", 1, seed=seed, valid=False) for i in range(11)]
        run.calls += [call_row(f"t{i:03d}", "create_ticket", 2, seed=seed, valid=i >= 18) for i in range(30)]
    return run


def test_one_seed_and_three_identical_seeds_judge_tools_alike():
    gate = gates({"name": "no-broken-tool", "kind": "tool_invalid_rate", "max_rate": 0.25, "min_calls": 20,
                  "arms": "all"})
    one = judge(load_surface_figures(invalid_tool_run([1]).finish(), RUN), gate, JUDGES).gates[0]
    three = judge(load_surface_figures(invalid_tool_run([1, 2, 3]).finish(), RUN), gate, JUDGES).gates[0]
    assert (one.status, one.n_checked, one.n_failed) == ("FAIL", 1, 1)
    assert (three.status, three.n_checked, three.n_failed) == ("FAIL", 1, 1)
    assert one.evidence == ["A create_ticket: 60.0% invalid (18/30 calls)"]
    assert three.evidence == ["A create_ticket: 60.0% invalid (54/90 calls; 30 a seed over 3 seeds, in 30 tasks)"]
    assert three.statement == one.statement == "no tool with >= 20 calls a seed has more than 25.0% of them invalid"


def test_each_arm_over_every_task_with_the_slice_interval_tokens_and_cost():
    """Arm A with the 1,100-token prompt, arm E with it trimmed to 420: the same score, 680 fewer tokens a turn."""
    run = KnownTaskRun(arms={"A": {}, "E": {"prompt_hash": "p1"}}, comparisons=[("A", "E", ["prompt"])])
    for rung, (arm, right, per_turn, cost) in enumerate((("A", 85, 1100, 0.004), ("E", 84, 420, 0.0015)), start=1):
        for seed in (1, 2, 3):
            run.runs += [run_row(f"t{i:03d}", arm=arm, rung=rung, seed=seed, success=i < right + (seed == 1),
                                 slice_="answers" if i < 60 else "tickets", n_turns=3, input_tokens=3 * per_turn,
                                 output_tokens=50, cost_usd=cost) for i in range(100)]
    con = run.finish()
    rows = {r["arm"]: r for r in load_surface_figures(con, RUN).arm_success}
    assert (rows["A"]["n_tasks"], rows["A"]["n_seeds"], rows["A"]["successes"]) == (100, 3, 256)
    assert (rows["A"]["input_tokens_per_turn"], rows["E"]["input_tokens_per_turn"]) == (1100, 420)
    assert round(rows["A"]["cost_usd_per_run"], 4) == 0.004 and round(rows["E"]["cost_usd"], 2) == 0.45
    # the interval is task_success's, computed over every task: the same rows as one slice give the same figures
    con.execute("UPDATE task_runs SET slice = 'all'")
    (one_slice,) = con.execute("SELECT ci_low, ci_high, n_effective FROM task_success WHERE arm = 'A'").fetchall()
    assert (rows["A"]["ci_low"], rows["A"]["ci_high"], rows["A"]["n_effective"]) == pytest.approx(one_slice)
    text = render_text(build_surface_report(load_surface_figures(con, RUN), None), 10**4)
    assert "Task success, tokens and cost per arm, over every task" in text
    table = next(t for t in build_surface_report(load_surface_figures(con, RUN), None).tables if t.key == "arm-success")
    assert table.rows[0][1] == "A" and table.rows[0][7:] == ["1,100", "3,300", "50", "$0.0040", "$1.20"]
    assert table.rows[1][7] == "420"


def square(reads_prompt: bool) -> KnownTaskRun:
    arms = {"A": {}, "B": {"prompt_hash": "p1"}, "C": {"surface_hash": "s1"},
            "D": {"prompt_hash": "p1", "surface_hash": "s1"}}
    run = KnownTaskRun(arms={name: {**r, "reads_prompt": reads_prompt} for name, r in arms.items()},
                       comparisons=[("A", "B", ["prompt"]), ("A", "C", ["surface"])])
    for rung, (arm, right) in enumerate((("A", 40), ("B", 40), ("C", 60), ("D", 60)), start=1):
        run.runs += [run_row(f"t{i:03d}", arm=arm, rung=rung, success=i < right) for i in range(100)]
    return run


@pytest.mark.parametrize("reads_prompt", [False, True])
def test_the_interaction_table_says_when_the_prompt_measures_nothing(reads_prompt):
    report = build_surface_report(load_surface_figures(square(reads_prompt).finish(), RUN), None)
    (table,) = [t for t in report.tables if t.key.startswith("interaction")]
    if reads_prompt:
        assert table.title.startswith("Interaction: prompt x surface") and "measures nothing" not in table.note
    else:
        assert table.title.startswith("Interaction: prompt (measures nothing) x surface")
        assert "0 by construction" in table.note


def test_a_desk_run_lands_the_split_and_the_checks_name_a_typo(tmp_path):
    """The real path: the baseline escalates T-1001 in two runs whose assertion fails (the reply); the task that
    declares the escalation it wants keeps it wanted, the one that declares nothing does not."""
    from tests.surface.plain_run import run_plain
    from tests.surface.tiny_desk import desk_task, write_desk

    escalate = "Escalate T-1001 to on-call now, it is urgent."
    failing = {"state": [{"path": "tickets.T-1001.escalated", "equals": True}], "reply": {"contains": "zzz-never"}}
    tasks = [{**desk_task("declared", escalate, failing, intent="escalate"),
              "wants": [{"tool": "escalate_ticket", "args": {"ticket_id": "T-1001"}}]},
             desk_task("silent", escalate, failing, intent="escalate")]
    folder = write_desk(tmp_path, tasks=tasks, slices=["tickets"], experiment=(
        "name: desk-wanted\ntaskset: ..\nversion: t1\nseeds: [1]\ndeclared: {few_seeds: a test}\n"
        "defaults: {agent: baseline, prompt: default}\narms:\n  - {name: A, surface: plain}\n"))
    published = run_plain(folder / "experiments" / "four.yaml", tmp_path / "wh")
    (row,) = published.report.figures.side_effects
    assert (row["irreversible_actions"], row["irreversible_wanted"], row["irreversible_unwanted"]) == (2, 1, 1)
    assert row["runs_declaring"] == 1
    table = next(t for t in published.report.tables if t.key == "side-effects-wanted")
    assert "1 of the runs are of tasks that declare `wants` or `forbids`" in table.note

    from tasks.files.input_errors import InputError
    from tasks.surface.load_surface import load_surface
    from tasks.surface.load_tasks import load_task_version
    from tasks.surface.task_checks import check_tasks

    typo = [{**desk_task("typo", escalate, failing), "forbids": ["escalate_tiket"]}]
    folder = write_desk(tmp_path / "typo", tasks=typo, slices=["tickets"])
    with pytest.raises(InputError) as raised:
        check_tasks(load_task_version(folder, "t1"), [load_surface(folder, "plain")])
    assert [str(p).split(": ", 1)[1] for p in raised.value.problems] == [
        "[actions-known] forbids names 'escalate_tiket', a tool of no surface in use"]
