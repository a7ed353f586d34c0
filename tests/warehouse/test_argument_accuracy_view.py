"""The view argument_accuracy on known rows: scored rows only, unscored counted apart, and the clustered
interval aggregate_accuracy gives the same per-request counts."""

from __future__ import annotations

import pytest

from schemas.selection.rows import SelectionRow, SelectionRunRecord
from tests.factories.rows import insert, records, run_record, selection_row


def row(request_id: str, seed: int, arguments_correct: bool | None, *, tool_right: bool = True, slice_: str = "s1"):
    outcomes = None if arguments_correct is None else [
        {"parameter": "order_id", "outcome": "right" if arguments_correct else "wrong_value"}]
    return selection_row(request_id, "refund", tool_right, seed=seed, slice_=slice_, arm="a",
                         arguments_correct=arguments_correct, argument_outcomes=outcomes)


def right_per_request() -> list[int]:
    """Of 3 seeds, how many sent right arguments, for 12 requests (tool right on every seed)."""
    return [3, 3, 3, 2, 3, 0, 3, 1, 3, 3, 2, 3]


def test_argument_accuracy_scores_only_scored_rows_with_the_clustered_interval(con):
    rows = [row(f"q{i}", seed, seed <= k) for i, k in enumerate(right_per_request()) for seed in (1, 2, 3)]
    rows += [row("q-free", seed, None) for seed in (1, 2, 3)]  # no expected arguments: not scored
    rows += [row("q-wrong-tool", seed, None, tool_right=False) for seed in (1, 2, 3)]
    rows += [row("q-other", 1, None, slice_="s2")]
    insert(con, "landed_rows", SelectionRow, rows)
    insert(con, "runs", SelectionRunRecord, [run_record(len(rows), experiment="e", taskset="t")])
    by_slice = {r["slice"]: r for r in records(con, "select * from argument_accuracy")}
    s1 = by_slice["s1"]
    right = sum(right_per_request())
    assert (s1["n"], s1["scored"], s1["not_scored"], s1["n_requests"], s1["arguments_right"]) == (42, 36, 6, 12, right)
    assert s1["tool_right_arguments_wrong"] == 36 - right and s1["accuracy"] == pytest.approx(right / 36)
    # the same per-request counts as tool accuracy give aggregate_accuracy's interval
    same = [selection_row(f"q{i}", "refund", seed <= k, seed=seed, slice_="s3", arm="b", rung=2)
            for i, k in enumerate(right_per_request()) for seed in (1, 2, 3)]
    insert(con, "landed_rows", SelectionRow, same)
    [tool] = records(con, "select * from aggregate_accuracy where slice = 's3'")
    assert tool["accuracy"] == pytest.approx(s1["accuracy"])
    assert (s1["ci_low"], s1["ci_high"], s1["n_effective"]) == pytest.approx(
        (tool["ci_low"], tool["ci_high"], tool["n_effective"]))
    assert s1["ci_low"] < s1["accuracy"] < s1["ci_high"]
    s2 = by_slice["s2"]  # nothing scored: no accuracy, never a right
    assert (s2["scored"], s2["not_scored"], s2["arguments_right"]) == (0, 1, 0)
    assert (s2["accuracy"], s2["ci_low"], s2["ci_high"]) == (None, None, None)


def test_argument_outcome_counts_per_tool_parameter_and_outcome(con):
    def scored(request_id, seed, outcomes, expected="refund"):
        return selection_row(request_id, expected, True, seed=seed, arm="a", slice_="s1",
                             arguments_correct=all(o == "right" for _, o in outcomes),
                             argument_outcomes=[{"parameter": p, "outcome": o} for p, o in outcomes])

    rows = [scored("q1", 1, [("order_id", "right"), ("reason", "wrong_value")]),
            scored("q1", 2, [("order_id", "right"), ("reason", "right")]),
            scored("q2", 1, [("order_id", "missing_required"), ("reason", "right"), ("code", "hallucinated")]),
            scored("q3", 1, [("order_id", "right"), ("reason", "wrong_value")]),
            scored("t1", 1, [("tracking", "right")], expected="track"),
            selection_row("q4", "refund", True, arm="a", slice_="s1")]  # not scored: in no count
    insert(con, "landed_rows", SelectionRow, rows)
    found = {(r["tool"], r["parameter"], r["outcome"]): (r["rows"], r["n_requests"], r["share"])
             for r in records(con, "select * from argument_outcome_counts")}
    assert found == {("refund", "order_id", "right"): (3, 2, 0.75),
                     ("refund", "order_id", "missing_required"): (1, 1, 0.25),
                     ("refund", "reason", "right"): (2, 2, 0.5),
                     ("refund", "reason", "wrong_value"): (2, 2, 0.5),
                     ("refund", "code", "hallucinated"): (1, 1, 0.25),
                     ("track", "tracking", "right"): (1, 1, 1.0)}
