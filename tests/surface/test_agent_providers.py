"""Hosted agents through the official SDKs against the loopback server, scripted over several turns: a
correct chain, invalid arguments, repeated identical calls, giving up, an irreversible call, the budget,
parallel calls, provider errors, the run's call cap, prefixed names on the wire, and no key anywhere."""

from __future__ import annotations

import json

import pytest

from tasks.selectors.providers.call_budget import RunLedger
from tasks.surface.agent_loop import run_task
from tasks.surface.chat_agent import ChatAgent
from tasks.surface.load_surface import load_surface
from tasks.surface.load_tasks import load_task_version
from tasks.run.result_cache import ResultCache
from tasks.surface.run_unit import OUTCOMES
from tests.provider_server import Reply, Seen, functions_text, status_reply, text_reply, tool_call
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


# -- what a real self-hosted server needs: tool_choice and the options, the assistant-turn form, text
# -- calls, no retry of a request the server blames


def closes_when_it_sees_tools(seen: Seen) -> Reply:
    """A model that calls close_ticket when the prompt holds tools (llama-cpp-python leaves them out unless a
    tool_choice is sent: ``tools_need_choice``), then says it is done."""
    if seen.turn == 0 and "close_ticket" in seen.tools:
        return tool_call("close_ticket", {"ticket_id": "T-1002"})
    return text_reply("Closed." if seen.turn else "I cannot do that here.")


CHOICE_ON_THE_WIRE = {("openai", "auto"): "auto", ("openai", "required"): "required",
                      ("anthropic", "auto"): {"type": "auto"}, ("anthropic", "required"): {"type": "any"}}


@pytest.mark.parametrize("choice", ["auto", "required"])
@pytest.mark.parametrize("kind", KINDS)
def test_tool_choice_and_the_declared_options_reach_every_turn(serve, desk, kind, choice):
    server = serve(closes_when_it_sees_tools, tools_need_choice=True)
    folder, version = desk
    task = next(t for t in version.tasks if t.id == "close-1")
    resolved = load_surface(folder, "plain")
    url = server.openai_url if kind == "openai" else server.anthropic_url
    options = {"base_url": url, **FAST_RETRIES, "tool_choice": choice, "temperature": 0.3, "max_tokens": 300}
    options.update({"provider_seed": 7, "parallel_tool_calls": False} if kind == "openai" else
                   {"api_version": "2023-06-01"})
    agent = ChatAgent(kind, MODELS[kind], options, RunLedger(None, "test-run"))
    outcome = run_task(agent, resolved, task, version.fixtures(task), resolved.specs, "You run the help desk.")
    assert outcome.success and [c.name for c in outcome.calls] == ["close_ticket"], outcome.final_reply
    seen = server.requests(kind)
    assert len(seen) == 2 and all(s.tool_choice_sent for s in seen)
    for request in seen:
        body = request.body
        assert body["tool_choice"] == CHOICE_ON_THE_WIRE[kind, choice] and body["temperature"] == 0.3
        if kind == "openai":
            assert body["seed"] == 7 and body["max_completion_tokens"] == 300 and body["parallel_tool_calls"] is False
        else:
            assert body["max_tokens"] == 300 and request.anthropic_version == "2023-06-01"


def test_without_tool_choice_nothing_is_sent_and_such_a_server_sees_no_tools(serve, desk):
    server = serve(closes_when_it_sees_tools, tools_need_choice=True)
    outcome = play(desk, server, "openai", "close-1")
    assert "tool_choice" not in server.requests("openai")[0].body
    assert outcome.stop_reason == "model_stop" and outcome.calls == [] and not outcome.success


def test_an_assistant_turn_that_only_calls_tools_is_sent_as_every_server_accepts_it(serve, desk):
    """llama-cpp-python answers "content": null with HTTP 500 (``refuse_null_content``): the turn carries ""."""
    server = serve(by_turn(tool_call("close_ticket", {"ticket_id": "T-1002"}), text_reply("Closed.")),
                   refuse_null_content=True)
    outcome = play(desk, server, "openai", "close-1")
    assert outcome.success and outcome.stop_reason == "model_stop", outcome.detail
    first, second = server.requests("openai")
    assistant = second.body["messages"][-2]
    assert assistant["role"] == "assistant" and assistant["content"] == "" and assistant["tool_calls"]


BLAMES_THE_REQUEST = [
    status_reply(400, error_message="messages.2: bad shape"),
    status_reply(422, error_message="Unprocessable entity"),
    status_reply(500, error_message="1 validation error for CreateChatCompletionRequest\nmessages.2.typed-dict.content\n"
                                    "  Input should be a valid string [type=string_type, input_value=None]"),
]


@pytest.mark.parametrize("reply", BLAMES_THE_REQUEST, ids=["400", "422", "500-validation"])
@pytest.mark.parametrize("kind", KINDS)
def test_an_error_that_blames_the_request_is_sent_once(serve, desk, kind, reply):
    server = serve(lambda seen: reply)
    outcome = play(desk, server, kind, "close-1")
    assert outcome.stop_reason == "error" and outcome.provider_retries == 0
    assert len(server.requests(kind)) == 1 and str(reply.status) in outcome.detail


@pytest.mark.parametrize("kind", KINDS)
def test_a_tool_call_written_as_text_is_an_invalid_call_and_ends_the_run(serve, desk, kind):
    server = serve(lambda seen: functions_text("close_ticket"))
    outcome = play(desk, server, kind, "close-1")
    assert outcome.stop_reason == "text_call" and not outcome.success and outcome.n_turns == 1
    (call,) = outcome.calls
    assert call.as_text and not call.valid and not call.executed and call.name == call.tool == "close_ticket"
    assert call.invalid_reason.startswith("tool call written as text (functions.close_ticket:")
    assert len(server.requests(kind)) == 1


def test_a_text_call_under_a_wire_name_maps_back_and_unnamed_markup_keeps_its_markup(serve, desk):
    server = serve(by_turn(tool_call("desk_get_ticket", {"ticket_id": "T-1001"}),
                           text_reply('<tool_call>\n{"name": "desk_close_ticket", "arguments": {}}\n</tool_call>')))
    outcome = play(desk, server, "openai", "status-1", surface="prefixed")
    assert [(c.name, c.tool, c.as_text) for c in outcome.calls] == [
        ("desk.get_ticket", "get_ticket", False), ("desk.close_ticket", "close_ticket", True)]
    server = serve(lambda seen: text_reply("[TOOL_CALLS] nothing readable"))
    (call,) = play(desk, server, "openai", "status-1").calls
    assert call.as_text and call.name == "[TOOL_CALLS]" and call.tool is None


def test_a_run_whose_every_reply_is_a_text_call_reads_all_invalid_as_text(tmp_path, monkeypatch):
    """Through the functions the evaluate flow wraps, into the warehouse and the report: 100% invalid, as text."""
    import duckdb

    from tests.provider_server import ProviderServer
    from tests.surface.plain_run import run_plain
    from tests.surface.tiny_desk import hosted_desk_experiment

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with ProviderServer(lambda seen: functions_text(seen.tools[0]), api_key=FAKE_KEY) as server:
        folder = write_desk(tmp_path, experiment=hosted_desk_experiment(server.openai_url, "a text-call test"))
        published = run_plain(folder / "experiments" / "four.yaml", tmp_path / "wh")
    con = duckdb.connect(str(tmp_path / "wh" / "tooleval.duckdb"), read_only=True)
    runs = con.execute("SELECT DISTINCT stop_reason, n_calls, invalid_calls, text_calls FROM task_runs").fetchall()
    totals = con.execute("SELECT arm, calls, invalid, invalid_rate, as_text, as_text_rate FROM task_call_totals "
                         "ORDER BY arm").fetchall()
    tools = con.execute("SELECT bool_and(as_text = calls AND invalid = calls), sum(as_text) FROM task_tool_counters"
                        ).fetchone()
    con.close()
    assert runs == [("text_call", 1, 1, 1)]
    assert [row[0] for row in totals] == ["A", "C"]
    assert all(calls > 0 and invalid == as_text == calls and rate == as_rate == 1.0
               for _, calls, invalid, rate, as_text, as_rate in totals)
    assert tools == (True, sum(row[1] for row in totals))
    table = next(t for t in published.report.tables if t.key == "tools-A")
    assert "as text" in table.columns and table.rows[-1][0] == "(all tools)"
    assert table.rows[-1][table.columns.index("as text")] == table.rows[-1][table.columns.index("calls")]


def test_hosted_outcomes_cached_under_another_request_form_are_not_served(desk, monkeypatch):
    """Outcomes cached before tool_choice was sent and text calls were read were measured under another request
    and reading: the hosted arm's task key changes with HOSTED_AGENT_WIRE; the baseline's does not."""
    from types import SimpleNamespace

    from tasks.surface import run_unit

    hosted = SimpleNamespace(agent="openai", model_id=MODELS["openai"], options={"tool_choice": "auto"},
                             prompt_text="p", reads_prompt=True)
    baseline = SimpleNamespace(agent="baseline", model_id="bm25", options={}, prompt_text="p", reads_prompt=False)
    before = run_unit.agent_fingerprint(hosted), run_unit.agent_fingerprint(baseline)
    monkeypatch.setattr(run_unit, "HOSTED_AGENT_WIRE", "another form")
    after = run_unit.agent_fingerprint(hosted), run_unit.agent_fingerprint(baseline)
    assert before[0] != after[0] and before[1] == after[1]
    # the baseline's key holds how it fills arguments (it reads the task's fixtures)
    assert before[1] == run_unit.digest(["baseline", "bm25", {}, None, run_unit.BASELINE_FILLING])
    assert before[1] != run_unit.digest(["baseline", "bm25", {}, None])


@pytest.mark.parametrize("drops", [False, True], ids=["renders-results", "drops-results"])
def test_a_server_whose_prompt_does_not_grow_by_the_tool_results_is_caught(serve, desk, drops):
    """llama-cpp-python's chatml-function-calling template has no branch for role: tool: the results never
    reach the model, and its prompt grows only by the assistant's call (``drop_tool_results``)."""
    chain = by_turn(tool_call("list_tickets", {"owner": "ana@acme.example"}),
                    tool_call("list_tickets", {"owner": "ana@acme.example", "cursor": "page:2"}),
                    tool_call("close_ticket", {"ticket_id": "T-1003"}), text_reply("I closed T-1003 for you."))
    outcome = play(desk, serve(chain, drop_tool_results=drops), "openai", "close-2")
    assert outcome.success and outcome.n_turns == 4  # the scripted replies do not need the results
    # three turns follow results: two pages of tickets, then close_ticket's short reply (too short to judge)
    assert outcome.results_unseen_turns == (2 if drops else 0)


def test_a_hosted_agent_refuses_the_options_that_choose_one_tool():
    from tasks.surface.arms import agent_problems

    problems, _ = agent_problems("openai", MODELS["openai"], {"route": "gated", "judge": {"model": "x"}})
    assert problems == [("option-known", "judge, route choose one tool for a selection; an agent runs the task")]
    assert agent_problems("anthropic", MODELS["anthropic"], {})[0] == []
