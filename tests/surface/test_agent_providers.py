"""Hosted agents through the official SDKs against the loopback server, scripted over several turns: a
correct chain, invalid arguments, repeated identical calls, giving up, an irreversible call, the budget,
parallel calls, provider errors, the run's call cap, prefixed names on the wire, and no key anywhere."""

from __future__ import annotations

import json

import pytest

from tasks.selectors.call_budget import RunLedger
from tasks.surface.agent_loop import run_task
from tasks.surface.chat_agent import ChatAgent
from tasks.surface.load_surface import load_surface
from tasks.surface.load_tasks import load_task_version
from tasks.run.result_cache import ResultCache
from tasks.surface.run_unit import OUTCOMES
from tests.provider_server import Reply, Seen, status_reply, text_reply, tool_call
from tests.selectors.providers.conftest import FAKE_KEY, FAST_RETRIES, MODELS, NOWHERE, ServerFactory
from tests.surface.tiny_desk import write_desk

KINDS = ["openai", "anthropic"]


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


@pytest.fixture(scope="module")
def desk(tmp_path_factory):
    folder = write_desk(tmp_path_factory.mktemp("desk"))
    return folder, load_task_version(folder, "t1")


def play(desk, server, kind, task_id, surface="plain", ledger=None, **budget):
    folder, version = desk
    task = next(t for t in version.tasks if t.id == task_id)
    if budget:
        task = task.model_copy(update={"budget": task.budget.model_copy(update=budget)})
    url = server.openai_url if kind == "openai" else server.anthropic_url
    resolved = load_surface(folder, surface)
    ledger = ledger or RunLedger(None, "test-run")
    agent = ChatAgent(kind, MODELS[kind], {"base_url": url, **FAST_RETRIES}, ledger)
    return run_task(agent, resolved, task, version.fixtures(task), resolved.specs, "You run the help desk.")


def by_turn(*replies: Reply):
    def script(seen: Seen) -> Reply:
        return replies[min(seen.turn, len(replies) - 1)]
    return script


@pytest.mark.parametrize("kind", KINDS)
def test_a_correct_chain_over_several_turns(serve, desk, kind):
    server = serve(by_turn(tool_call("list_tickets", {"owner": "ana@acme.example"}),
                           tool_call("list_tickets", {"owner": "ana@acme.example", "cursor": "page:2"}),
                           tool_call("close_ticket", {"ticket_id": "T-1003"}),
                           text_reply("I closed T-1003 for you.")))
    outcome = play(desk, server, kind, "close-2")
    assert outcome.success and outcome.stop_reason == "model_stop" and outcome.n_turns == 4
    assert [c.name for c in outcome.calls] == ["list_tickets", "list_tickets", "close_ticket"]
    assert outcome.final_reply == "I closed T-1003 for you." and outcome.served_model_id == MODELS[kind]
    assert outcome.input_tokens > 0 and outcome.output_tokens == 48 and outcome.cost_usd > 0
    seen = server.requests(kind)
    assert [s.turn for s in seen] == [0, 1, 2, 3] and all(s.authorized for s in seen)
    page = json.loads(seen[1].tool_results[0][0])
    assert page["has_more"] and page["next_cursor"] == "page:2" and not seen[1].tool_results[0][1]
    assert seen[3].calls_so_far[2][0] == "close_ticket" and seen[3].user_text.startswith("I'm ana@acme.example")
    if kind == "openai":  # each tool result answers the call id it belongs to
        messages = seen[1].body["messages"]
        assert messages[-2]["tool_calls"][0]["id"] == messages[-1]["tool_call_id"]
        assert seen[0].body["tools"][0]["function"]["name"] in {"list_tickets", "get_ticket", "close_ticket",
                                                                 "escalate_ticket", "broken_report"}
    else:
        results = seen[1].body["messages"][-1]["content"]
        assert results[0]["type"] == "tool_result" and results[0]["tool_use_id"] == "toolu_0"


@pytest.mark.parametrize("kind", KINDS)
def test_invalid_arguments_go_back_as_an_error_and_can_be_fixed(serve, desk, kind):
    server = serve(by_turn(tool_call("close_ticket", {"ticket_id": "1002"}),
                           tool_call("close_ticket", {"ticket_id": "T-1002"}), text_reply("Closed.")))
    outcome = play(desk, server, kind, "close-1")
    assert outcome.success and [c.valid for c in outcome.calls] == [False, True]
    assert "does not match" in outcome.calls[0].invalid_reason and not outcome.calls[0].executed
    content, is_error = server.requests(kind)[1].tool_results[0]
    assert is_error and "invalid call, not executed" in content


@pytest.mark.parametrize("kind", KINDS)
def test_repeated_identical_calls_are_retries_and_giving_up_stops(serve, desk, kind):
    server = serve(by_turn(*[tool_call("get_ticket", {"ticket_id": "T-9999"})] * 3,
                           text_reply("Sorry, I cannot find that ticket.")))
    outcome = play(desk, server, kind, "status-1")
    assert [c.is_retry for c in outcome.calls] == [False, True, True]
    assert all(c.error and c.error_detail == "no ticket T-9999" for c in outcome.calls)
    assert outcome.stop_reason == "model_stop" and not outcome.success


@pytest.mark.parametrize("kind", KINDS)
def test_irreversible_calls_and_hand_offs_are_marked(serve, desk, kind):
    server = serve(by_turn(tool_call("escalate_ticket", {"ticket_id": "T-1001", "reason": "checkout down"}),
                           text_reply("Escalated.")))
    outcome = play(desk, server, kind, "escalate-1")
    (call,) = outcome.calls
    assert outcome.success and call.irreversible and call.handoff


@pytest.mark.parametrize("kind", KINDS)
def test_the_call_budget_stops_an_agent_that_keeps_calling(serve, desk, kind):
    server = serve(lambda seen: tool_call("get_ticket", {"ticket_id": "T-1001"}))
    outcome = play(desk, server, kind, "status-1", max_calls=3)
    assert outcome.stop_reason == "max_calls" and outcome.n_turns == 4
    assert [c.skipped_budget for c in outcome.calls] == [False, False, False, True]
    assert len(server.requests(kind)) == 4


@pytest.mark.parametrize("kind", KINDS)
def test_parallel_calls_are_all_executed_and_answered(serve, desk, kind):
    server = serve(by_turn(Reply(tool="get_ticket", arguments={"ticket_id": "T-1002"},
                                 extra_calls=(("close_ticket", {"ticket_id": "T-1002"}),)),
                           text_reply("Closed it.")))
    outcome = play(desk, server, kind, "close-1")
    assert outcome.success and [c.turn for c in outcome.calls] == [1, 1]
    assert len(server.requests(kind)[1].tool_results) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_a_provider_error_stops_the_run_and_is_never_cached(serve, desk, kind, tmp_path):
    server = serve(by_turn(tool_call("close_ticket", {"ticket_id": "T-1002"}), status_reply(500)))
    outcome = play(desk, server, kind, "close-1")
    assert outcome.stop_reason == "error" and "500" in outcome.detail and outcome.provider_retries == 4
    assert outcome.success  # scored on the outcome: the close happened before the provider failed
    with ResultCache(tmp_path / "cache.sqlite", OUTCOMES) as cache:
        assert not cache.put("k", outcome) and cache.get_many(["k"]) == {}


@pytest.mark.parametrize("kind", KINDS)
def test_an_empty_reply_stops_the_run(serve, desk, kind):
    server = serve(by_turn(Reply(empty=True)))
    outcome = play(desk, server, kind, "close-1")
    assert outcome.stop_reason == "empty_reply" and outcome.detail == "empty reply: no tool call, no text"


def test_the_runs_call_cap_stops_the_run_cleanly(serve, desk):
    server = serve(lambda seen: tool_call("get_ticket", {"ticket_id": "T-1001"}))
    with RunLedger(None, "capped", max_calls=2) as ledger:
        outcome = play(desk, server, "openai", "status-1", ledger=ledger)
    assert outcome.stop_reason == "run_budget" and outcome.detail == "budget reached" and outcome.n_turns == 3
    assert len(server.requests("openai")) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_prefixed_names_travel_as_wire_names_and_map_back(serve, desk, kind):
    server = serve(by_turn(tool_call("desk_get_ticket", {"ticket_id": "T-1001"}), tool_call("get_ticket", {}),
                           text_reply("It is open.")))
    outcome = play(desk, server, kind, "status-1", surface="prefixed")
    first, second = outcome.calls
    assert first.name == "desk.get_ticket" and first.tool == "get_ticket" and first.valid
    assert second.name == "get_ticket" and not second.valid  # the wire name of no offered tool
    assert "desk_find_tickets" in server.requests(kind)[0].tools and outcome.success
    assert FAKE_KEY not in outcome.model_dump_json()
