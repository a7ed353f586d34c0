"""What the offline routers share (tasks/selectors/routers/router_scores.py): tool names as words, the abstaining
softmax, and ``select`` itself, checked on both routers (BM25 and MiniLM): probabilities over every offered
tool and 'none', ties to the tool offered first, no effect of the tool order, 'none' for nothing to match,
per-request tool lists in one batch, the batch's time split evenly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from schemas.catalogue import NONE_LABEL
from tasks.selectors.routers.router_scores import abstain_softmax, tool_name_words
from tests.factories.catalogues import SUPPORT_TOOLS, TRAVEL_TOOLS, TWIN_TOOLS, selection_input


@pytest.fixture(params=["lexical", pytest.param("embedding", marks=pytest.mark.slow)])
def router(request):
    return request.getfixturevalue(f"{request.param}_selector")


def test_probabilities_cover_every_offered_tool_and_none_and_sum_to_one(router):
    (selection,) = router.select([selection_input("refund my order")])
    assert list(selection.probabilities) == [t.name for t in SUPPORT_TOOLS] + [NONE_LABEL]
    assert math.isclose(sum(selection.probabilities.values()), 1.0, abs_tol=1e-9)
    assert all(0.0 <= p <= 1.0 for p in selection.probabilities.values())
    assert selection.confidence == selection.probabilities[selection.chosen]
    assert selection.confidence == max(selection.probabilities.values())


def test_a_tie_goes_to_the_tool_offered_first(router):
    first, second = TWIN_TOOLS
    forward, backward = router.select([selection_input("please cancel my order", tools=(first, second)),
                                       selection_input("please cancel my order", tools=(second, first))])
    assert forward.chosen == "cancel_order"
    assert backward.chosen == "cancelOrder"
    assert forward.probabilities["cancel_order"] == forward.probabilities["cancelOrder"]


def test_the_tool_order_does_not_change_the_probabilities(router):
    text = "my parcel was delivered broken, I want my money back"
    forward, backward = router.select([selection_input(text),
                                       selection_input(text, tools=tuple(reversed(SUPPORT_TOOLS)))])
    assert forward.chosen == backward.chosen
    for name, probability in forward.probabilities.items():
        assert backward.probabilities[name] == pytest.approx(probability, abs=1e-6)


@pytest.mark.parametrize("text", ["qwxz zzkv blorf", "", "   "])
def test_gibberish_and_empty_requests_pick_none(router, text):
    (selection,) = router.select([selection_input(text)])
    assert selection.chosen == NONE_LABEL
    assert selection.confidence == selection.probabilities[NONE_LABEL]
    assert math.isclose(sum(selection.probabilities.values()), 1.0, abs_tol=1e-9)


def test_no_offered_tools_picks_none(router):
    (selection,) = router.select([selection_input("refund my order", tools=())])
    assert selection.chosen == NONE_LABEL
    assert selection.probabilities == {NONE_LABEL: 1.0}


def test_one_batch_mixes_tool_lists_keeps_its_order_and_splits_its_time(router):
    batch = [selection_input("book a flight ticket to Lisbon", tools=TRAVEL_TOOLS, request_id="t1"),
             selection_input("refund my order 55", request_id="s1"),
             selection_input("find a hotel room in Rome", tools=TRAVEL_TOOLS, request_id="t2"),
             selection_input("reset my password", request_id="s2")]
    selections = router.select(batch)
    assert [s.request_id for s in selections] == ["t1", "s1", "t2", "s2"]
    assert [s.chosen for s in selections] == ["book_flight", "refund_order", "hotelSearch", "reset_password"]
    assert set(selections[0].probabilities) == {t.name for t in TRAVEL_TOOLS} | {NONE_LABEL}
    assert set(selections[1].probabilities) == {t.name for t in SUPPORT_TOOLS} | {NONE_LABEL}
    assert all(s.served_model_id == router.model_id for s in selections)
    assert len({s.latency_ms for s in selections}) == 1 and selections[0].latency_ms >= 0
    assert router.select([]) == []


def test_tool_name_words():
    assert tool_name_words("get_orderStatus") == "get order status"
    assert tool_name_words("cellbio.get_proteins") == "cellbio get proteins"
    assert tool_name_words("SEOTool") == "seo tool"
    assert tool_name_words("search-kb") == "search kb"


def test_abstain_softmax_ties_and_threshold():
    probs, picks = abstain_softmax(np.array([[1.0, 1.0], [0.5, 0.2], [0.0, 0.0]]), 0.5, 1.0)
    assert picks.tolist() == [0, 0, 2]  # tie -> first; equal to the threshold -> the tool; below -> none
    assert np.allclose(probs.sum(axis=1), 1.0)
