"""The optional LLM judge: three votes per turn, the majority kept, stored beside the label check."""

from __future__ import annotations

import pytest

from tasks.selectors.providers.chat_selector import ChatSelector
from tasks.selectors.providers.judge import majority, read_vote
from tests.factories.catalogues import selection_input, support_tools
from tests.provider_server import Reply, Seen, text_reply, tool_call
from tests.provider_server import status_reply
from tests.selectors.providers.conftest import MODELS, chat_options

TOOLS = support_tools("lookup_order", "track_shipment")


def test_majority_and_vote_reading():
    assert majority(("right", "wrong", "right")) == "right"
    assert majority(("wrong", "unsure", "wrong")) == "wrong"
    assert majority(("right", "wrong", "unsure")) == "unsure"
    assert read_vote("Right.") == "right" and read_vote("**wrong**") == "wrong" and read_vote("maybe") == "unsure"


def judged(serve, votes_by_seed, agent_reply, judge_kind="openai"):
    def script(seen: Seen) -> Reply:
        if seen.system.startswith("You grade"):
            index = (seen.seed or 0) if judge_kind == "openai" else seen.attempt
            return text_reply(votes_by_seed[index % len(votes_by_seed)])
        return agent_reply

    server = serve(script)
    judge = {"model": MODELS[judge_kind], "selector": judge_kind, "base_url": chat_options(server, judge_kind)["base_url"]}
    selector = ChatSelector("openai", MODELS["openai"], chat_options(server, "openai", judge=judge))
    [answer] = selector.select([selection_input("where is my parcel NW-1234567", TOOLS)])
    return answer, server


@pytest.mark.parametrize("judge_kind", ["openai", "anthropic"])
def test_three_votes_majority_kept_in_its_own_column(serve, judge_kind):
    answer, server = judged(serve, ["right", "wrong", "right"],
                            tool_call("track_shipment", {"order_id": "NW-1234567"}), judge_kind)
    assert answer.chosen == "track_shipment"
    assert answer.judge_votes == ["right", "wrong", "right"] and answer.judge_verdict == "right"
    assert answer.judge_cost_usd > 0
    assert answer.cost_usd < answer.cost_usd + answer.judge_cost_usd  # the judge is not part of the turn's cost
    judge_calls = [s for s in server.requests() if s.system.startswith("You grade")]
    assert len(judge_calls) == 3 and all(s.model == MODELS[judge_kind] for s in judge_calls)
    if judge_kind == "openai":
        assert [s.seed for s in judge_calls] == [0, 1, 2] and all(s.temperature == 0.7 for s in judge_calls)
    assert "called track_shipment with arguments" in judge_calls[0].user_text


def test_the_judge_sees_the_broken_arguments_and_can_say_the_choice_was_right(serve):
    answer, _ = judged(serve, ["right"], tool_call("track_shipment", {"order_id": "1234567"}))
    assert answer.outcome_hint == "invalid" and answer.judge_verdict == "right"


def test_a_text_reply_is_judged_as_calling_no_tool(serve):
    answer, server = judged(serve, ["wrong"], text_reply("Sorry, I cannot help."))
    assert answer.chosen == "none" and answer.judge_verdict == "wrong"
    judge_call = next(s for s in server.requests() if s.system.startswith("You grade"))
    assert "called no tool and replied: Sorry, I cannot help." in judge_call.user_text


def test_error_rows_are_not_judged(serve):
    answer, server = judged(serve, ["right"], status_reply(400))
    assert answer.outcome_hint == "error" and answer.judge_verdict is None
    assert not any(s.system.startswith("You grade") for s in server.requests())


def test_a_call_written_as_text_is_judged_as_text_not_as_a_call(serve):
    """llama-cpp-python's chatml-function-calling hands back `functions.track_shipment:` as text: the row is
    invalid (written as text) and the judge is told that no tool was called, never 'called ... with arguments {}'."""
    answer, server = judged(serve, ["right"], text_reply('functions.track_shipment:\n{"order_id": "NW-1234567"}'))
    assert answer.outcome_hint == "invalid" and answer.chosen == "track_shipment"
    assert answer.detail.startswith("tool call written as text")
    judge_call = next(s for s in server.requests() if s.system.startswith("You grade"))
    assert "called track_shipment with arguments" not in judge_call.user_text
    assert ("made no tool call: it wrote a call of track_shipment as text in its reply, which was not a structured "
            "tool call and was never executed. Its reply: functions.track_shipment:") in judge_call.user_text
