"""Tool coverage per surface: which of the surface's tools the tasks need, which no task
touches, which the agent called though no task needs them, and what the tasks need that the surface does not
offer: the view task_tool_coverage on known rows, the needs as each surface spells them, and the report's
table and first-screen line on real runs (the tiny help desk's toolkit; the bundled MCP servers)."""

from __future__ import annotations

import textwrap
import re
from collections import Counter

import polars as pl
import pytest

from tasks.surface.figures import load_surface_figures
from tasks.surface.load_surface import load_surface
from tasks.surface.load_tasks import load_task_version
from tasks.surface.tables import build_surface_report
from tasks.surface.tool_needs import forbidden_tools, needed_tools
from tests.docs_text import page
from tests.surface.known_task_rows import RUN, KnownTaskRun, call_row, run_row
from tests.surface.plain_run import run_plain
from tests.surface.tiny_desk import desk_task, write_desk

COLUMNS = ("tool", "offered", "tasks_needing", "n_tasks", "tasks_forbidding", "calls", "tasks_calling", "calls_not_needed",
           "tasks_calling_not_needed", "coverage")


def coverage(con, arm: str = "A") -> dict[str, tuple]:
    return {r[0]: r[1:] for r in con.execute(
        f"SELECT {', '.join(COLUMNS)} FROM task_tool_coverage WHERE arm = ? ORDER BY tool", [arm]).fetchall()}


def test_the_view_sets_the_catalogue_against_the_needs_and_the_calls():
    run = KnownTaskRun(arms={"A": {}, "B": {}})
    catalogue = ["a", "b", "c", "d", "e"]
    needs = {"t1": ["a"], "t2": ["a", "b"], "t3": ["z"]}  # z: needed, not offered
    forbids = {"t1": ["b", "e"], "t2": ["e"], "t3": []}  # e: a negative case only
    for seed in (1, 2):
        run.runs += [run_row(task, seed=seed) | {"tool_order": catalogue[::-1] if seed == 2 else catalogue,
                                                 "needed_tools": tools, "forbidden_tools": forbids[task]}
                     for task, tools in needs.items()]
        run.calls += [call_row("t1", "a", 1, seed=seed), call_row("t1", "c", 2, seed=seed),  # c: no task needs it
                      call_row("t2", "a", 1, seed=seed), call_row("t2", "b", 2, seed=seed),
                      call_row("t2", "b", 3, seed=seed, retry=True),
                      call_row("t3", "a", 1, seed=seed),  # a, in a task that does not need it
                      call_row("t3", "q", 2, seed=seed, valid=False)]  # q: a name the surface does not offer
    run.calls.append(call_row("t1", "d", 9, seed=1, skipped=True))  # over the budget: not a call that counts
    # arm B, another surface: only p.a offered, and its tasks' runs all failed before a call
    run.runs += [run_row(task, arm="B", rung=2, stop="surface_error") | {"tool_order": ["p.a"], "needed_tools": ["p.a"]}
                 for task in ("t1", "t2")]
    con = run.finish()
    assert coverage(con) == {
        "a": (True, 2, 3, 0, 6, 3, 2, 1, "needed"),
        "b": (True, 1, 3, 1, 4, 1, 0, 0, "needed"),
        "c": (True, 0, 3, 0, 2, 1, 2, 1, "called, not needed"),
        "d": (True, 0, 3, 0, 0, 0, 0, 0, "untouched"),
        "e": (True, 0, 3, 2, 0, 0, 0, 0, "negative case only"),
        "q": (False, 0, 3, 0, 2, 1, 2, 1, "not offered"),
        "z": (False, 1, 3, 0, 0, 0, 0, 0, "not offered"),
    }
    assert coverage(con, "B") == {"p.a": (True, 2, 2, 0, 0, 0, 0, 0, "needed")}
    assert con.execute("SELECT DISTINCT runs, runs_not_carried_out FROM task_tool_coverage WHERE arm = 'B'"
                       ).fetchall() == [(2, 2)]
    assert con.execute("SELECT DISTINCT surface, rung FROM task_tool_coverage WHERE arm = 'A'").fetchall() == [("s", 1)]
    # the query docs/surface/views.md gives for the tools no task exercises
    (query,) = [block for block in re.findall(r"```sql\n(.*?)```", page("surface/views.md"), re.S)
                if "task_tool_coverage" in block]
    assert con.execute(query).fetchall() == [("A", "d")]


def test_an_arm_whose_runs_failed_has_its_calls_not_measured_never_never_called():
    run = KnownTaskRun()
    run.runs = [run_row(f"t{i}", stop="surface_error") | {"tool_order": ["a", "b"], "needed_tools": ["a"]}
                for i in range(3)]
    report = build_surface_report(load_surface_figures(run.finish(), RUN), None)
    line = next(line for line in report.headline if line.startswith("coverage"))
    assert line == ("coverage, surface s (arm A): 1 of 2 tools needed by some task; 1 needed by none (calls not "
                    "measured): b; calls NOT MEASURED for A (3 of 3 task runs could not be carried out)")
    table = next(t for t in report.tables if t.key == "coverage-1")
    assert table.rows == [["a", "3 of 3", "0", "NOT MEASURED", "needed"],
                          ["b", "0 of 3", "0", "NOT MEASURED", "needed by none"]]
    assert "never" not in " ".join(" ".join(row) for row in table.rows)


def test_runs_landed_before_needs_were_recorded_read_not_known_never_untouched():
    run = KnownTaskRun(arms={"A": {}, "B": {}})
    for arm, rung in (("A", 1), ("B", 2)):
        run.runs += [run_row(f"t{i}", arm=arm, rung=rung) | {"tool_order": ["a", "b"], "needed_tools": ["a"]}
                     for i in range(2)]
    con = run.finish()
    # a warehouse from before the columns: create_tables added them without NOT NULL, null on its old rows
    for column in ("needed_tools", "forbidden_tools"):
        con.execute(f"ALTER TABLE task_runs ALTER COLUMN {column} DROP NOT NULL")
    con.execute("UPDATE task_runs SET needed_tools = NULL, forbidden_tools = NULL WHERE arm = 'A'")
    assert con.execute("SELECT arm, min(runs_without_needs), min(runs) FROM task_tool_coverage GROUP BY arm "
                       "ORDER BY arm").fetchall() == [("A", 2, 2), ("B", 0, 2)]
    report = build_surface_report(load_surface_figures(con, RUN), None)
    lines = [line for line in report.headline if line.startswith("coverage")]
    assert lines == ["coverage, surface s (arm A): NOT KNOWN: task runs landed before tooleval recorded what each "
                     "task needs (A 2 of 2); run the experiment again to read it",
                     "coverage, surface s (arm B): 1 of 2 tools needed by some task; 1 never exercised: b; needed "
                     "but never called: a"]
    assert [t.title for t in report.tables if t.key.startswith("coverage-")] == ["Tool coverage, surface s (arm B)"]


NEEDS_TASKS = [  # what each task needs, by hand: its required call, its wants, its intent when a tool
    desk_task("close-1", "Please close ticket T-1002.", {"tool": "close_ticket", "args": {"ticket_id": "T-1002"}},
              intent="close"),
    desk_task("close-2", "I'm ana@acme.example, close my ticket about the parcel late.",
              {"state": [{"path": "tickets.T-1003.status", "equals": "closed"}]}, intent="close_ticket"),
    desk_task("status-1", "What is the status of T-1001?",
              {"reply": {"contains": "open"}, "not_called": ["escalate_ticket"]}, slice_="questions",
              intent="get_ticket"),
    {**desk_task("escalate-1", "Escalate T-1001 to on-call now, it is urgent.",
                 {"state": [{"path": "tickets.T-1001.escalated", "equals": True}]}, intent="escalate"),
     "wants": ["escalate_ticket"]},
]
NEEDS = {"close-1": {"close_ticket"}, "close-2": {"close_ticket"}, "status-1": {"get_ticket"},
         "escalate-1": {"escalate_ticket"}}

NARROW = "name: narrow\ntoolkit: desk:Desk\ntransform:\n  include: [list_tickets, get_ticket, close_ticket]\n"


def desk_with_needs(tmp_path):
    folder = write_desk(tmp_path, NEEDS_TASKS, experiment=textwrap.dedent("""\
        name: desk-coverage
        taskset: ..
        version: t1
        seeds: [1, 2, 3]
        defaults: {agent: baseline}
        arms:
          - {name: A, surface: plain, prompt: default}
          - {name: B, surface: plain, prompt: careful}
          - {name: C, surface: prefixed, prompt: default}
          - {name: N, surface: narrow, prompt: default}
        comparisons:
          - {from: A, to: B}
          - {from: A, to: C}
        """))
    (folder / "surfaces" / "narrow.yaml").write_text(NARROW)
    return folder


def test_a_task_needs_its_tools_as_each_surface_offers_them(tmp_path):
    folder = desk_with_needs(tmp_path)
    tasks = {t.id: t for t in load_task_version(folder, "t1").tasks}
    plain, prefixed, narrow = (load_surface(folder, name) for name in ("plain", "prefixed", "narrow"))
    assert {i: needed_tools(t, plain) for i, t in tasks.items()} == {i: sorted(n) for i, n in NEEDS.items()}
    assert needed_tools(tasks["close-2"], prefixed) == ["desk.close_ticket"]  # the intent, spelled as offered
    assert needed_tools(tasks["escalate-1"], prefixed) == ["desk.escalate_ticket"]  # wants
    assert needed_tools(tasks["escalate-1"], narrow) == ["escalate_ticket"]  # not offered: its backend name
    assert needed_tools(tasks["close-1"], narrow) == ["close_ticket"]  # 'close' names no tool: not a need
    assert [forbidden_tools(tasks["status-1"], s) for s in (plain, prefixed, narrow)] == [  # its not_called
        ["escalate_ticket"], ["desk.escalate_ticket"], ["escalate_ticket"]]
    assert forbidden_tools(tasks["close-1"], plain) == []


def test_the_report_table_and_line_on_a_real_run_agree_with_the_landed_calls(tmp_path):
    folder = desk_with_needs(tmp_path)
    published = run_plain(folder / "experiments" / "four.yaml", tmp_path / "wh")
    calls = pl.read_parquet(tmp_path / "wh" / "task_calls" / "**" / "*.parquet", hive_partitioning=True)
    calls = calls.filter(~pl.col("skipped_budget"))
    # the report's figures, recounted from the landed Parquet and the needs written by hand above
    counted = Counter((r["arm"], r["name"]) for r in calls.iter_rows(named=True))
    unneeded = Counter((r["arm"], r["name"]) for r in calls.iter_rows(named=True)
                       if r["name"].removeprefix("desk.") not in NEEDS[r["task_id"]])
    assert counted  # the baseline agent called tools: the table below is not all zeros
    report = published.report
    tables = {t.key: t for t in report.tables if t.key.startswith("coverage-")}
    assert [t.title for t in tables.values()] == ["Tool coverage, surface plain (arms A, B)",
                                                  "Tool coverage, surface prefixed (arm C)",
                                                  "Tool coverage, surface narrow (arm N)"]
    plain = tables["coverage-1"]
    assert plain.columns == ["tool", "tasks needing it", "forbidding it", "calls A (not needed)",
                             "calls B (not needed)", "coverage"]
    for row in plain.rows:
        for arm, cell in zip("AB", row[3:5]):
            n = counted[(arm, row[0])]
            assert cell == (f"{n:,} ({unneeded[(arm, row[0])]:,})" if n else "0"), (arm, row)
    needing = Counter(tool for tools in NEEDS.values() for tool in tools)
    assert {row[0]: row[1:3] for row in plain.rows} == {  # status-1 forbids escalate_ticket (not_called)
        tool: [f"{needing[tool]} of 4", "1" if tool == "escalate_ticket" else "0"]
        for tool in load_surface(folder, "plain").backend_tools}
    status = {row[0]: row[-1] for row in plain.rows}
    assert {t for t, s in status.items() if s.startswith("needed")} == {"close_ticket", "get_ticket", "escalate_ticket"}
    spare = sorted(t for t in status if not needing[t])
    assert spare == ["broken_report", "list_tickets"]
    for tool in spare:
        called = counted[("A", tool)] or counted[("B", tool)]
        assert status[tool] == ("called, not needed" if called else "never exercised")
    narrow = {row[0]: row for row in tables["coverage-3"].rows}
    assert narrow["escalate_ticket"][1:] == ["1 of 4", "1", "0", "not offered"]
    prefixed = {row[0]: row[-1] for row in tables["coverage-2"].rows}
    assert prefixed["desk.close_ticket (close_ticket)"] == "needed"
    # the first screen: one line per surface
    lines = [line for line in report.headline if line.startswith("coverage")]
    assert len(lines) == 3
    never = [t for t in spare if status[t] == "never exercised"]
    called = sorted((t for t in spare if status[t] == "called, not needed"),
                    key=lambda t: (-counted[("A", t)] - counted[("B", t)], t))
    words = ["coverage, surface plain (arms A, B): 3 of 5 tools needed by some task"]
    words += [f"{len(never)} never exercised: {', '.join(never)}"] if never else []
    per_arm = ", ".join(f"{arm} {sum(counted[(arm, t)] for t in called)}" for arm in "AB")
    words += [f"{len(called)} needed by none but called: {', '.join(called)} (calls: {per_arm})"] if called else []
    silent = [t for t in ("close_ticket", "escalate_ticket", "get_ticket") if not counted[("A", t)] + counted[("B", t)]]
    words += [f"needed but never called: {', '.join(silent)}"] if silent else []
    assert lines[0] == "; ".join(words)
    assert lines[2].startswith("coverage, surface narrow (arm N): 2 of 3 tools needed by some task")
    assert lines[2].endswith("needed but not offered: escalate_ticket (1 task)")
    assert lines[0] in published.paths["markdown"].read_text()  # every report format carries it
    assert "Tool coverage, surface narrow (arm N)" in published.paths["html"].read_text()


@pytest.mark.slow  # starts the real MCP servers (memory, filesystem)
def test_coverage_of_an_mcp_surface_is_over_the_servers_tools(tmp_path):
    from tests.surface.mcp_office import DEFAULT_TASKS, write_office

    folder = write_office(tmp_path, DEFAULT_TASKS, experiment=textwrap.dedent("""\
        name: office-coverage
        taskset: ..
        version: t1
        seeds: [1]
        declared: {few_seeds: "the baseline agent is deterministic; one pass over the servers is enough"}
        defaults: {agent: baseline}
        arms:
          - {name: A, surface: both, prompt: default}
        """))
    listed = [tool.spec.name for tool in load_surface(folder, "both").tools]  # the servers' tools/list
    published = run_plain(folder / "experiments" / "run.yaml", tmp_path / "wh")
    (table,) = [t for t in published.report.tables if t.key.startswith("coverage-")]
    status = {row[0]: row[-1] for row in table.rows}
    assert sorted(status) == sorted(listed) and len(listed) > 20
    # o-1 asserts open_nodes (and is labelled with it), o-2 is labelled read_text_file (its probe is no need)
    assert {t for t, s in status.items() if s.startswith("needed")} == {"open_nodes", "read_text_file"}
    calls = pl.read_parquet(tmp_path / "wh" / "task_calls" / "**" / "*.parquet", hive_partitioning=True)
    called = set(calls.filter(~pl.col("skipped_budget"))["name"].to_list())
    assert {t for t, s in status.items() if s == "called, not needed"} == called - {"open_nodes", "read_text_file"}
    line = next(line for line in published.report.headline if line.startswith("coverage"))
    spare = len(listed) - 2 - len(called - {"open_nodes", "read_text_file"})
    assert line.startswith(f"coverage, surface both (arm A): 2 of {len(listed)} tools needed by some task; "
                           f"{spare} never exercised: ")
