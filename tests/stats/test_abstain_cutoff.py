"""Fitting a 'none' cut-off (tasks/stats/abstain_cutoff.py): the split and the fit on known requests."""

from __future__ import annotations

import pytest

from tasks.stats.abstain_cutoff import CONFIRM, FIT, ScoredRequest, correct_at, fit_threshold, split_half


def test_the_split_is_a_deterministic_hash_of_salt_and_id():
    ids = [f"r{i}" for i in range(400)]
    halves = [split_half(i, "s") for i in ids]
    assert halves == [split_half(i, "s") for i in ids]
    assert 150 < halves.count(FIT) < 250 and set(halves) == {FIT, CONFIRM}
    assert halves != [split_half(i, "other salt") for i in ids]


def test_the_fit_separates_none_labels_below_tool_labels():
    # 'none' requests score 0.1-0.3, right tools 0.5-0.9, one wrong tool at 0.6
    requests = ([ScoredRequest(s, False, True) for s in (0.1, 0.2, 0.3)]
                + [ScoredRequest(s, True, False) for s in (0.5, 0.7, 0.9)] + [ScoredRequest(0.6, False, False)])
    threshold = fit_threshold(requests)
    assert threshold == (0.3 + 0.5) / 2
    assert correct_at(requests, threshold) == (6, 3)
    assert correct_at(requests, float("-inf")) == (3, 0)


def test_never_abstaining_when_that_is_best_and_requests_without_tools():
    requests = [ScoredRequest(s, True, False) for s in (0.1, 0.2)] + [ScoredRequest(float("-inf"), False, True)]
    assert fit_threshold(requests) == float("-inf")
    assert correct_at(requests, float("-inf")) == (3, 1)  # offered no tool: 'none' whatever the cut-off
    assert fit_threshold([]) == float("-inf")


def test_ties_keep_the_fewest_abstentions():
    requests = [ScoredRequest(0.2, False, True), ScoredRequest(0.4, True, False), ScoredRequest(0.4, False, True)]
    # abstaining below 0.4 gains the first; at 0.4 a 'none' and a tool tie: keep the tool
    assert fit_threshold(requests) == pytest.approx(0.3)
