"""Whole runs on MCP surfaces through the `tooleval` command (the real npm servers, a real Prefect flow):
a surface whose server does not exist lands its tasks as named surface errors beside an arm that works,
each exactly once; a run killed with kill -9 resumes without running a finished task again, and leaves
no server behind; the MCP state folders the killed run leaked are removed by the resumed run."""

from __future__ import annotations

import textwrap

import duckdb
import pytest

from schemas.catalogue import CatalogueFile, ToolSpec
from tests.drill.harness import cli_env, orphans, points_log, tooleval
from tests.surface.mcp_office import DEFAULT_TASKS, surface_yaml, write_office

pytestmark = pytest.mark.slow

TASKS = DEFAULT_TASKS * 1 + [
    {**task, "id": f"{task['id']}-{copy}"} for copy in range(1, 4) for task in DEFAULT_TASKS]


def rows(warehouse, run_id: str) -> list[tuple]:
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        return con.execute("SELECT arm, seed, task_id, stop_reason, detail, cache_hit FROM task_runs "
                           "WHERE run_id = ? ORDER BY arm, seed, task_id", [run_id]).fetchall()
    finally:
        con.close()


def latest_run(warehouse) -> str:
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        return con.execute("SELECT max(run_id) FROM task_experiments").fetchone()[0]
    finally:
        con.close()


def test_a_server_that_does_not_exist_fails_its_arm_by_name_and_the_run_lands_every_task_once(tmp_path):
    folder = write_office(tmp_path, TASKS, experiment=textwrap.dedent("""\
        name: office-gone
        taskset: ..
        version: t1
        seeds: [1, 2, 3]
        batch_size: 4
        defaults: {agent: baseline, prompt: default}
        arms:
          - {name: A, surface: both}
          - {name: G, surface: gone}
        comparisons:
          - {from: A, to: G}
        """))
    (folder / "catalogues").mkdir()
    (folder / "catalogues" / "memory-v1.json").write_text(CatalogueFile(
        name="memory-v1", tools=[ToolSpec(name="open_nodes", description="Open nodes by name"),
                                 ToolSpec(name="read_text_file", description="Read a file", parameters={
                                     "type": "object", "properties": {"path": {"type": "string"}}})]).model_dump_json())
    (folder / "surfaces" / "gone.yaml").write_text(surface_yaml("gone", {"memory": {
        "command": "no-such-mcp-server", "catalogue": "memory-v1"}}))
    warehouse, env = tmp_path / "wh", cli_env(tmp_path / "prefect")
    args = ["tasks", "run", str(folder / "experiments" / "run.yaml"), "--warehouse", str(warehouse)]
    first = tooleval(args, env, tmp_path, "first")
    assert first.returncode == 0, first.output[-3000:]
    landed = rows(warehouse, latest_run(warehouse))
    assert len(landed) == len({(a, s, t) for a, s, t, *_ in landed}) == 2 * 3 * len(TASKS)  # each exactly once
    gone = [r for r in landed if r[0] == "G"]
    assert {r[3] for r in gone} == {"surface_error"}
    assert all("command not found: no-such-mcp-server" in r[4] and "'memory'" in r[4] for r in gone)
    assert {r[3] for r in landed if r[0] == "A"} == {"model_stop"}
    assert "surface_error" in first.stdout  # the report's stop reasons name it
    again = tooleval(args, env, tmp_path, "again")
    relanded = rows(warehouse, latest_run(warehouse))
    assert all(r[5] for r in relanded if r[0] == "A") and not any(r[5] for r in relanded if r[0] == "G")
    assert not orphans(again) and not orphans(first)


def test_a_run_killed_mid_way_resumes_without_running_a_finished_task_again(tmp_path):
    folder = write_office(tmp_path, TASKS)
    warehouse, log, scratch = tmp_path / "wh", tmp_path / "points.log", tmp_path / "tmp"
    scratch.mkdir()  # the runs' temporary folder: where the servers' state folders are made
    args = ["tasks", "run", str(folder / "experiments" / "run.yaml"), "--warehouse", str(warehouse)]
    killed = tooleval(args, cli_env(tmp_path / "prefect", TOOLEVAL_DRILL_KILL_AT="unit-landed:2",
                                    TOOLEVAL_DRILL_LOG=str(log), TMPDIR=str(scratch)), tmp_path, "killed")
    assert killed.returncode == -9
    leaked = sorted(p.name for p in scratch.glob("tooleval-mcp-*"))
    assert leaked, "the killed run's server state folders (its warm instances') should be there to remove"
    landed_units = [detail for point, detail in points_log(log) if point == "unit-landed"]
    assert len(landed_units) == 2
    assert not orphans(killed), "a server (or the Prefect server) outlived the killed run"
    killed_runs = {p.name for p in (warehouse / "task_runs").glob("run_id=*")}
    assert len(killed_runs) == 1 and (warehouse / "registrations" / killed_runs.pop()[7:]).is_dir()
    resumed = tooleval(args, cli_env(tmp_path / "prefect", TMPDIR=str(scratch)), tmp_path, "resumed")
    assert resumed.returncode == 0, resumed.output[-3000:]
    assert not list(scratch.glob("tooleval-mcp-*")), "a state folder outlived the resumed run"
    assert f"removed {len(leaked)} scratch folder(s) of killed runs (mcp;" in resumed.output
    run_id = latest_run(warehouse)
    # the killed run's Parquet and registrations/ folder are leftovers the resumed run removed, and says so
    for landed in ("task_runs", "task_calls"):
        assert [p.name for p in (warehouse / landed).glob("run_id=*")] == [f"run_id={run_id}"]
    assert [p.name for p in (warehouse / "registrations").iterdir()] == [run_id]
    assert "removed the unregistrable rows of run" in resumed.output
    again = rows(warehouse, run_id)
    assert len(again) == len({(a, s, t) for a, s, t, *_ in again}) == 3 * len(TASKS)
    hits = sum(r[5] for r in again)
    # the two units that landed (run.yaml: batches of 2 tasks) were not run again; units that finished their
    # tasks before the kill without landing add hits, as many as the machine's load allowed
    assert hits >= 2 * 2
    assert not orphans(resumed)
