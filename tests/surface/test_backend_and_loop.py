"""The backend (invalid vs error, paging, marks, upstream reads, transforms) and the agent loop (retries,
budgets, parallel calls, stop reasons), with an in-process scripted agent."""

from __future__ import annotations

import json

import pytest

from schemas.surface.task import SurfaceTask
from tasks.surface.agent_loop import retry_key, run_task
from tasks.surface.agent_types import ProposedCall
from tasks.surface.execute_call import execute_call
from tasks.surface.load_surface import load_surface
from tasks.surface.load_tasks import load_task_version
from tests.surface.scripted_agent import ScriptedAgent, calls, say
from tests.surface.tiny_desk import TICKETS, write_desk


@pytest.fixture
def desk(tmp_path):
    folder = write_desk(tmp_path)
    return folder, load_task_version(folder, "t1"), load_surface(folder, "plain")


def fresh(surface):
    """A session on a fresh state: ``.toolkit`` is the toolkit instance the calls run on."""
    return surface.backend.open({"tickets": TICKETS})


def run(call, surface, session):
    fields, result = execute_call(surface, session, ProposedCall("c1", *call))
    return fields, result


def test_invalid_calls_never_reach_the_backend_and_error_calls_do(desk):
    _, _, surface = desk
    session = fresh(surface)
    toolkit = session.toolkit
    before = toolkit.state.model_dump()
    for call, reason in [(("send_email", "{}"), "tool 'send_email' is not offered"),
                         (("close_ticket", '{"ticket_id": "1002"}'), "does not match"),
                         (("close_ticket", '{"ticket_id": "T-1002", "force": true}'), "Additional properties"),
                         (("close_ticket", "{not json"), "not JSON"),
                         (("close_ticket", "[1]"), "not a JSON object")]:
        fields, result = run(call, surface, session)
        assert not fields["valid"] and not fields["executed"] and not fields["error"], call
        assert reason in fields["invalid_reason"] and fields["upstream_reads"] == 0
        assert result.is_error and "invalid call, not executed" in result.content
    assert toolkit.state.model_dump() == before and toolkit.upstream_reads == 0

    fields, result = run(("close_ticket", {"ticket_id": "T-9999"}), surface, session)  # Anthropic-style object
    assert fields["valid"] and fields["executed"] and fields["error"] and fields["error_detail"] == "no ticket T-9999"
    assert json.loads(result.content) == {"error": "no ticket T-9999"} and fields["upstream_reads"] == 1
    fields, result = run(("broken_report", '{"ticket_id": "T-1001"}'), surface, session)
    assert fields["error"] and fields["error_detail"].startswith("backend failed: ZeroDivisionError")
    fields, result = run(("close_ticket", '{"ticket_id": "T-1002"}'), surface, session)
    assert fields["valid"] and not fields["error"] and toolkit.state.tickets["T-1002"].status == "closed"
    assert not fields["irreversible"] and not fields["handoff"]
    fields, _ = run(("escalate_ticket", '{"ticket_id": "T-1001", "reason": "urgent"}'), surface, session)
    assert fields["irreversible"] and fields["handoff"]
    fields, _ = run(("escalate_ticket", '{"ticket_id": "T-4040", "reason": "urgent"}'), surface, session)
    assert fields["error"] and not fields["irreversible"]  # a refused irreversible call did nothing


def test_results_page_and_each_page_is_an_upstream_read(desk):
    _, _, surface = desk
    session = fresh(surface)
    toolkit = session.toolkit
    first, result = run(("list_tickets", '{"owner": "ana@acme.example"}'), surface, session)
    page = json.loads(result.content)
    assert page["has_more"] and page["next_cursor"] == "page:2" and len(page["items"]) == 2
    assert first["result_records"] == 2 and first["upstream_reads"] == 1 and first["result_chars"] == len(result.content)
    second, result = run(("list_tickets", json.dumps({"owner": "ana@acme.example", "cursor": "page:2"})), surface, session)
    assert json.loads(result.content) == {"items": [{"ticket_id": "T-1003", "subject": "parcel late"}],
                                          "has_more": False, "next_cursor": None}
    bad, _ = run(("list_tickets", '{"owner": "ana@acme.example", "cursor": "xyz"}'), surface, session)
    assert bad["error"] and "unknown cursor" in bad["error_detail"]
    assert toolkit.upstream_reads == 2


def test_a_transform_changes_names_not_the_backend(desk):
    folder, _, _ = desk
    prefixed = load_surface(folder, "prefixed")
    assert [t.spec.name for t in prefixed.tools][:2] == ["desk.find_tickets", "desk.get_ticket"]
    toolkit = fresh(prefixed)
    fields, _ = run(("desk.get_ticket", '{"ticket_id": "T-1001"}'), prefixed, toolkit)
    assert fields["name"] == "desk.get_ticket" and fields["tool"] == "get_ticket" and fields["valid"]
    fields, _ = run(("get_ticket", '{"ticket_id": "T-1001"}'), prefixed, toolkit)
    assert not fields["valid"]  # the old name is not offered on this surface
    assert prefixed.surface_hash != load_surface(folder, "plain").surface_hash


def task_of(version, task_id: str) -> SurfaceTask:
    return next(t for t in version.tasks if t.id == task_id)


def play(desk, task_id, turns, **budget):
    _, version, surface = desk
    task = task_of(version, task_id)
    if budget:
        task = task.model_copy(update={"budget": task.budget.model_copy(update=budget)})
    agent = ScriptedAgent(lambda _: list(turns))
    outcome = run_task(agent, surface, task, version.fixtures(task), surface.specs, "prompt")
    return outcome, agent.sessions[0]


def test_a_correct_chain_succeeds_and_results_are_fed_back(desk):
    outcome, session = play(desk, "close-2", [
        calls(("list_tickets", '{"owner": "ana@acme.example"}')),
        calls(("list_tickets", '{"owner": "ana@acme.example", "cursor": "page:2"}')),
        calls(("close_ticket", '{"ticket_id": "T-1003"}')),
        say("Closed T-1003.")])
    assert outcome.success and outcome.stop_reason == "model_stop" and outcome.n_turns == 4
    assert [c.name for c in outcome.calls] == ["list_tickets", "list_tickets", "close_ticket"]
    assert [c.call_index for c in outcome.calls] == [1, 2, 3] and outcome.final_reply == "Closed T-1003."
    assert not any(c.is_retry for c in outcome.calls)  # same tool, different arguments: not a retry
    assert json.loads(session.seen[1][0].content)["items"][0]["ticket_id"] == "T-1003"


def test_retries_are_identical_calls_only(desk):
    outcome, _ = play(desk, "close-1", [
        calls(("close_ticket", '{"ticket_id": "T-9999"}')),
        calls(("close_ticket", '{ "ticket_id":"T-9999" }')),        # identical up to spacing: a retry
        calls(("close_ticket", '{"ticket_id": "T-9998"}')),         # other arguments: not a retry
        calls(("get_ticket", '{"ticket_id": "T-9999"}')),           # other tool: not a retry
        calls(("close_ticket", "{bad")), calls(("close_ticket", "{bad")),  # identical invalid text: a retry
        say("I could not close it.")])
    assert [c.is_retry for c in outcome.calls] == [False, True, False, False, False, True]
    assert sum(c.error for c in outcome.calls) == 4 and sum(not c.valid for c in outcome.calls) == 2
    assert not outcome.success and outcome.failed_assertions == ["state tickets.T-1002.status equals 'closed' (is \"open\")"]
    assert retry_key("t", '{"b": 1, "a": 2}') == retry_key("t", {"a": 2, "b": 1})


def test_the_call_budget_stops_the_loop(desk):
    outcome, session = play(desk, "close-1", [calls(("get_ticket", f'{{"ticket_id": "T-100{i}"}}')) for i in range(1, 4)]
                            + [calls(("close_ticket", '{"ticket_id": "T-1002"}'), ("get_ticket", '{"ticket_id": "T-1002"}'))],
                            max_calls=3)
    assert outcome.stop_reason == "max_calls" and not outcome.success
    assert [c.skipped_budget for c in outcome.calls] == [False, False, False, True, True]
    assert not any(c.executed for c in outcome.calls[3:])  # never executed: the ticket stayed open
    # an agent that used exactly its calls may still answer in text
    outcome, _ = play(desk, "close-1", [calls(("close_ticket", '{"ticket_id": "T-1002"}')), say("Done.")], max_calls=1)
    assert outcome.stop_reason == "model_stop" and outcome.success


def test_turn_and_token_budgets_stop_the_loop(desk):
    chatter = [calls(("get_ticket", '{"ticket_id": "T-1001"}'), tokens=400) for _ in range(10)]
    outcome, _ = play(desk, "status-1", chatter, max_turns=2)
    assert outcome.stop_reason == "max_turns" and outcome.n_turns == 2
    outcome, _ = play(desk, "status-1", chatter, max_tokens=1000)
    assert outcome.stop_reason == "max_tokens" and outcome.n_turns == 3 and outcome.input_tokens == 1200


def test_parallel_calls_run_in_order_and_all_results_go_back(desk):
    outcome, session = play(desk, "escalate-1", [
        calls(("get_ticket", '{"ticket_id": "T-1001"}'), ("escalate_ticket", '{"ticket_id": "T-1001", "reason": "urgent"}'),
              ("nope", "{}")),
        say("Escalated.")])
    assert outcome.success and [c.turn for c in outcome.calls] == [1, 1, 1]
    assert [c.irreversible for c in outcome.calls] == [False, True, False] and not outcome.calls[2].valid
    assert [r.call_id for r in session.seen[0]] == ["c0", "c1", "c2"]


def test_giving_up_and_failed_turns_are_stop_reasons(desk):
    outcome, _ = play(desk, "close-1", [say("Sorry, I cannot do that.")])
    assert outcome.stop_reason == "model_stop" and not outcome.calls and not outcome.success
    from tasks.surface.agent_types import AgentTurn
    outcome, _ = play(desk, "close-1", [calls(("close_ticket", '{"ticket_id": "T-1002"}')),
                                        AgentTurn(failed="error", detail="HTTP 500 (after 4 retries)")])
    assert outcome.stop_reason == "error" and outcome.detail.startswith("HTTP 500")
    assert outcome.success  # scored on the outcome: the ticket was closed before the provider failed
