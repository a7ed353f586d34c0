"""The position-biased selector (a simulation of position sensitivity): its answers move with the tool order,
are fixed by the request and the order, key the cache on its options, and average to the documented true
accuracy over orders."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from tasks.run.permute_tools import permute_tools
from tasks.selectors.routers.position_biased import expected_accuracy, move_probability, parse_options
from tasks.selectors.registry import selector_for
from tests.factories.catalogues import SUPPORT_TOOLS, selection_input

REQUESTS = {  # text -> the tool BM25 picks for it over SUPPORT_TOOLS (checked below on the order-blind arm)
    "my parcel has not arrived, where is the shipment": "track_shipment",
    "please refund my order, the money back to my card": "refund_order",
    "I forgot my account password, send a reset link": "reset_password",
    "search the knowledge base articles about product questions": "search_kb",
}
NEVER = {"abstain_threshold": "never"}


def biased(bias: float):
    return selector_for("position_biased", "simulated-position-bias", {"bias": bias, "base_options": NEVER})


def picks(selector, order: tuple) -> list[str | None]:
    return [s.chosen for s in selector.select([selection_input(text, order) for text in REQUESTS])]


def test_the_move_probability_grows_with_the_position_and_is_bias_at_the_last():
    assert move_probability(1, 4, 0.6) == 0.0
    assert move_probability(4, 4, 0.6) == pytest.approx(0.6)
    assert move_probability(2, 4, 0.6) == pytest.approx(0.2)
    assert move_probability(1, 1, 1.0) == 0.0


def test_without_bias_it_is_the_order_blind_base_router():
    zero = biased(0.0)
    for seed in range(4):
        assert picks(zero, permute_tools(SUPPORT_TOOLS, seed)) == list(REQUESTS.values())


def test_answers_are_fixed_by_request_and_order_and_move_with_the_order():
    strong = biased(1.0)
    orders = list(itertools.permutations(SUPPORT_TOOLS))
    answers = [picks(strong, order) for order in orders]
    assert all(picks(biased(1.0), order) == answers[i] for i, order in enumerate(orders[:6]))  # a rerun agrees
    assert len({tuple(a) for a in answers}) > 1  # the pick moves with the order
    for order, chosen in zip(orders, answers):  # a moved pick is always the first-offered tool
        assert all(c in (base, order[0].name) for c, base in zip(chosen, REQUESTS.values()))


def test_over_every_order_the_accuracy_is_the_documented_true_accuracy():
    """All 24 orders of four tools: the share of right answers is 1 - bias/2 up to the hash draws' noise."""
    bias = 0.8
    selector = biased(bias)
    orders = list(itertools.permutations(SUPPORT_TOOLS))
    right = sum(c == e for order in orders for c, e in zip(picks(selector, order), REQUESTS.values()))
    observed = right / (len(orders) * len(REQUESTS))
    truth = expected_accuracy("track_shipment", "track_shipment", len(SUPPORT_TOOLS), bias)
    assert truth == pytest.approx(0.6)
    assert abs(observed - truth) < 0.1  # 96 draws: a binomial sd of 0.05


def test_a_wrong_base_pick_is_made_right_only_when_the_right_tool_is_first():
    # over orders: P(right first) = 1/n, then q averages bias * n / (2 (n - 1)): bias / (2 (n - 1))
    assert expected_accuracy("refund_order", "track_shipment", 4, 0.6) == pytest.approx(0.1)
    assert expected_accuracy("none", "none", 4, 0.6) == 1.0
    assert expected_accuracy("refund_order", "none", 4, 0.6) == 0.0


def test_bad_options_are_refused_with_what_is_known():
    with pytest.raises(ValueError, match="bias"):
        parse_options({})
    with pytest.raises(ValueError, match="bias"):
        parse_options({"bias": 1.5})
    with pytest.raises(ValueError, match="unknown option"):
        parse_options({"bias": 0.1, "temperature": 2})
    with pytest.raises(ValueError, match="base must be"):
        parse_options({"bias": 0.1, "base": "trained"})


def test_the_selection_cache_key_changes_with_the_bias(tmp_path):
    from tasks.selection.plan_batch import selector_fingerprint
    from tasks.experiment.resolve_experiment import resolve_experiment
    from tests.factories.taskset import write_experiment, write_taskset

    root = write_taskset(tmp_path / "shop")
    path = write_experiment(root, defaults={"prompt": "default", "selector": "position_biased",
                                            "model": "simulated-position-bias", "catalogue": "base"},
                            arms=[{"name": "a", "options": {"bias": 0.2}}, {"name": "b", "options": {"bias": 0.4}}])
    arms = resolve_experiment(path).arms
    a, b = (selector_fingerprint(arm) for arm in arms)
    assert a != b
    assert selector_fingerprint(replace(arms[0])) == a
    assert arms[0].abstain_rule == "default"  # the base router's cut-off, settled as lexical's would be
