"""The per-server SQL in docs/surface/mcp.md, taken from the page as written, run on the warehouse of a real
`tooleval tasks run` (the npm memory and filesystem servers; a scripted OpenAI agent on the loopback server
that calls a tool no server offers, repeats a refused call and goes on calling after its budget is spent)
gives the report's per-tool counters (view task_tool_counters): a budget-skipped call is neither a call nor
invalid, and the unknown tool is its own row under a labelled server, not NULL."""

from __future__ import annotations

import re
import textwrap

import duckdb
import pytest

from tests.drill.harness import cli_env, orphans, tooleval
from tests.factories import ROOT
from tests.provider_server import ProviderServer, Seen, text_reply, tool_call
from tests.selectors.providers.conftest import FAKE_KEY
from tests.surface.mcp_office import CRM, write_office

pytestmark = pytest.mark.slow

DOC = ROOT / "docs" / "surface" / "mcp.md"
SCRIPT = [tool_call("open_nodes", {"names": ["Acme"]}),
          tool_call("no_such_tool", {}),  # offered by no server
          tool_call("read_text_file", {"path": "missing.txt"}),  # refused by the server: an error
          tool_call("read_text_file", {"path": "missing.txt"}),  # the same again: a retry, an error
          tool_call("open_nodes", {"names": ["Globex"]}),  # the budget (4 calls) is spent: never sent
          text_reply("Acme is on enterprise.")]
TASKS = [{"id": f"plan-{n}", "request": f"What plan is Acme on? ({n})", "slice": "crm", "intent": "open_nodes",
          "fixtures": {"files": {"memory.jsonl": CRM}}, "assert": {"tool": "open_nodes"},
          "budget": {"max_calls": 4}} for n in range(2)]


def per_server_sql() -> str:
    """The SQL block of the page's per-server paragraph, as a reader copies it."""
    text = DOC.read_text()
    blocks = re.findall(r"per server, in SQL.*?```sql\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1, "the per-server SQL block of docs/surface/mcp.md"
    return blocks[0]


def scripted(seen: Seen):
    return SCRIPT[min(seen.turn, len(SCRIPT) - 1)]


def test_the_docs_per_server_sql_gives_the_reports_per_tool_counters(tmp_path):
    with ProviderServer(scripted, api_key=FAKE_KEY) as server:
        folder = write_office(tmp_path, TASKS, experiment=textwrap.dedent(f"""\
            name: docs-sql
            taskset: ..
            version: t1
            seeds: [1]
            declared: {{few_seeds: "the docs' SQL against the report"}}
            batch_size: 2
            arms:
              - {{name: A, surface: both, prompt: default, agent: openai, model: gpt-4.1-mini-2025-04-14,
                 options: {{base_url: "{server.openai_url}", concurrency: 1}}}}
            """))
        warehouse = tmp_path / "wh"
        run = tooleval(["tasks", "run", str(folder / "experiments" / "run.yaml"), "--warehouse", str(warehouse)],
                       cli_env(tmp_path / "prefect", OPENAI_API_KEY=FAKE_KEY), tmp_path, "run")
    assert run.returncode in (0, 1), run.output[-3000:]  # a verdict, whichever it is
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        docs = con.execute(per_server_sql()).fetchall()
        report = con.execute(
            "SELECT tool, calls, invalid, errors, retries, irreversible_actions, upstream_reads FROM task_tool_counters "
            "WHERE run_id = (SELECT max(run_id) FROM task_experiments)").fetchall()
        skipped = con.execute("SELECT count(*) FROM task_calls WHERE skipped_budget").fetchone()[0]
    finally:
        con.close()
    assert skipped == 2  # one a task: the docs' SQL has something to leave out
    assert sorted(row[1:] for row in docs) == sorted(report)
    # the figures themselves, from the script: 2 tasks x (open_nodes, no_such_tool, 2 x read_text_file, 1 skipped)
    assert sorted(docs) == sorted([("(not offered)", "no_such_tool", 2, 2, 0, 0, 0, 0),
                                   ("files", "read_text_file", 4, 0, 4, 2, 0, 0),
                                   ("memory", "open_nodes", 2, 0, 0, 0, 0, 2)])
    assert not orphans(run)
