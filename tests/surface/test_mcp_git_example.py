"""The second bundled MCP example (tasksets/mcp_git): mcp-server-git from PyPI, pinned in the project's
lock, every task in a fresh Git repository built from its fixtures; the offline baseline agent fills repository
paths and ids from the task's fixtures, never a path from the request's text; a call it made without an
argument it could not fill is counted per argument in the report, and an arm whose task runs made no other call
is NOT JUDGED, never a measured 0%."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pytest

from flows.cli import main
from flows.exit_codes import EXIT_NOT_JUDGED
from schemas.catalogue import ToolSpec
from schemas.surface.criteria import SurfaceCriteria
from tasks.report.judge import judge
from tasks.report.render import render_markdown
from tasks.surface.agent_loop import run_task
from tasks.surface.baseline_agent import BaselineAgent, fill_arguments
from tasks.surface.figures import load_surface_figures
from tasks.surface.gates import JUDGES, task_runs_not_carried_out
from tasks.surface.load_surface import load_surface
from tasks.surface.load_tasks import freeze_task_version, frozen_differs, load_task_version
from tasks.surface.mcp_backend import close_pools, pool_for
from tasks.surface.tables import build_surface_report, stop_table
from tests.factories import ROOT
from tests.surface.known_task_rows import RUN, KnownTaskRun, call_row, run_row

FOLDER = ROOT / "tasksets" / "mcp_git"
SERVER = ROOT / ".venv" / "bin" / "mcp-server-git"
REPO_FIXTURES = {"files": {"repo/.git/HEAD": "ref: refs/heads/main\n", "repo/README.md": "# x\n"}}


def tool(name: str, properties: dict, required: list[str]) -> ToolSpec:
    return ToolSpec(name=name, description=name, parameters={"type": "object", "properties": properties,
                                                               "required": required})


STATUS = tool("git_status", {"repo_path": {"type": "string"}}, ["repo_path"])
DIFF = tool("git_diff", {"repo_path": {"type": "string"}, "target": {"type": "string"}}, ["repo_path", "target"])


def test_the_baseline_fills_repo_path_with_the_fixtures_repository_never_the_request():
    request = "Is the working tree of the invoicer clean?"
    assert fill_arguments(STATUS, request, [], REPO_FIXTURES) == ({"repo_path": "repo"}, ())
    nested = {"files": {"work/app/.git/HEAD": "ref: refs/heads/main\n", "work/app/a.py": ""}}
    assert fill_arguments(STATUS, request, [], nested) == ({"repo_path": "work/app"}, ())
    # no repository in the fixtures and no path in the request: unfilled, not the request's text
    assert fill_arguments(STATUS, request, [], {"files": {"notes.txt": "x"}}) == ({}, ("repo_path",))
    # a path parameter the request names no path for is unfilled too (git_diff's target)
    assert fill_arguments(DIFF, "Diff main against the release branch", [], REPO_FIXTURES) == (
        {"repo_path": "repo"}, ("target",))


def test_an_id_parameter_gets_the_id_of_the_fixture_record_the_request_names():
    get = tool("get_customer", {"customer_id": {"type": "string"}}, ["customer_id"])
    fixtures = {"customers": {"C-17": {"id": "C-17", "name": "Globex", "city": "Lyon"},
                              "C-18": {"id": "C-18", "name": "Initech", "city": "Austin"}}}
    assert fill_arguments(get, "Which plan is Initech on?", [], fixtures) == ({"customer_id": "C-18"}, ())
    assert fill_arguments(get, "Which plan is Globex on?", [], fixtures) == ({"customer_id": "C-17"}, ())
    # no record shares a word with the request: an id is read, never invented
    assert fill_arguments(get, "Which plan is Hooli on?", [], fixtures) == ({}, ("customer_id",))
    # an id with a pattern is still read from the request only (the support desk's T-1234)
    ticket = tool("get_ticket", {"ticket_id": {"type": "string", "pattern": "^T-\\d{4}$"}}, ["ticket_id"])
    assert fill_arguments(ticket, "Close Globex's ticket", [], fixtures) == ({}, ("ticket_id",))


def _unfilled_call(task_id: str, index: int, arm: str, argument: str = "repo_path") -> dict:
    row = call_row(task_id, "git_status", index, arm=arm, valid=False)
    row["invalid_reason"] = f"the agent could not fill argument {argument}: 'repo_path' is a required property"
    return row


def test_calls_the_agent_could_not_fill_are_counted_and_their_arm_is_not_judged():
    """Arm C's 10 runs each made one call, every one without the repo_path it could not fill: the stop table says
    so per argument and C is NOT JUDGED (10 of 10 task runs not carried out), not 0% against A's 60%."""
    run = KnownTaskRun(arms={"A": {}, "C": {"surface_hash": "s1"}}, comparisons=[("A", "C", ["surface"])])
    for i in range(10):
        run.runs += [run_row(f"t{i:03d}", success=i < 6, n_calls=1), run_row(f"t{i:03d}", arm="C", rung=2, n_calls=1)]
        run.calls += [call_row(f"t{i:03d}", "git_status", 1), _unfilled_call(f"t{i:03d}", 1, "C")]
    run.calls.append(_unfilled_call("t000", 2, "A", "target"))  # one more in A: A's run t000 made a valid call too
    figures = load_surface_figures(run.finish(), RUN)
    assert [(r["arm"], r["argument"], r["calls"], r["runs"], r["runs_only_unfilled"])
            for r in figures.unfilled_arguments] == [("A", "target", 1, 1, 0), ("C", "repo_path", 10, 10, 10)]
    assert task_runs_not_carried_out(figures) == {"A": (0, 10), "C": (10, 10)}
    note = stop_table(figures).note
    assert "Calls failed because the agent could not fill argument target: A 1 (git_status; in 1 task runs)." in note
    assert "could not fill argument repo_path: C 10 (git_status; in 10 task runs)." in note
    assert "counted as not carried out (C 10 of 10)" in note
    report = build_surface_report(figures, None)  # the headline, which every report format prints
    assert ("Calls failed because the agent could not fill argument repo_path: C 10 (invalid, never executed; see "
            "How runs ended)") in render_markdown(report)
    criteria = SurfaceCriteria.model_validate({"name": "t", "gates": [
        {"name": "no-slice-drops", "kind": "success_drop", "max_drop_points": 10}]})
    verdict = judge(figures, criteria, JUDGES, not_carried_out=task_runs_not_carried_out(figures), items="task runs")
    assert verdict.status == "NOT JUDGED"
    assert verdict.gates[0].not_judged == {"C": "10 of 10 task runs could not be carried out"}


def test_the_broken_tool_gate_leaves_out_calls_the_agent_could_not_fill():
    """git_diff's calls in arm A all lack the target the agent could not fill: that measures the agent's missing
    input, not the tool, so the gate cannot judge git_diff in A (it read '100% invalid' as a broken tool). In arm
    B half of git_status's calls are unfilled and 1 of the 4 it could fill is invalid: 25%, not 50% + 12.5%."""
    run = KnownTaskRun(arms={"A": {}, "B": {}})
    for i in range(4):
        run.runs += [run_row(f"t{i:03d}", n_calls=2), run_row(f"t{i:03d}", arm="B", rung=2, n_calls=2)]
        row = _unfilled_call(f"t{i:03d}", 1, "A", "target")
        row["name"] = row["tool"] = "git_diff"
        run.calls += [row, call_row(f"t{i:03d}", "git_status", 2)]
        run.calls += [_unfilled_call(f"t{i:03d}", 1, "B"),
                      call_row(f"t{i:03d}", "git_status", 2, arm="B", valid=i != 0)]
    figures = load_surface_figures(run.finish(), RUN)
    counters = {(r["arm"], r["tool"]): r for r in figures.tool_counters}
    assert (counters[("A", "git_diff")]["unfilled"], counters[("A", "git_diff")]["invalid_rate_filled"]) == (4, None)
    assert counters[("B", "git_status")]["invalid_rate_filled"] == 0.25
    criteria = SurfaceCriteria.model_validate({"name": "t", "gates": [
        {"name": "no-broken-tool", "kind": "tool_invalid_rate", "max_rate": 0.2, "min_calls": 1, "arms": "all"}]})
    gate = judge(figures, criteria, JUDGES, items="task runs").gates[0]
    assert gate.status == "FAIL"
    assert gate.not_judged == {"A git_diff": "every one of its 4 calls lacked an argument the agent could not fill"}
    assert any("B git_status: 25.0% invalid (1/4 calls; 4 more without an argument the agent could not fill" in line
               for line in gate.evidence)


def _generator():
    spec = importlib.util.spec_from_file_location("generate_mcp_git_tasks", FOLDER / "generate_tasks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_files_are_what_the_generator_writes_and_the_version_is_frozen():
    generator = _generator()
    for relative, text in generator.build().items():
        assert (FOLDER / relative).read_text() == text, f"{relative}: run tasksets/mcp_git/generate_tasks.py"
    assert frozen_differs(FOLDER, "t1", generator.build(), ["repo"]) is None
    version = load_task_version(FOLDER, "t1")
    assert 20 <= len(version.tasks) <= 40 and version.manifest.counts_by_slice == {"changes": 9, "history": 19}


@pytest.mark.slow
def test_every_task_gets_a_fresh_repository_on_the_real_server():
    """On the PyPI server (installed by make install): a commit made in one task's repository is not in the next
    task's, though one warm server instance serves both; the baseline passes repo_path 'repo' on every call."""
    assert SERVER.is_file(), "mcp-server-git is not installed: make install"
    surface = load_surface(FOLDER, "git")
    version = load_task_version(FOLDER, "t1")
    tasks = {t.id: t for t in version.tasks}
    agent = BaselineAgent("bm25", {})
    try:
        outcomes = [run_task(agent, surface, tasks[i], version.fixtures(tasks[i]), surface.specs, "")
                    for i in ("commit-0", "log-last-1", "commit-0")]
        assert pool_for(surface.backend).starts == 1
    finally:
        close_pools()
    committed, log, again = outcomes
    assert committed.success and [c.tool for c in committed.calls] == ["git_commit"] and not committed.calls[0].error
    assert log.success and "Add the TODO list" not in log.final_reply  # the commit did not leak
    assert "Render invoices as PDF" in log.final_reply and "Start the invoicer" in log.final_reply
    def made(outcome):
        return [(c.name, c.arguments, c.error, c.error_detail) for c in outcome.calls]

    assert again.success and made(again) == made(committed)  # the same start: the same run
    assert again.final_reply == committed.final_reply  # the same commit hash: the same repository
    assert all(json.loads(c.arguments)["repo_path"] == "repo" for o in outcomes for c in o.calls)


@pytest.mark.slow
def test_the_four_arm_experiment_runs_end_to_end_offline(tmp_path, capsys, monkeypatch):
    """`tooleval tasks run` on the bundled experiment, offline, on the real server: four arms of real figures, the
    calls the baseline could not fill an argument for counted, and no state folder left behind."""
    monkeypatch.setenv("TOOLEVAL_WAREHOUSE", str(tmp_path / "warehouse"))
    code = main(["tasks", "run", str(FOLDER / "experiments" / "four_arms.yaml")])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    for arm in ("A-plain", "B-careful", "C-focused", "D-both"):
        assert f"{arm}: surface git" in out
    assert "could not fill argument target" in out
    (report,) = (tmp_path / "warehouse" / "reports").glob("*/report.md")
    assert "Calls failed because the agent could not fill argument target: A-plain 15" in report.read_text()
    assert "A-plain -> C-focused" in out and "C-focused -> D-both" in out


@pytest.mark.slow
def test_an_arm_whose_calls_all_lack_an_argument_is_not_judged_on_the_real_server(tmp_path, capsys, monkeypatch):
    """A surface offering only git_diff, whose target the baseline cannot fill: every call of that arm is invalid
    for the argument it could not fill, so the arm is NOT JUDGED (exit 4), never a measured 0% beside arm A."""
    folder = tmp_path / "tasksets" / "mcp_git"  # the surfaces start {taskset_dir}/../../.venv/bin/mcp-server-git
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("t1.manifest.json", "generate_tasks.py"))
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    (folder / "surfaces" / "diff_only.yaml").write_text(
        (folder / "surfaces" / "git_focused.yaml").read_text().split("transform:")[0].replace(
            "name: git_focused", "name: diff_only") + "transform:\n  include: [git_diff]\n")
    kept = [line for line in (folder / "t1.jsonl").read_text().splitlines()
            if json.loads(line)["id"] in ("diff-branch-0", "diff-branch-1", "log-last-1", "status-clean-0")]
    (folder / "t1.jsonl").write_text("\n".join(kept) + "\n")
    freeze_task_version(folder, "t1", ["history"])
    (folder / "experiments" / "diff_only.yaml").write_text(
        "name: diff-only\ntaskset: ..\nversion: t1\nseeds: [1]\ndeclared: {few_seeds: the baseline is deterministic}\n"
        "criteria: drops.yaml\ndefaults: {agent: baseline, model: tooleval-baseline-bm25-1, prompt: plain}\n"
        "arms:\n  - {name: A, surface: git}\n  - {name: D, surface: diff_only}\ncomparisons:\n  - {from: A, to: D}\n")
    (folder / "experiments" / "drops.yaml").write_text(
        "name: drops\ngates:\n  - {name: no-drops, kind: success_drop, max_drop_points: 5}\n")
    monkeypatch.setenv("TOOLEVAL_WAREHOUSE", str(tmp_path / "warehouse"))
    code = main(["tasks", "run", str(folder / "experiments" / "diff_only.yaml")])
    out = capsys.readouterr().out
    assert code == EXIT_NOT_JUDGED, out
    words = " ".join(out.split())
    assert "NOT JUDGED D: 4 of 4 task runs could not be carried out" in words
    assert "Calls failed because the agent could not fill argument target: A 1, D 4" in words
    rows = {line.split()[2]: line for line in out.splitlines() if line.startswith("t1       history")}
    assert "NOT JUDGED (0/4)" in rows["D"] and "NOT JUDGED" not in rows["A"]  # D is no measured 0%
