"""A server that drifted from the catalogue its surface is pinned to, and a server whose stdout
is not JSON-RPC.

On a real MCP server written with the official SDK (tests/surface/drifting_server.py: its tool list changes
after a number of starts): drift found before the run is bad input (exit 2) naming what changed and the
`tooleval import mcp` line that records the new version, with nothing landed, and that line records it; a
server that changes mid-run leaves its arm NOT JUDGED, with the reason, in the terminal, markdown and HTML
report, never a rate; validate starts no server and says where the live check is made. A server that writes
text on stdout is one message naming its first line within seconds, not a traceback per line and the
handshake's 30 s."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest

from flows.cli import main
from flows.exit_codes import EXIT_NOT_JUDGED, verdict_exit_code
from schemas.catalogue import ToolSpec
from schemas.mcp import McpAnnotations, McpServer
from schemas.surface.surface_file import SurfaceServer, ToolMarkOverride
from tasks.files.input_errors import InputError
from tasks.importers.mcp_catalogue import import_mcp_catalogue
from tasks.mcp import connection as mcp_connection
from tasks.mcp.connection import ServerConnection, ServerFailed
from tasks.run.prepare_run import prepare_run
from tasks.surface.catalogue_drift import catalogue_drift, import_line
from tasks.surface.catalogue_drift import check_pinned_servers
from tasks.surface.load_tasks import freeze_task_version
from tests.drill.harness import cli_env, tooleval
from tests.surface.mcp_office import server_processes
from tests.surface.plain_run import run_plain

SERVER = Path(__file__).with_name("drifting_server.py")
PATIENT_S = 120.0
"""The deadline of a wait that ends on the server's answer (not a measured time)."""
ROOT = Path(__file__).resolve().parents[2]
READ = ToolSpec(name="read_note", description="Read a note.", parameters={
    "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
WRITE = ToolSpec(name="write_note", description="Write a note.", parameters={
    "type": "object", "properties": {"name": {"type": "string"}, "text": {"type": "string"}}})


def starts(counter: Path) -> int:
    return int(counter.read_text()) if counter.is_file() else 0


# -- what counts as drift (no server) ----------------------------------------------------------------------

def test_drift_is_what_matters_to_an_arm_names_schemas_and_how_calls_are_counted():
    pinned = ([READ, WRITE], {"read_note": McpAnnotations(read_only=True, title="Read")})
    same = catalogue_drift(pinned, pinned, {})
    assert not same and same.words() == ""
    # the arm offers the catalogue's text in its own order, and a title counts nothing: not drift
    reworded = ([WRITE.model_copy(update={"description": "Store a note."}), READ],
                {"read_note": McpAnnotations(read_only=True, title="Read one note", idempotent=True)})
    assert not catalogue_drift(pinned, reworded, {})
    schema = READ.model_copy(update={"parameters": {"type": "object", "properties": {"id": {"type": "integer"}}}})
    moved = ([schema, ToolSpec(name="archive_note", description="")], {})
    drift = catalogue_drift(pinned, moved, {})
    assert drift.words() == ("added: archive_note; removed: write_note; input schema changed: read_note; "
                             "annotations changed how it is counted: read_note")
    # read-only no longer said by the server, but the surface marks it read-only: counted as before
    unmarked = ([READ, WRITE], {})
    assert catalogue_drift(pinned, unmarked, {}).marks == ("read_note",)
    assert not catalogue_drift(pinned, unmarked, {"read_note": ToolMarkOverride(read_only=True)})


def test_the_import_line_is_the_surface_server_as_a_command(tmp_path):
    server = SurfaceServer(command="node", args=("{taskset_dir}/server.js", "--db", "{state_dir}/x.db"),
                           env={"TOKEN": "$NOTES_TOKEN"}, cwd="srv", catalogue="notes-v3")
    line = import_line(tmp_path, server)
    assert shlex.split(line) == ["tooleval", "import", "mcp", "notes", "--taskset", str(tmp_path), "--cwd",
                                 str(tmp_path / "srv"), "--env", "TOKEN=$NOTES_TOKEN", "--", "node",
                                 f"{tmp_path}/server.js", "--db", "{state_dir}/x.db"]
    url = SurfaceServer(url="http://127.0.0.1:9/mcp", catalogue="notes-v1")
    assert import_line(tmp_path, url) == f"tooleval import mcp notes --taskset {tmp_path} --url http://127.0.0.1:9/mcp"


# -- on the real server --------------------------------------------------------------------------------------

def notes_taskset(root: Path, drift_after: int, n_tasks: int = 4) -> tuple[Path, Path]:
    """A task set over the notes server pinned to catalogue notes-v1 (imported from a start that does not
    drift), the server drifting after ``drift_after`` starts; (folder, the server's start counter)."""
    folder, counter = root / "notes", root / "starts.txt"
    (folder / "surfaces").mkdir(parents=True)
    summary = import_mcp_catalogue("notes", folder, command=[sys.executable, str(SERVER), str(root / "import.txt"),
                                                             "-1"])
    assert summary.written and summary.version == "notes-v1"
    surface = {"name": "notes", "mcp": {"reset": "restart", "call_timeout_s": 30, "servers": {"notes": {
        "command": sys.executable, "args": [str(SERVER), str(counter), str(drift_after)], "cwd": "{state_dir}",
        "catalogue": "notes-v1"}}}}
    (folder / "surfaces" / "notes.yaml").write_text(json.dumps(surface))
    (folder / "prompts").mkdir()
    (folder / "prompts" / "default.md").write_text("You keep notes.\n")
    tasks = [{"id": f"n-{i}", "request": f"Read the note plan{i}.txt", "slice": "notes", "intent": "read_note",
              "fixtures": {"files": {f"plan{i}.txt": "ship on Friday"}}, "assert": {"tool": "read_note"}}
             for i in range(1, n_tasks + 1)]
    (folder / "t1.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    freeze_task_version(folder, "t1", ["notes"])
    (folder / "experiments").mkdir()
    (folder / "experiments" / "run.yaml").write_text(textwrap.dedent("""\
        name: notes-run
        taskset: ..
        version: t1
        seeds: [1]
        declared: {few_seeds: a test of a server that drifts}
        batch_size: 8
        criteria: criteria.yaml
        defaults: {agent: baseline, prompt: default}
        arms:
          - {name: A, surface: notes}
        """))
    (folder / "experiments" / "criteria.yaml").write_text(
        "name: notes\ngates:\n  - {name: floor, kind: success_floor, floors: {notes: 0.1}}\n")
    return folder, counter


@pytest.mark.slow
def test_a_drifted_server_is_refused_before_any_task_and_the_import_line_records_it(tmp_path, capsys):
    folder, counter = notes_taskset(tmp_path, drift_after=0)
    experiment = folder / "experiments" / "run.yaml"
    # validate starts no server: it says the run checks the pinned server live
    assert main(["validate", str(experiment)]) == 0
    said = capsys.readouterr().out
    assert "pinned MCP servers notes/notes (notes-v1): checked against their catalogue" in said
    assert "when a run starts (before its first task)" in said and starts(counter) == 0
    assert main(["tasks", "validate", str(folder / "t1.jsonl")]) == 0
    assert "pinned MCP servers notes/notes (notes-v1)" in capsys.readouterr().out and starts(counter) == 0
    warehouse = tmp_path / "wh"
    refused = tooleval(["tasks", "run", str(experiment), "--warehouse", str(warehouse)], cli_env(tmp_path / "prefect"),
                       tmp_path, "drifted", timeout=300)
    assert refused.returncode == 2, refused.output[-3000:]
    assert starts(counter) == 1  # the preflight's start alone: no task ran
    assert f"{folder / 'surfaces' / 'notes.yaml'}:mcp.servers.notes: [server-matches-catalogue]" in refused.output
    assert ("lists tools that differ from catalogue notes-v1: added: archive_note; removed: write_note; input "
            "schema changed: read_note") in refused.output
    assert "Traceback" not in refused.output
    assert not (warehouse / "tooleval.duckdb").exists() and not list(warehouse.glob("task_runs/*"))
    line = refused.output.split("with `", 1)[1].split("`", 1)[0]
    assert line.startswith(f"tooleval import mcp notes --taskset {folder} ")
    assert main(shlex.split(line)[1:]) == 0  # the line as printed records the server's tools as they are now
    recorded = capsys.readouterr().out
    assert "wrote: catalogues/notes-v2.json" in recorded and "tools added: archive_note" in recorded
    assert "tools removed: write_note" in recorded and "schemas edited: read_note" in recorded
    assert not server_processes(SERVER)


@pytest.mark.slow
def test_a_server_that_agrees_is_started_once_a_run_and_not_again_by_the_flow(tmp_path):
    folder, counter = notes_taskset(tmp_path, drift_after=-1)
    prepared = prepare_run(folder / "experiments" / "run.yaml", checked=False)
    check_pinned_servers(prepared)
    check_pinned_servers(prepared)  # the evaluate flow's repeat of the CLI's check, in the same process
    assert starts(counter) == 1
    check_pinned_servers(prepare_run(folder / "experiments" / "run.yaml", checked=False))  # another run: again
    assert starts(counter) == 2


@pytest.mark.slow
def test_a_server_that_changes_mid_run_leaves_its_arm_not_judged_with_the_reason_in_every_format(tmp_path):
    from tasks.report.render import render_html, render_markdown, render_text

    # the preflight's start and the first three tasks' see notes-v1; the fourth task's start sees a new server
    folder, counter = notes_taskset(tmp_path, drift_after=4)
    check_pinned_servers(prepare_run(folder / "experiments" / "run.yaml", checked=False))
    published = run_plain(folder / "experiments" / "run.yaml", tmp_path / "wh")
    assert starts(counter) == 5
    con = duckdb.connect(str(tmp_path / "wh" / "tooleval.duckdb"), read_only=True)
    try:
        runs = con.execute("SELECT task_id, stop_reason, detail FROM task_runs ORDER BY task_id").fetchall()
    finally:
        con.close()
    drifted = [r for r in runs if r[1] == "surface_error"]
    assert len(runs) == 4 and len(drifted) == 1, runs
    assert "MCP server 'notes'" in drifted[0][2] and "differ from catalogue notes-v1: added: archive_note" in drifted[0][2]
    assert "tooleval import mcp notes --taskset" in drifted[0][2]
    # 1 of 4 runs not carried out is not a majority: the arm is not judged because its surface changed under it
    verdict = published.verdict
    assert verdict.status == "NOT JUDGED" and verdict_exit_code(verdict) == EXIT_NOT_JUDGED
    (floor,) = verdict.gates
    assert floor.status == "NOT JUDGED" and list(floor.not_judged) == ["A"]
    reason = "NOT JUDGED A: 1 of 4 task runs met an MCP server that changed during the run"
    assert floor.not_judged["A"].startswith("1 of 4 task runs met an MCP server that changed during the run")
    for text in (render_text(published.report, width=200), render_markdown(published.report),
                 render_html(published.report)):
        assert reason in text and "lists tools that differ from catalogue notes-v1" in text
        assert "NOT JUDGED (" in text  # the success tables print no rate for A
    success = next(t for t in published.report.tables if t.key == "success")
    (row,) = success.rows
    assert row[4].startswith("NOT JUDGED (") and row[4].endswith("/4)") and row[5] == "—"
    assert not server_processes(SERVER)


@pytest.mark.slow
def test_mcp_server_git_that_drifted_from_git_v1_is_refused_before_any_task(tmp_path):
    """The case on the PyPI server the project pins (tasksets/mcp_git): a catalogue git-v1 as an older
    mcp-server-git listed it (with git_init). The server is started in the state of the first task (a
    repository: it refuses a folder that is not one), once for both surfaces that run it."""
    folder = tmp_path / "mcp_git"
    shutil.copytree(ROOT / "tasksets" / "mcp_git", folder, ignore=shutil.ignore_patterns("__pycache__"))
    relative = "{taskset_dir}/../../.venv/bin/mcp-server-git"
    for surface in sorted((folder / "surfaces").glob("*.yaml")):
        assert relative in surface.read_text()
        surface.write_text(surface.read_text().replace(relative, str(ROOT / ".venv" / "bin" / "mcp-server-git")))
    path = folder / "catalogues" / "git-v1.json"
    catalogue = json.loads(path.read_text())
    catalogue["tools"].append({"name": "git_init", "description": "Initialize a new Git repository", "parameters": {
        "type": "object", "properties": {"repo_path": {"type": "string"}}, "required": ["repo_path"]}})
    path.write_text(json.dumps(catalogue))
    prepared = prepare_run(folder / "experiments" / "four_arms.yaml", checked=False)
    with pytest.raises(InputError) as refused:
        check_pinned_servers(prepared)
    (problem,) = refused.value.problems  # one server behind both surfaces: started and reported once
    assert problem.rule == "server-matches-catalogue" and problem.where == "mcp.servers.git"
    assert "lists tools that differ from catalogue git-v1: removed: git_init." in problem.message
    assert f"arm(s) {', '.join(arm.name for arm in prepared.experiment.arms)} run on it" in problem.message
    assert f"`tooleval import mcp git --taskset {folder} " in problem.message


# -- a server whose stdout is not JSON-RPC --------------------------------------------------------------------

GARBAGE = """\
import sys
for i in range(50):
    print(f"starting up... step {i}", flush=True)
for line in sys.stdin:
    print("got: " + line.strip()[:30], flush=True)
"""


@pytest.mark.slow
def test_a_server_writing_text_on_stdout_is_one_message_within_seconds(tmp_path, capfd):
    from tasks.surface.load_mcp_surface import served_tools

    script = tmp_path / "chatty.py"
    script.write_text(GARBAGE)
    server = SurfaceServer(command=sys.executable, args=(str(script),))
    started = time.perf_counter()
    with pytest.raises(InputError) as refused:
        served_tools(tmp_path, "chatty", server, (), "surfaces/chatty.yaml")
    seconds = time.perf_counter() - started
    message = str(refused.value)
    assert seconds < 15, seconds  # the handshake's limit is 30 s; measured ~5 s (3 s of grace after the line)
    assert f"MCP server 'chatty' ({sys.executable} {script})" in message
    assert "wrote a line on stdout that is not JSON-RPC: 'starting up... step 0'" in message
    assert "Traceback" not in capfd.readouterr().err  # not one traceback per line from the SDK


@pytest.mark.slow
def test_a_banner_before_the_server_answers_is_let_go(tmp_path, monkeypatch):
    # the server imports the MCP SDK after its banner, which takes seconds on a loaded machine: the connection
    # waits for its first answer with a deadline far above that, so what is checked is that the banner is let go
    monkeypatch.setattr(mcp_connection, "STDOUT_GRACE_S", PATIENT_S)
    script = tmp_path / "banner.py"
    script.write_text(f"import runpy, sys\nprint('notes server ready', flush=True)\n"
                      f"sys.argv = [{str(SERVER)!r}, {str(tmp_path / 'n.txt')!r}, '-1']\n"
                      f"runpy.run_path({str(SERVER)!r}, run_name='__main__')\n")
    connection = ServerConnection(McpServer(command=sys.executable, args=(str(script),)), base_dir=tmp_path)
    try:
        connection.start(timeout_s=PATIENT_S)
        assert sorted(t.name for t in connection.list_tools(timeout_s=PATIENT_S)) == ["read_note", "write_note"]
        assert connection.not_json_rpc == "notes server ready"
    except ServerFailed as failed:
        pytest.fail(f"a banner line failed the server: {failed}")
    finally:
        connection.close()


PRINTING_SERVER = """\
import json, sys, time

# A hand-written MCP server over stdio (as a server in another language is): it answers the handshake and
# tools/list, and on tools/call writes a debug line on stdout (console.log in a Node server) and never answers.
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "printer", "version": "1"}}
    elif message["method"] == "tools/list":
        result = {"tools": [{"name": "chatty", "description": "Prints, then hangs.",
                             "inputSchema": {"type": "object", "properties": {}}}]}
    elif message["method"] == "tools/call":
        print("debug: entering chatty", flush=True)
        time.sleep(60)
        continue
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


@pytest.mark.slow
def test_a_tool_that_prints_on_stdout_and_hangs_is_named_by_the_line_it_printed(tmp_path):
    script = tmp_path / "printer.py"
    script.write_text(PRINTING_SERVER)
    connection = ServerConnection(McpServer(command=sys.executable, args=(str(script),)), base_dir=tmp_path)
    try:
        connection.start()
        with pytest.raises(ServerFailed) as hung:
            connection.call("chatty", {}, timeout_s=3)
    finally:
        connection.close()
    assert str(hung.value) == ("hung: no answer to tools/call chatty within 3 s; it wrote a line on stdout that is "
                               "not JSON-RPC: 'debug: entering chatty'")
