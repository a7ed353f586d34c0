"""The BM25 router on a small hand-written catalogue: real picks, abstention, stemming, options (what every
router promises is in test_router_contract.py)."""

from __future__ import annotations

import pytest

from schemas.catalogue import NONE_LABEL, ToolSpec
from schemas.taskset import Message
from tasks.selectors.routers.lexical import LexicalSelector
from tests.factories.catalogues import SUPPORT_TOOLS
from tests.factories.catalogues import selection_input as ask


@pytest.fixture
def selector(lexical_selector) -> LexicalSelector:
    return lexical_selector


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


def test_a_stopword_only_request_picks_none(selector):
    (selection,) = selector.select([ask("the and of to")])
    assert selection.chosen == NONE_LABEL


def test_a_conversation_without_a_user_turn_picks_none(selector):
    (selection,) = selector.select([ask("", messages=[Message(role="assistant", content="refund order")])])
    assert selection.chosen == NONE_LABEL


def test_the_last_user_turn_alone_with_context_turns_0(selector):
    messages = [
        Message(role="user", content="I need to reset my password"),
        Message(role="assistant", content="Done. Anything else?"),
        Message(role="user", content="yes, where is my parcel"),
    ]
    (selection,) = LexicalSelector(options={"context_turns": 0}).select([ask("", messages=messages)])
    assert selection.chosen == "track_shipment"
    # by default the two turns before it are read too: a change of subject can pull the pick back
    assert selector.request_text(ask("", messages=messages)) == "\n".join(m.content for m in messages)


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
