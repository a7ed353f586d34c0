"""Hosted agents (OpenAI, Anthropic, through the official SDKs against the loopback server) doing a task on a
surface of the REAL reference MCP servers: tool names on the wire, the servers' answers fed back as the
tool results, a refusal as an error result, and the end state read back through the server."""

from __future__ import annotations

import pytest

from schemas.surface.task import SurfaceTask
from tasks.selectors.providers.call_budget import RunLedger
from tasks.surface.agent_loop import run_task
from tasks.surface.chat_agent import ChatAgent
from tasks.surface.load_surface import load_surface
from tasks.surface.mcp_backend import close_pools
from tests.provider_server import text_reply, tool_call
from tests.selectors.providers.conftest import FAKE_KEY, FAST_RETRIES, MODELS, NOWHERE, ServerFactory
from tests.surface.mcp_office import CRM, write_office
from tests.surface.test_agent_providers import by_turn

KINDS = ["openai", "anthropic"]

TASK = SurfaceTask.model_validate({
    "id": "renewal", "slice": "cross", "request": "Read contracts/acme.txt and note Acme's renewal date on Acme.",
    "fixtures": {"files": {"memory.jsonl": CRM, "files/contracts/acme.txt": "Renewal date: 2027-03-01."}},
    "assert": {"tool": "read_text_file", "not_called": ["delete_entities"], "probes": [
        {"probe": {"tool": "open_nodes", "args": {"names": ["Acme"]}}, "path": "entities.Acme.observations",
         "contains": "renews 2027-03-01"}]}})


@pytest.fixture(autouse=True)
def provider_env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{NOWHERE}/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", NOWHERE)


@pytest.fixture
def serve():
    factory = ServerFactory()
    yield factory
    for server in factory.servers:
        server.__exit__(None, None, None)
    close_pools()


@pytest.mark.parametrize("kind", KINDS)
def test_a_hosted_agent_reads_a_file_and_records_it_in_the_graph(serve, tmp_path, kind):
    server = serve(by_turn(
        tool_call("read_text_file", {"path": "contracts/missing.txt"}),             # refused by the server
        tool_call("read_text_file", {"path": "contracts/acme.txt"}),
        tool_call("add_observations", {"observations": [{"entityName": "Acme", "contents": ["renews 2027-03-01"]}]}),
        text_reply("Noted: Acme renews on 2027-03-01.")))
    surface = load_surface(write_office(tmp_path), "both")
    url = server.openai_url if kind == "openai" else server.anthropic_url
    agent = ChatAgent(kind, MODELS[kind], {"base_url": url, **FAST_RETRIES}, RunLedger(None, "test-run"))
    outcome = run_task(agent, surface, TASK, dict(TASK.fixtures), surface.specs, "You keep the office's records.")
    assert outcome.success and outcome.stop_reason == "model_stop", outcome.failed_assertions
    missing, read, noted = outcome.calls
    assert missing.error and "ENOENT" in missing.error_detail and missing.server == "files"
    assert read.server == "files" and not read.error and noted.server == "memory" and not noted.irreversible
    seen = server.requests(kind)
    refusal, refused = seen[1].tool_results[0]
    assert "ENOENT" in refusal and (refused or kind == "openai")  # OpenAI's tool messages carry no error flag
    content, is_error = seen[2].tool_results[0]
    assert content == "Renewal date: 2027-03-01." and not is_error  # the server's text, as it gave it
    offered = {t["function"]["name"] if kind == "openai" else t["name"] for t in seen[0].body["tools"]}
    assert {"read_text_file", "add_observations", "open_nodes"} <= offered and len(offered) == 23
