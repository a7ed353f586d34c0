"""Tasks on a surface served by the REAL reference MCP servers (memory, filesystem; Node, installed by
`make install`): calls counted by the tool-surface counters, fresh state per task on warm instances, and a
server that crashes, hangs or does not exist as a named surface error that never sinks the task's row."""

from __future__ import annotations

import json
import signal
import time

import psutil
import pytest

from schemas.catalogue import CatalogueFile, ToolSpec
from schemas.surface.task import SurfaceTask
from tasks.files.input_errors import InputError
from tasks.surface.agent_loop import run_task
from tasks.surface.load_surface import load_surface
from tasks.surface.mcp_backend import close_pools, marks_from_annotations, pool_for
from tasks.surface.surface_session import SurfaceBroke
from schemas.mcp import McpAnnotations
from tests.surface.mcp_office import CRM, MEMORY, MEMORY_JS, server_processes, surface_yaml, write_office
from tests.surface.scripted_agent import ScriptedAgent, calls, say


@pytest.fixture(autouse=True)
def no_server_left():
    yield
    close_pools()
    assert not server_processes(MEMORY_JS), "a server outlived its pool"


def task(**fields) -> SurfaceTask:
    return SurfaceTask.model_validate({"id": "t", "slice": "s", "request": "go", "assert": {"reply": {"contains": ""}},
                                       **fields})


def run(surface, turns, fixtures=None, **task_fields):
    agent = ScriptedAgent(lambda _task: list(turns))
    chosen = task(**task_fields)
    return run_task(agent, surface, chosen, fixtures or {}, surface.specs, "prompt")


def test_the_surface_offers_both_servers_tools_with_marks_from_their_annotations(tmp_path):
    surface = load_surface(write_office(tmp_path), "both")
    assert surface.servers == ("memory", "files") and len(surface.tools) == 9 + 14
    tools = surface.backend_tools
    assert tools["read_graph"].server == "memory" and tools["read_text_file"].server == "files"
    assert tools["delete_entities"].marks.irreversible and tools["write_file"].marks.irreversible
    assert not tools["create_entities"].marks.irreversible and tools["create_entities"].marks.writes
    assert not tools["read_graph"].marks.writes and tools["read_graph"].reads_per_call == 1
    assert tools["create_entities"].reads_per_call == 0  # writes, closed world: no upstream read
    # a tool the server does not annotate counts as the MCP specification presumes it
    marks, reads = marks_from_annotations(None)
    assert marks.writes and marks.irreversible and reads == 1
    assert marks_from_annotations(McpAnnotations(read_only=True, open_world=False))[0].writes is False


def test_invalid_error_and_retry_are_told_apart_on_the_real_servers(tmp_path):
    surface = load_surface(write_office(tmp_path), "both")
    outcome = run(surface, [
        calls(("create_entities", {"entities": "Acme"})),                       # breaks the schema: invalid, not sent
        calls(("read_text_file", {"path": "notes/missing.txt"})),               # the server refuses: an error call
        calls(("read_text_file", {"path": "notes/acme.txt"})),
        calls(("read_text_file", {"path": "notes/acme.txt"})),                  # the same call again: a retry
        calls(("write_file", {"path": "notes/new.txt", "content": "hello"})),   # destructive: irreversible
        say("done")],
        fixtures={"files": {"files/notes/acme.txt": "Acme renews in March."}})
    first, refused, read, again, wrote = outcome.calls
    assert not first.valid and not first.executed and "entities" in first.invalid_reason
    assert refused.valid and refused.executed and refused.error and "ENOENT" in refused.error_detail
    assert read.executed and not read.error and read.upstream_reads == 1 and read.server == "files"
    assert again.is_retry and not read.is_retry
    assert wrote.irreversible and wrote.upstream_reads == 0
    assert outcome.stop_reason == "model_stop"


def test_the_servers_own_validation_error_is_an_invalid_call(tmp_path):
    surface = load_surface(write_office(tmp_path), "both")
    session = surface.backend.open({})
    try:
        # arguments the server's own schema check rejects (-32602), sent past tooleval's check on purpose
        outcome = session.call(surface.backend_tools["create_entities"], {"entities": "Acme"})
    finally:
        session.close(broken=False)
    assert outcome.invalid and "-32602" in outcome.invalid and outcome.refused is None


def test_every_task_starts_from_its_own_fixtures_on_a_warm_instance(tmp_path):
    surface = load_surface(write_office(tmp_path), "both")
    writes = run(surface, [calls(("write_file", {"path": "left.txt", "content": "x"}),
                                 ("create_entities", {"entities": [{"name": "Initech", "entityType": "customer",
                                                                    "observations": []}]})), say("done")],
                 fixtures={"files": {"memory.jsonl": CRM}})
    assert not any(c.error for c in writes.calls)
    reads = run(surface, [calls(("list_directory", {"path": "."}), ("read_graph", {})), say("done")],
                fixtures={"files": {"files/mine.txt": "mine"}},
                **{"assert": {"probes": [{"probe": {"tool": "read_graph"}, "path": "entities", "equals": []},
                                         {"probe": {"tool": "list_directory", "args": {"path": "."}},
                                          "contains": "mine.txt"}]}})
    assert reads.success, reads.failed_assertions  # no Initech, no left.txt: the first task's writes are gone
    pool = pool_for(surface.backend)
    assert pool.starts == 1 and len(pool.idle) == 1  # one instance served both tasks


def test_probes_read_the_end_state_through_the_server(tmp_path):
    surface = load_surface(write_office(tmp_path), "both")
    probes = {"assert": {"probes": [
        {"probe": {"tool": "open_nodes", "args": {"names": ["Acme"]}}, "path": "entities.Acme.observations",
         "contains": "renewed"},
        {"probe": {"tool": "read_text_file", "args": {"path": "nope.txt"}}, "contains": "x"}]}}
    outcome = run(surface, [calls(("add_observations", {"observations": [{"entityName": "Acme",
                                                                          "contents": ["renewed"]}]})),
                            say("done")], fixtures={"files": {"memory.jsonl": CRM}}, **probes)
    assert not outcome.success
    (only,) = outcome.failed_assertions  # the observation was added: the first probe held
    assert "read nothing" in only and "nope.txt" in only


def wait_dead(process: psutil.Process, timeout_s: float = 30.0) -> None:
    """Until ``process`` has exited (a zombie has: its pipes are closed), or fail."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {process.pid} still alive {timeout_s:.0f} s after its kill")


def test_a_server_killed_mid_task_stops_it_with_a_named_surface_error(tmp_path):
    surface = load_surface(write_office(tmp_path), "memory")

    class Killer(ScriptedAgent):
        def start(self, task, tools, prompt):
            session = super().start(task, tools, prompt)
            original = session.next_turn

            def next_turn():
                turn = original()
                if turn.calls and turn.calls[0].name == "read_graph":
                    for process in server_processes(MEMORY_JS):
                        process.kill()
                        wait_dead(process)
                return turn
            session.next_turn = next_turn
            return session

    agent = Killer(lambda _task: [calls(("search_nodes", {"query": "Acme"})), calls(("read_graph", {})), say("x")])
    outcome = run_task(agent, surface, task(), {"files": {"memory.jsonl": CRM}}, surface.specs, "p")
    assert outcome.stop_reason == "surface_error" and not outcome.success
    assert "MCP server 'memory'" in outcome.detail and len(outcome.calls) == 2
    assert outcome.calls[1].error and outcome.calls[1].executed
    # the next task gets a new instance and goes through
    again = run(surface, [calls(("read_graph", {})), say("done")])
    assert again.stop_reason == "model_stop" and not again.calls[0].error


def test_a_server_that_hangs_past_the_call_timeout_is_a_surface_error(tmp_path):
    surface = load_surface(write_office(tmp_path, call_timeout_s=1.5), "memory")
    run(surface, [calls(("read_graph", {})), say("warm")])
    for process in server_processes(MEMORY_JS):
        process.send_signal(signal.SIGSTOP)
    started = time.perf_counter()
    outcome = run(surface, [calls(("read_graph", {})), say("x")])
    assert outcome.stop_reason == "surface_error" and "hung" in outcome.detail
    assert time.perf_counter() - started < 6  # the time limit, not a hang
    close_pools()


def test_a_server_command_that_does_not_exist_is_a_surface_error_naming_it(tmp_path):
    folder = write_office(tmp_path)
    (folder / "catalogues").mkdir()
    pinned = CatalogueFile(name="memory-v1", tools=[ToolSpec(name="read_graph", description="Read the graph")])
    (folder / "catalogues" / "memory-v1.json").write_text(pinned.model_dump_json())
    (folder / "surfaces" / "gone.yaml").write_text(surface_yaml("gone", {"memory": {
        "command": "no-such-mcp-server", "catalogue": "memory-v1"}}))
    surface = load_surface(folder, "gone")  # pinned: resolved from the catalogue, nothing started
    outcome = run(surface, [calls(("read_graph", {})), say("x")])
    assert outcome.stop_reason == "surface_error" and outcome.calls == [] and outcome.n_turns == 0
    assert "command not found: no-such-mcp-server" in outcome.detail and "'memory'" in outcome.detail


def test_a_server_whose_tools_left_its_pinned_catalogue_is_refused_at_start(tmp_path):
    folder = write_office(tmp_path)
    (folder / "catalogues").mkdir()
    pinned = CatalogueFile(name="memory-v1", tools=[ToolSpec(name="read_graph", description="Read the graph")])
    (folder / "catalogues" / "memory-v1.json").write_text(pinned.model_dump_json())
    (folder / "surfaces" / "pinned.yaml").write_text(surface_yaml("pinned", {"memory": {**MEMORY,
                                                                                      "catalogue": "memory-v1"}}))
    surface = load_surface(folder, "pinned")
    with pytest.raises(SurfaceBroke, match="differ from catalogue memory-v1"):
        surface.backend.open({})


def test_bad_mcp_surface_files_are_refused_before_anything_runs(tmp_path):
    folder = write_office(tmp_path)
    for name, body, rule in [
        ("twice", surface_yaml("twice", {"a": {"command": "node", "args": [str(MEMORY_JS)]},
                                         "b": {"command": "node", "args": [str(MEMORY_JS)]}}), "tool-names-unique"),
        ("nostart", surface_yaml("nostart", {"a": {"command": "no-such-mcp-server"}}), "server-starts"),
        ("both_kinds", json.dumps({"name": "both_kinds", "toolkit": "x:Y", "mcp": {"servers": {}}}), "schema")]:
        (folder / "surfaces" / f"{name}.yaml").write_text(body)
        with pytest.raises(InputError) as refused:
            load_surface(folder, name)
        assert refused.value.problems[0].rule == rule and name in refused.value.problems[0].file


def test_a_secret_for_a_server_is_named_never_written(tmp_path, monkeypatch):
    folder = write_office(tmp_path)
    secret = "sk-do-not-keep-4242"
    (folder / "surfaces" / "keyed.yaml").write_text(surface_yaml("keyed", {"memory": {
        **MEMORY, "env": {**MEMORY["env"], "API_TOKEN": "$OFFICE_TOKEN"}}}))
    monkeypatch.setenv("OFFICE_TOKEN", secret)
    surface = load_surface(folder, "keyed")
    outcome = run(surface, [calls(("read_graph", {})), say("done")])
    assert outcome.stop_reason == "model_stop" and secret not in outcome.model_dump_json()
    assert secret not in json.dumps(surface.backend.spec.model_dump()) and surface.surface_hash
    close_pools()
    monkeypatch.delenv("OFFICE_TOKEN")
    with pytest.raises(InputError, match="environment variable OFFICE_TOKEN .for API_TOKEN. is not set"):
        load_surface(folder, "keyed")


def test_a_surface_pinned_to_an_imported_catalogue_runs_on_the_server_it_came_from(tmp_path):
    from tasks.importers.mcp_catalogue import import_mcp_catalogue

    folder = write_office(tmp_path)
    summary = import_mcp_catalogue("memory", folder, command=["node", str(MEMORY_JS)])
    assert (folder / "catalogues" / "memory-v1.json").is_file(), summary.lines()
    (folder / "surfaces" / "pinned.yaml").write_text(surface_yaml("pinned", {"memory": {
        **MEMORY, "catalogue": "memory-v1"}}))
    surface = load_surface(folder, "pinned")
    assert surface.backend_tools["delete_entities"].marks.irreversible  # from the catalogue's annotations
    outcome = run(surface, [calls(("read_graph", {})), say("done")])
    assert outcome.stop_reason == "model_stop" and not outcome.calls[0].error
