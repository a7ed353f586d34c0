"""The BM25 router on a small hand-written catalogue: real picks, probabilities, order, abstention."""

from __future__ import annotations

import math

import pytest

from schemas.catalogue import NONE_LABEL, ToolSpec
from schemas.taskset import Message
from tasks.selectors.base import SelectionInput
from tasks.selectors.lexical import LexicalSelector
from tasks.selectors.router_scores import abstain_softmax, tool_name_words

SUPPORT_TOOLS = (
    ToolSpec(name="refund_order", description="Refund a customer's order and return the money to their card."),
    ToolSpec(name="track_shipment", description="Track where a shipment or parcel is and when it will be delivered."),
    ToolSpec(name="reset_password", description="Reset an account password and email a reset link to the user."),
    ToolSpec(name="search_kb", description="Search the knowledge base articles for answers to product questions."),
)

TRAVEL_TOOLS = (
    ToolSpec(name="book_flight", description="Book a flight ticket between two airports on a date."),
    ToolSpec(name="hotelSearch", description="Find hotel rooms in a city for given check-in and check-out dates."),
)


def ask(text: str, tools=SUPPORT_TOOLS, request_id: str = "r", messages=None) -> SelectionInput:
    if messages is None:
        messages = (Message(role="user", content=text),)
    return SelectionInput(request_id=request_id, messages=tuple(messages), tools=tuple(tools), prompt="")


@pytest.fixture(scope="module")
def selector() -> LexicalSelector:
    return LexicalSelector()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I want a refund for order 1234, please give me my money back", "refund_order"),
        ("Where is my parcel? When will it be delivered?", "track_shipment"),
        ("I forgot my password and can't log into my account", "reset_password"),
        ("Are there any knowledge base articles about battery questions?", "search_kb"),
    ],
)
def test_obvious_requests_pick_the_right_tool(selector, text, expected):
    (selection,) = selector.select([ask(text)])
    assert selection.chosen == expected
    assert selection.outcome_hint == "ok"


def test_probabilities_cover_every_offered_tool_and_none_and_sum_to_one(selector):
    (selection,) = selector.select([ask("refund my order")])
    assert list(selection.probabilities) == [t.name for t in SUPPORT_TOOLS] + [NONE_LABEL]
    assert math.isclose(sum(selection.probabilities.values()), 1.0, abs_tol=1e-9)
    assert all(0.0 <= p <= 1.0 for p in selection.probabilities.values())
    assert selection.confidence == selection.probabilities[selection.chosen]
    assert selection.confidence == max(selection.probabilities.values())


def test_selection_fields(selector):
    batch = [ask("refund my order", request_id="a"), ask("track my parcel", request_id="b")]
    selections = selector.select(batch)
    assert [s.request_id for s in selections] == ["a", "b"]
    assert all(s.served_model_id == "bm25-okapi" for s in selections)
    assert all(s.latency_ms >= 0 for s in selections)
    assert selections[0].latency_ms == selections[1].latency_ms  # the batch's time split evenly
    assert selector.select([]) == []


def test_a_tie_goes_to_the_tool_offered_first(selector):
    # the same words ("cancel order" + the same description): identical BM25 scores
    first = ToolSpec(name="cancel_order", description="Cancel an order that has not shipped yet.")
    second = ToolSpec(name="cancelOrder", description="Cancel an order that has not shipped yet.")
    forward, backward = selector.select(
        [ask("please cancel my order", tools=(first, second)), ask("please cancel my order", tools=(second, first))]
    )
    assert forward.chosen == "cancel_order"
    assert backward.chosen == "cancelOrder"
    assert forward.probabilities["cancel_order"] == forward.probabilities["cancelOrder"]


def test_the_tool_order_does_not_change_the_probabilities(selector):
    reversed_tools = tuple(reversed(SUPPORT_TOOLS))
    text = "my parcel was delivered broken, I want a refund"
    forward, backward = selector.select([ask(text), ask(text, tools=reversed_tools)])
    assert forward.chosen == backward.chosen
    for name, probability in forward.probabilities.items():
        assert backward.probabilities[name] == pytest.approx(probability)


@pytest.mark.parametrize("text", ["qwxz zzkv blorf", "", "   ", "the and of to"])
def test_gibberish_empty_and_stopword_only_requests_pick_none(selector, text):
    (selection,) = selector.select([ask(text)])
    assert selection.chosen == NONE_LABEL
    assert selection.confidence == selection.probabilities[NONE_LABEL]
    assert math.isclose(sum(selection.probabilities.values()), 1.0, abs_tol=1e-9)


def test_a_conversation_without_a_user_turn_picks_none(selector):
    (selection,) = selector.select([ask("", messages=[Message(role="assistant", content="refund order")])])
    assert selection.chosen == NONE_LABEL


def test_no_offered_tools_picks_none(selector):
    (selection,) = selector.select([ask("refund my order", tools=())])
    assert selection.chosen == NONE_LABEL
    assert selection.probabilities == {NONE_LABEL: 1.0}


def test_per_request_tool_lists_in_one_batch(selector):
    batch = [
        ask("book me a flight to Lisbon", tools=TRAVEL_TOOLS, request_id="t1"),
        ask("refund order 55", request_id="s1"),
        ask("find a hotel room in Rome", tools=TRAVEL_TOOLS, request_id="t2"),
        ask("reset my password", request_id="s2"),
    ]
    selections = selector.select(batch)
    assert [s.chosen for s in selections] == ["book_flight", "refund_order", "hotelSearch", "reset_password"]
    assert set(selections[0].probabilities) == {"book_flight", "hotelSearch", NONE_LABEL}
    assert set(selections[1].probabilities) == {t.name for t in SUPPORT_TOOLS} | {NONE_LABEL}


def test_the_last_user_turn_is_the_request(selector):
    messages = [
        Message(role="user", content="I need to reset my password"),
        Message(role="assistant", content="Done. Anything else?"),
        Message(role="user", content="yes, where is my parcel"),
    ]
    (selection,) = selector.select([ask("", messages=messages)])
    assert selection.chosen == "track_shipment"


def test_parameters_count_as_tool_words():
    tools = (
        ToolSpec(name="lookup", description="Look a record up.", parameters={
            "type": "object", "properties": {"tracking_number": {"type": "string", "description": "Carrier code."}},
        }),
        ToolSpec(name="fetch", description="Fetch a record."),
    )
    (with_params,) = LexicalSelector().select([ask("carrier tracking number XY", tools=tools)])
    (without,) = LexicalSelector(options={"parameters": False}).select([ask("carrier tracking number XY", tools=tools)])
    assert with_params.chosen == "lookup"
    assert without.chosen == NONE_LABEL


def test_a_high_threshold_abstains_and_options_are_checked():
    (selection,) = LexicalSelector(options={"abstain_threshold": 1e6}).select([ask("refund my order")])
    assert selection.chosen == NONE_LABEL
    with pytest.raises(ValueError):
        LexicalSelector(options={"abstain_threshold": 0})
    with pytest.raises(ValueError):
        LexicalSelector(options={"temperature": 0})
    with pytest.raises(ValueError):
        LexicalSelector(options={"no_such_option": 1})


def test_a_lower_temperature_sharpens_the_pick():
    request = [ask("refund my order")]
    (sharp,) = LexicalSelector(options={"temperature": 0.2}).select(request)
    (soft,) = LexicalSelector(options={"temperature": 5.0}).select(request)
    assert sharp.chosen == soft.chosen == "refund_order"
    assert sharp.confidence > soft.confidence


def test_stemming_matches_word_forms():
    (selection,) = LexicalSelector().select([ask("refunding orders", tools=SUPPORT_TOOLS)])
    assert selection.chosen == "refund_order"


def test_tool_name_words():
    assert tool_name_words("get_orderStatus") == "get order status"
    assert tool_name_words("cellbio.get_proteins") == "cellbio get proteins"
    assert tool_name_words("SEOTool") == "seo tool"
    assert tool_name_words("search-kb") == "search kb"


def test_abstain_softmax_ties_and_threshold():
    import numpy as np

    probs, picks = abstain_softmax(np.array([[1.0, 1.0], [0.5, 0.2], [0.0, 0.0]]), 0.5, 1.0)
    assert picks.tolist() == [0, 0, 2]  # tie -> first; equal to the threshold -> the tool; below -> none
    assert np.allclose(probs.sum(axis=1), 1.0)
