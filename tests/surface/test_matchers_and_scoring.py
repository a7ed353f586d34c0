"""Matchers (equals, contains, regex, one_of, absent), state paths, and scoring on the outcome."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from schemas.surface.rows import CallRecord
from schemas.surface.task import Assertion, Matcher, StateAssertion, SurfaceTask
from tasks.surface.score_task import _MISSING, matches, score_outcome, value_at


def m(value):
    return Matcher.model_validate(value)


@pytest.mark.parametrize("matcher, value, expected", [
    ("ap@acme.example", "ap@acme.example", True),          # a literal means equality
    ("ap@acme.example", "AP@acme.example", False),
    ({"equals": 3}, 3, True),
    ({"equals": {"a": 1}}, {"a": 1}, True),                # equals compares whole objects
    ({"contains": "in_4c19"}, "https://x/in_4c19.pdf", True),
    ({"contains": "in_4c19"}, "https://x/in_4c20.pdf", False),
    ({"contains": "b"}, ["a", "b"], True),                 # element of a list
    ({"regex": r"^T-\d{4}$"}, "T-1042", True),
    ({"regex": r"^T-\d{4}$"}, "T-104", False),
    ({"regex": "x"}, 5, False),                            # a regex never matches a non-string
    ({"one_of": ["low", "normal"]}, "normal", True),
    ({"one_of": ["low", "normal"]}, "urgent", False),
    ({"absent": True}, _MISSING, True),
    ({"absent": True}, None, True),
    ({"absent": True}, "x", False),
    ({"contains": "x"}, _MISSING, False),
])
def test_matchers(matcher, value, expected):
    assert matches(m(matcher), value) is expected


@pytest.mark.parametrize("bad", [{"regex": "("}, {"one_of": []}, {"absent": False}, {"contains": {"a": 1}}])
def test_a_malformed_matcher_is_refused(bad):
    with pytest.raises(ValidationError):
        m(bad)


def test_matchers_serialise_as_written():
    assertion = Assertion.model_validate({"tool": "send_email", "args": {"to": "ap@acme.example",
                                                                         "attachment_url": {"contains": "in_4c19"}}})
    dumped = assertion.model_dump(mode="json", exclude_defaults=True)
    assert dumped["args"] == {"to": {"equals": "ap@acme.example"}, "attachment_url": {"contains": "in_4c19"}}
    assert Assertion.model_validate(dumped) == assertion


def test_the_issue_example_parses():
    task = SurfaceTask.model_validate({
        "id": "t_041", "request": "Email Acme their most recent unpaid invoice.", "slice": "billing",
        "fixtures": {"customer": "c_8f2a", "open_invoices": 27},
        "assert": {"tool": "send_email", "args": {"to": "ap@acme.example", "attachment_url": {"contains": "in_4c19"}}},
        "budget": {"max_calls": 12}})
    assert task.text.startswith("Email Acme") and task.budget.max_calls == 12 and task.budget.turns == 13
    (call,) = task.assertion.required_calls
    assert call.tool == "send_email" and call.args["attachment_url"].kind == "contains"


def test_state_paths_walk_keys_indexes_and_record_ids():
    state = {"tickets": {"T-9": {"status": "closed"}}, "log": [{"id": "e1", "kind": "page"}, {"id": "e2"}]}
    assert value_at(state, ["tickets", "T-9", "status"]) == "closed"
    assert value_at(state, ["log", "0", "kind"]) == "page"
    assert value_at(state, ["log", "e2", "id"]) == "e2"
    assert value_at(state, ["tickets", "T-1"]) is _MISSING
    assert StateAssertion.model_validate({"path": "tickets.T-9.status", "equals": "closed"}).parts == ["tickets", "T-9", "status"]
    with pytest.raises(ValidationError):
        StateAssertion.model_validate({"path": "a", "equals": 1, "contains": "x"})


def call(tool: str, arguments: str, *, executed: bool = True, error: bool = False, valid: bool = True) -> CallRecord:
    return CallRecord(call_index=1, turn=1, name=tool, tool=tool, arguments=arguments, valid=valid, executed=executed,
                      error=error, result_chars=2, is_retry=False, irreversible=False, handoff=False, upstream_reads=0,
                      backend_ms=0.0)


def test_scored_on_the_outcome_not_the_transcript():
    assertion = Assertion.model_validate({
        "calls": [{"tool": "close_ticket", "args": {"ticket_id": "T-9"}}],
        "state": [{"path": "tickets.T-9.status", "equals": "closed"}],
        "not_called": ["escalate_ticket"], "reply": {"regex": "(?i)closed"}})
    state = {"tickets": {"T-9": {"status": "closed"}}}
    # any path to it: extra reads before, the order of calls does not matter
    path = [call("get_ticket", '{"ticket_id":"T-9"}'), call("close_ticket", '{"ticket_id": "T-9"}')]
    assert score_outcome(assertion, path, state, "Ticket T-9 is closed.") == (True, [])
    # a refused close does not count as the required call
    refused = [call("close_ticket", '{"ticket_id":"T-9"}', error=True)]
    ok, failed = score_outcome(assertion, refused, state, "closed")
    assert not ok and failed == ["call close_ticket(ticket_id equals 'T-9') did not happen"]
    # a forbidden call counts when it reached the backend, refused or not; an invalid one never did
    for escalation, counted in ((call("escalate_ticket", "{}", error=True), True),
                                (call("escalate_ticket", "{}", executed=False, valid=False), False)):
        ok, failed = score_outcome(assertion, [*path, escalation], state, "closed")
        assert ok is not counted
    ok, failed = score_outcome(assertion, path, {"tickets": {"T-9": {"status": "open"}}}, None)
    assert failed == ["state tickets.T-9.status equals 'closed' (is \"open\")", "reply regex '(?i)closed'"]
