"""Servers nobody here wrote (and a URL server's state): a REAL MCP server written with the
official SDK (tests/surface/text_error_server.py) that answers a refused statement as text without isError and
gives no annotations, over stdio and over streamable HTTP on loopback. A surface's error_text makes those
answers error calls (and without it they are fine calls); read_only marks move the irreversible counters; the
unannotated server is warned about in validate and in the report; declared setup / teardown calls give each
task on a URL server its own state, and their failures are recorded. Every test but one starts the server: the
slow tier."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import pytest

from schemas.mcp import McpAnnotations
from schemas.surface.surface_file import ToolMarkOverride
from schemas.surface.task import SurfaceTask
from tasks.files.input_errors import InputError
from tasks.surface.agent_loop import run_task
from tasks.surface.load_surface import load_surface
from tasks.surface.load_tasks import freeze_task_version, load_task_version
from tasks.surface.mcp_backend import close_pools, marks_from_annotations
from tasks.surface.task_checks import check_tasks
from tests.factories.ports import free_port
from tests.surface.scripted_agent import ScriptedAgent, calls, say

SERVER = Path(__file__).with_name("text_error_server.py")
STDIO = {"command": sys.executable, "args": [str(SERVER), "{state_dir}/ledger.sqlite"]}
ERROR_TEXT = {"regex": "^(Database )?[Ee]rror"}
READ_ONLY = {"read_query": {"read_only": True}, "list_tables": {"read_only": True}}


@pytest.fixture(autouse=True)
def pools_closed():
    yield
    close_pools()


def write_surface(folder: Path, name: str, mcp: dict) -> None:
    (folder / "surfaces").mkdir(parents=True, exist_ok=True)
    (folder / "surfaces" / f"{name}.yaml").write_text(json.dumps({"name": name, "mcp": mcp}))  # JSON is YAML


def ledger(root: Path) -> Path:
    """A task-set folder with the server over stdio: 'plain' declares nothing, 'declared' its error text and
    read-only tools."""
    folder = root / "ledger"
    write_surface(folder, "plain", {"servers": {"db": STDIO}})
    write_surface(folder, "declared", {"servers": {"db": {**STDIO, "error_text": ERROR_TEXT}}, "marks": READ_ONLY})
    return folder


def task(**fields) -> SurfaceTask:
    return SurfaceTask.model_validate({"id": "t", "slice": "s", "request": "go", "assert": {"reply": {"contains": ""}},
                                       **fields})


def run(surface, turns, **task_fields):
    agent = ScriptedAgent(lambda _task: list(turns))
    return run_task(agent, surface, task(**task_fields), {}, surface.specs, "prompt")


REFUSED_THREE = [
    calls(("read_query", {"query": "SELECT * FROM customer"}),                  # Database error: no such table
          ("write_query", {"query": "INSERT INTO customer VALUES (1)"}),        # Database error: no such table
          ("read_query", {"query": "DELETE FROM customer"})),                   # Error: Only SELECT queries ...
    calls(("create_table", {"query": "CREATE TABLE customer (id INTEGER)"}), ("list_tables", {})),
    say("done"),
]


@pytest.mark.slow
def test_errors_written_as_text_are_error_calls_only_where_the_surface_declares_them(tmp_path):
    folder = ledger(tmp_path)
    plain = run(load_surface(folder, "plain"), REFUSED_THREE)
    declared = run(load_surface(folder, "declared"), REFUSED_THREE)
    for outcome in (plain, declared):
        assert [c.name for c in outcome.calls] == ["read_query", "write_query", "read_query", "create_table",
                                                   "list_tables"]
        assert all(c.executed and c.valid for c in outcome.calls) and outcome.stop_reason == "model_stop"
    # without a declaration the server's own word (no isError) stands: three refused statements count as fine
    assert sum(c.error for c in plain.calls) == 0
    # declared: the three refusals are error calls, with the server's text; the two that worked are not
    assert [c.error for c in declared.calls] == [True, True, True, False, False]
    assert declared.calls[0].error_detail == "Database error: no such table: customer"
    assert declared.calls[2].error_detail.startswith("Error: Only SELECT queries")
    # irreversible actions: unannotated, every executed fine call counts (5); declared, the refused calls do not
    # and the read-only marks take read_query and list_tables out, leaving create_table
    assert sum(c.irreversible for c in plain.calls) == 5
    assert [c.irreversible for c in declared.calls] == [False, False, False, True, False]
    assert sum(c.upstream_reads for c in plain.calls) == 5 and sum(c.upstream_reads for c in declared.calls) == 2


def test_read_only_stands_for_the_annotation_and_explicit_marks_win():
    destructive = McpAnnotations(read_only=False, destructive=True, open_world=False)
    marks, reads = marks_from_annotations(destructive, ToolMarkOverride(read_only=True))
    assert not marks.writes and not marks.irreversible and reads == 1
    marks, reads = marks_from_annotations(McpAnnotations(read_only=True, open_world=False),
                                          ToolMarkOverride(read_only=False))
    assert marks.writes and marks.irreversible and reads == 0
    marks, _ = marks_from_annotations(None, ToolMarkOverride(read_only=True, irreversible=True))
    assert marks.irreversible and marks.writes


@pytest.mark.slow
def test_an_unannotated_server_carries_a_warning_that_says_how_its_tools_are_counted(tmp_path):
    folder = ledger(tmp_path)
    (warning,) = load_surface(folder, "plain").warnings
    assert warning.startswith("MCP server 'db' gives no annotations on any of its 5 tools and the surface marks none")
    assert ("every executed call of read_query, write_query, create_table, drop_table, list_tables that the server "
            "does not refuse counts as a write, an irreversible action and one upstream read") in warning
    assert load_surface(folder, "declared").warnings == ()
    tools = load_surface(folder, "plain").backend_tools
    assert all(t.marks.irreversible and t.marks.writes and t.reads_per_call == 1 for t in tools.values())


@pytest.mark.slow
def test_importing_an_unannotated_server_warns_how_its_tools_will_count(tmp_path):
    from tasks.importers.mcp_catalogue import import_mcp_catalogue

    (tmp_path / "ledger").mkdir()
    summary = import_mcp_catalogue("ledger", tmp_path / "ledger",
                                   command=[sys.executable, str(SERVER), str(tmp_path / "import.sqlite")])
    lines = summary.lines()
    assert "  annotations: 0 of 5 tools (0 read-only, 0 destructive)" in lines
    assert lines[lines.index("  annotations: 0 of 5 tools (0 read-only, 0 destructive)") + 1].startswith(
        "  warning: no tool is annotated: on a surface each counts as MCP's defaults say, every executed call the "
        "server does not refuse a write, an irreversible action and one upstream read")


@pytest.mark.slow
def test_a_bad_matcher_or_reset_call_is_named_before_any_task(tmp_path):
    folder = ledger(tmp_path)
    write_surface(folder, "bad_regex", {"servers": {"db": {**STDIO, "error_text": {"regex": "(Database"}}}})
    with pytest.raises(InputError) as bad:
        load_surface(folder, "bad_regex")
    assert "bad_regex.yaml" in str(bad.value) and "mcp.servers.db.error_text.regex" in str(bad.value)
    write_surface(folder, "empty_regex", {"servers": {"db": {**STDIO, "error_text": {"regex": "^"}}}})
    with pytest.raises(InputError, match="matches an empty text"):
        load_surface(folder, "empty_regex")
    write_surface(folder, "bad_reset", {"servers": {"db": STDIO},
                                        "reset": {"setup": [{"tool": "create_tabel", "arguments": {}}]}})
    with pytest.raises(InputError) as bad:
        load_surface(folder, "bad_reset")
    assert "reset-tools" in str(bad.value) and "create_tabel" in str(bad.value)


# -- a URL server: per-task state through declared calls -------------------------------------------------------
@pytest.fixture
def url_server(tmp_path):
    """The server over streamable HTTP on loopback; (its URL, its database file)."""
    db, port = tmp_path / "remote.sqlite", free_port()
    process = subprocess.Popen([sys.executable, str(SERVER), str(db), "http", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp", db
    finally:
        close_pools()
        process.terminate()
        process.wait(timeout=10)


def tables(db: Path) -> list[str]:
    with sqlite3.connect(db) as con:
        return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


RESET = {"setup": [{"tool": "create_table", "arguments": {"query": "CREATE TABLE orders (id INTEGER)"}}],
         "teardown": [{"tool": "drop_table", "arguments": {"name": "orders"}}]}
ONE_ORDER = {"probes": [{"probe": {"tool": "read_query", "args": {"query": "SELECT count(*) AS n FROM orders"}},
                         "contains": "'n': 1"}]}


def insert(order: int) -> list:
    return [calls(("write_query", {"query": f"INSERT INTO orders VALUES ({order})"})), say("done")]


@pytest.mark.slow
def test_setup_and_teardown_calls_give_each_task_on_a_url_server_its_own_state(tmp_path, url_server):
    url, db = url_server
    folder = tmp_path / "remote"
    write_surface(folder, "fresh", {"servers": {"db": {"url": url, "error_text": ERROR_TEXT}}, "reset": RESET})
    write_surface(folder, "shared", {"servers": {"db": {"url": url, "error_text": ERROR_TEXT}}, "reset": "none"})
    fresh = load_surface(folder, "fresh")
    seen = []
    for order in (1, 2, 3):
        outcome = run(fresh, insert(order), **{"assert": ONE_ORDER})
        seen.append(tables(db))  # between tasks, as the server keeps it: the teardown dropped the table
        assert outcome.success and outcome.stop_reason == "model_stop" and outcome.detail is None, outcome
        assert [c.error for c in outcome.calls] == [False]
    assert seen == [[], [], []]
    # without the declared calls, the second task sees the first one's order: its probe finds 2, not 1
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE orders (id INTEGER)")
    shared = load_surface(folder, "shared")
    first, second = (run(shared, insert(order), **{"assert": ONE_ORDER}) for order in (1, 2))
    assert first.success and not second.success


@pytest.mark.slow
def test_tasks_started_at_once_on_a_url_server_take_turns(tmp_path, url_server):
    url, db = url_server
    folder = tmp_path / "remote"
    write_surface(folder, "fresh", {"servers": {"db": {"url": url, "error_text": ERROR_TEXT}}, "reset": RESET})
    fresh = load_surface(folder, "fresh")

    def slow_task(order: int):
        def script(_task):
            time.sleep(0.5)  # the task holds the server's state a while: another one started meanwhile must wait
            return insert(order)
        return run_task(ScriptedAgent(script), fresh, task(**{"assert": ONE_ORDER}), {}, fresh.specs, "prompt")

    with ThreadPoolExecutor(max_workers=3) as pool:
        outcomes = list(pool.map(slow_task, (1, 2, 3)))
    assert [(o.success, o.stop_reason, o.detail) for o in outcomes] == [(True, "model_stop", None)] * 3
    assert tables(db) == []


@pytest.mark.slow
def test_a_failed_setup_is_not_carried_out_and_a_failed_teardown_is_recorded(tmp_path, url_server):
    url, db = url_server
    folder = tmp_path / "remote"
    write_surface(folder, "fresh", {"servers": {"db": {"url": url, "error_text": ERROR_TEXT}}, "reset": RESET})
    fresh = load_surface(folder, "fresh")
    with sqlite3.connect(db) as con:  # the state a setup cannot make: the table is there already
        con.execute("CREATE TABLE orders (id INTEGER)")
    blocked = run(fresh, insert(1), **{"assert": ONE_ORDER})
    assert blocked.stop_reason == "surface_error" and not blocked.success and blocked.calls == []
    assert blocked.detail == "reset setup call create_table failed: Database error: table orders already exists"
    # the setup left a teardown pending: made before the next task (dropping the table), which then runs
    assert run(fresh, insert(1), **{"assert": ONE_ORDER}).success and tables(db) == []
    # a task that drops the table itself: its teardown fails, recorded in its detail; the next task is carried out
    # only once the teardown succeeds, and here it cannot, so it is not carried out, naming the teardown
    dropped = run(fresh, [calls(("drop_table", {"name": "orders"})), say("done")])
    assert dropped.stop_reason == "model_stop" and dropped.success
    assert dropped.detail == "reset teardown call drop_table failed: Database error: no such table: orders"
    after = run(fresh, insert(2), **{"assert": ONE_ORDER})
    assert after.stop_reason == "surface_error" and after.calls == []
    assert after.detail.startswith("the teardown after an earlier task is still pending (reset teardown call "
                                   "drop_table failed")


@pytest.mark.slow
def test_fixture_files_on_a_surface_that_writes_none_are_refused_by_the_task_checks(tmp_path, url_server):
    url, _ = url_server
    folder = ledger(tmp_path)
    write_surface(folder, "fresh", {"servers": {"db": {"url": url}}, "reset": RESET})
    lines = [{"id": "with-files", "slice": "db", "request": "Count the orders.", "assert": {"reply": {"contains": ""}},
              "fixtures": {"files": {"ledger.sqlite": "not used"}}},
             {"id": "no-files", "slice": "db", "request": "Count the orders.", "assert": {"reply": {"contains": ""}}}]
    (folder / "t1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    freeze_task_version(folder, "t1", ["db"])
    version = load_task_version(folder, "t1")
    assert check_tasks(version, [load_surface(folder, "plain")]).n_tasks == 2  # reset files: written, fine
    with pytest.raises(InputError) as refused:
        check_tasks(version, [load_surface(folder, "plain"), load_surface(folder, "fresh")])
    (problem,) = refused.value.problems
    assert problem.rule == "fixtures-schema" and "with-files" in problem.where and problem.file.endswith("t1.jsonl")
    assert "this surface's reset is declared setup / teardown calls, which writes no files" in problem.message


# -- end to end: validate, run, report -------------------------------------------------------------------------
def ledger_experiment(folder: Path, n_tasks: int, arms: dict[str, str]) -> Path:
    """Tasks (list the tables), a prompt and an experiment whose arms (name -> surface) run them, baseline agent,
    three seeds, the first arm compared to each other one; the experiment file."""
    lines = [{"id": f"l-{i}", "slice": "db", "request": "List the tables of the ledger.", "intent": "list_tables",
              "assert": {"tool": "list_tables"}} for i in range(n_tasks)]
    (folder / "t1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    freeze_task_version(folder, "t1", ["db"])
    (folder / "prompts").mkdir()
    (folder / "prompts" / "default.md").write_text("You keep the ledger.\n")
    (folder / "experiments").mkdir()
    first, *others = arms
    experiment = folder / "experiments" / "run.yaml"
    experiment.write_text(json.dumps({
        "name": "ledger-run", "taskset": "..", "version": "t1", "seeds": [1, 2, 3],
        "defaults": {"agent": "baseline", "prompt": "default"},
        "arms": [{"name": name, "surface": surface} for name, surface in arms.items()],
        "comparisons": [{"from": first, "to": other} for other in others]}))
    return experiment


@pytest.mark.slow
def test_validate_and_the_report_warn_of_the_unannotated_server(tmp_path):
    from tests.drill.harness import cli_env, tooleval

    experiment = ledger_experiment(ledger(tmp_path), 2, {"P": "plain", "D": "declared"})
    env = cli_env(tmp_path / "prefect")
    checked = tooleval(["validate", str(experiment)], env, tmp_path, "validate")
    assert checked.returncode == 0, checked.output[-3000:]
    assert checked.stdout.splitlines()[-1] == "nothing was run or written"
    unfolded = " ".join(checked.stdout.split())  # validate folds its lines to the terminal's width
    assert ("warning: surface plain: MCP server 'db' gives no annotations on any of its 5 tools and the surface "
            "marks none of them") in unfolded
    assert "surface declared:" not in checked.stdout
    tasks_checked = tooleval(["tasks", "validate", str(experiment.parent.parent / "t1.jsonl"), "--surface", "plain"],
                             env, tmp_path, "tasks-validate")
    assert tasks_checked.returncode == 0, tasks_checked.output[-3000:]
    assert "warning: surface plain: MCP server 'db' gives no annotations" in " ".join(tasks_checked.stdout.split())
    warehouse = tmp_path / "wh"
    ran = tooleval(["tasks", "run", str(experiment), "--warehouse", str(warehouse)], env, tmp_path, "run")
    assert ran.returncode == 0, ran.output[-3000:]
    assert ("Warning: surface plain (arm P): MCP server 'db' gives no annotations on any of its 5 tools"
            in " ".join(ran.stdout.split())), ran.stdout[:3000]
    assert "Warning: surface declared" not in ran.stdout
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        landed = dict(con.execute("SELECT arm, surface_warnings FROM task_arms").fetchall())
    finally:
        con.close()
    assert len(landed["P"]) == 1 and landed["D"] == []


@pytest.mark.slow
def test_an_arm_whose_declared_setup_fails_is_not_judged_never_zero(tmp_path, url_server):
    from tests.drill.harness import cli_env, tooleval

    url, _ = url_server
    folder = ledger(tmp_path)
    write_surface(folder, "remote", {"servers": {"db": {"url": url, "error_text": ERROR_TEXT}},
                                     "reset": {"setup": [{"tool": "read_query",
                                                          "arguments": {"query": "SELECT * FROM customer"}}]},
                                     "marks": READ_ONLY})
    experiment = ledger_experiment(folder, 3, {"LOCAL": "declared", "REMOTE": "remote"})
    warehouse = tmp_path / "wh"
    ran = tooleval(["tasks", "run", str(experiment), "--warehouse", str(warehouse)], cli_env(tmp_path / "prefect"),
                   tmp_path, "run")
    assert ran.returncode == 0, ran.output[-3000:]
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        remote = con.execute("SELECT DISTINCT stop_reason, detail FROM task_runs WHERE arm = 'REMOTE'").fetchall()
    finally:
        con.close()
    assert remote == [("surface_error", "reset setup call read_query failed: Database error: no such table: customer")]
    report = ran.stdout
    assert "NOT JUDGED (0/9)" in report and "9 of 9 task runs could not be carried out" in report, report[:4000]
    # the success tables (by slice, and the arm over every task) print no rate for it: NOT JUDGED, no interval
    remote_rows = [line for line in report.splitlines() if " REMOTE " in f" {line} " and "3×3" in line]
    assert len(remote_rows) == 2 and all("  NOT " in line and "0.0%" not in line for line in remote_rows), remote_rows


TEXT_ERROR_SCRIPT = [("read_query", {"query": "SELECT * FROM customer"}),            # Database error (as text)
                     ("write_query", {"query": "INSERT INTO customer VALUES (1)"}),  # Database error (as text)
                     ("read_query", {"query": "DELETE FROM customer"}),              # Error: Only SELECT ...
                     ("create_table", {"query": "CREATE TABLE customer (id INTEGER)"}),
                     ("list_tables", {})]


@pytest.mark.slow
def test_errors_written_as_text_reach_the_per_tool_counters_and_the_report(tmp_path):
    from tests.drill.harness import cli_env, tooleval
    from tests.provider_server import ProviderServer, text_reply, tool_call
    from tests.selectors.providers.conftest import FAKE_KEY

    def scripted(seen):
        turns = [tool_call(name, arguments) for name, arguments in TEXT_ERROR_SCRIPT] + [text_reply("Done.")]
        return turns[min(seen.turn, len(turns) - 1)]

    folder = ledger(tmp_path)
    with ProviderServer(scripted, api_key=FAKE_KEY) as server:
        experiment = ledger_experiment(folder, 1, {"P": "plain", "D": "declared"})
        text = json.loads(experiment.read_text())
        text.update({"seeds": [1], "declared": {"few_seeds": "counting calls of a script"},
                     "defaults": {"prompt": "default", "agent": "openai", "model": "gpt-4.1-mini-2025-04-14",
                                  "options": {"base_url": server.openai_url, "concurrency": 1}}})
        experiment.write_text(json.dumps(text))
        warehouse = tmp_path / "wh"
        ran = tooleval(["tasks", "run", str(experiment), "--warehouse", str(warehouse)],
                       cli_env(tmp_path / "prefect", OPENAI_API_KEY=FAKE_KEY), tmp_path, "run")
    assert ran.returncode in (0, 1), ran.output[-3000:]
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        counters = {(arm, tool): rest for arm, tool, *rest in con.execute(
            "SELECT arm, tool, calls, errors, irreversible_actions, upstream_reads FROM task_tool_counters "
            "WHERE run_id = (SELECT max(run_id) FROM task_experiments)").fetchall()}
    finally:
        con.close()
    # without a declaration: 5 fine calls, every one irreversible (unannotated); declared: 3 refused, and only
    # create_table irreversible (read_query and list_tables are marked read-only); a refused call reads nothing
    assert counters == {("P", "read_query"): [2, 0, 2, 2], ("P", "write_query"): [1, 0, 1, 1],
                        ("P", "create_table"): [1, 0, 1, 1], ("P", "list_tables"): [1, 0, 1, 1],
                        ("D", "read_query"): [2, 2, 0, 0], ("D", "write_query"): [1, 1, 0, 0],
                        ("D", "create_table"): [1, 0, 1, 1], ("D", "list_tables"): [1, 0, 0, 1]}
    # the report's per-tool table, arm P then arm D: the (all tools) row's errors and error rate
    totals = [line.split() for line in ran.stdout.splitlines() if line.startswith("(all tools)")]
    assert [row[2:3] + row[6:8] for row in totals] == [["5", "0", "0.0%"], ["5", "3", "60.0%"]]
