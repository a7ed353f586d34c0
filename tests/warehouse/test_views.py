"""Each view on known rows: load hand-made rows into an in-memory DuckDB and assert the output."""

from __future__ import annotations

import pytest

from schemas.run_records import ComparisonRecord
from schemas.selection.rows import OfferedTool, SelectionRow, SelectionRunRecord, WeightRecord
from tests.factories.rows import insert, records, run_record, selection_row


def row(request_id: str, expected: str, chosen: str | None, *, seed: int = 1, arm: str = "a", slice_: str = "s1",
        tool_set: str = "ts1", outcome: str | None = None) -> dict:
    return selection_row(request_id, expected, chosen=chosen, outcome=outcome, arm=arm, rung=1 if arm == "a" else 2,
                         seed=seed, slice_=slice_, tool_set_id=tool_set, n_tools=3, experiment="e", taskset="t")


def load(con, rows: list[dict], weights: dict[str, float] | None = None, tool_sets: dict[str, list[str]] | None = None):
    """Rows of run 'run1' (task set 't'), the weights of window 'w', the offered tool sets (``con``: tests/conftest)."""
    insert(con, "landed_rows", SelectionRow, rows)
    insert(con, "runs", SelectionRunRecord, [run_record(len(rows), experiment="e", taskset="t",
                                               weights_window="w" if weights else None)])
    insert(con, "production_weights", WeightRecord,
           [dict(taskset="t", window_id="w", tool=k, weight=v) for k, v in (weights or {}).items()])
    sets = tool_sets or {"ts1": ["refund", "track", "reset"]}
    insert(con, "offered_tools", OfferedTool, [dict(tool_set_id=k, tool=t) for k, names in sets.items() for t in names])


def test_aggregate_accuracy_per_slice_with_seed_spread_and_flags_apart(con):
    rows = (
        # seed 1: 3 of 4 right in slice s1; seed 2: 2 of 4 (one invalid) -> min .5, max .75
        [row("q1", "refund", "refund"), row("q2", "track", "track"), row("q3", "reset", "reset"),
         row("q4", "refund", "track")]
        + [row("q1", "refund", "refund", seed=2), row("q2", "track", "track", seed=2),
           row("q3", "reset", None, seed=2, outcome="invalid"), row("q4", "refund", "none", seed=2)]
        + [row("q9", "track", "track", slice_="s2"), row("q9", "track", "track", slice_="s2", seed=2)]
    )
    load(con, rows)
    result = records(con, "select * from aggregate_accuracy order by slice")
    assert [(r["slice"], r["n"], r["n_requests"], r["correct"]) for r in result] == [("s1", 8, 4, 5), ("s2", 2, 1, 2)]
    s1 = result[0]
    assert s1["accuracy"] == pytest.approx(5 / 8)
    assert (s1["n_seeds"], s1["seed_min"], s1["seed_max"], s1["seed_spread"]) == (2, 0.5, 0.75, 0.25)
    assert (s1["wrong_tool"], s1["no_tool"], s1["invalid"], s1["error"], s1["empty"]) == (1, 1, 1, 0, 0)


def test_aggregate_accuracy_counts_tool_calls_written_as_text_among_the_invalid(con):
    text_call = {**row("q1", "refund", "refund", outcome="invalid"),
                 "detail": "tool call written as text (functions.refund:, naming 'refund'), not a structured tool call"}
    schema_break = {**row("q2", "track", "track", outcome="invalid"), "detail": "arguments break the schema of track"}
    load(con, [text_call, schema_break, row("q3", "reset", "reset")])
    [result] = records(con, "select * from aggregate_accuracy")
    assert (result["invalid"], result["text_calls"], result["correct"]) == (2, 1, 1)


def test_per_tool_accuracy_counts_the_expected_tool(con):
    load(con, [row("q1", "refund", "refund"), row("q2", "refund", "track"), row("q3", "track", "track"),
               row("q1", "refund", "refund", seed=2), row("q2", "refund", "refund", seed=2),
               row("q3", "track", "track", seed=2)])
    result = {r["tool"]: r for r in records(con, "select * from per_tool_accuracy")}
    assert (result["refund"]["n"], result["refund"]["n_requests"], result["refund"]["correct"]) == (4, 2, 3)
    assert (result["refund"]["seed_min"], result["refund"]["seed_max"]) == (0.5, 1.0)
    assert result["track"]["accuracy"] == 1.0


def test_confused_pairs_share_of_failures_and_offered_together(con):
    rows = [row("q1", "refund", "track"), row("q2", "refund", "track"), row("q3", "refund", "none"),
            row("q4", "reset", None, outcome="error"), row("q5", "refund", "refund"),
            # offered a set without `track`: counts toward refund rows but not toward "offered together"
            row("q6", "refund", "refund", tool_set="ts2")]
    load(con, rows, tool_sets={"ts1": ["refund", "track", "reset"], "ts2": ["refund", "reset"]})
    result = {(r["expected"], r["chosen"]): r for r in records(con, "select * from confused_pairs")}
    assert set(result) == {("refund", "track"), ("refund", "none")}
    track = result[("refund", "track")]
    assert track["n"] == 2 and track["share_of_failures"] == pytest.approx(2 / 4)  # 4 failures incl. the error
    assert track["n_offered_together"] == 4 and track["pair_rate"] == pytest.approx(2 / 4)
    assert result[("refund", "none")]["n_offered_together"] == 5  # 'none' is always on offer


def test_weighted_accuracy_follows_the_traffic(con):
    # refund: 1 of 4 right, 80% of traffic; track: 4 of 4 right, 20% of traffic; 'none' rows are not weighted
    rows = ([row(f"r{i}", "refund", "refund" if i == 0 else "track") for i in range(4)]
            + [row(f"t{i}", "track", "track") for i in range(4)] + [row("n1", "none", "refund")])
    load(con, rows, weights={"refund": 0.8, "track": 0.2})
    (result,) = records(con, "select * from weighted_accuracy")
    assert result["weighted_accuracy"] == pytest.approx(0.8 * 0.25 + 0.2 * 1.0)
    assert result["accuracy_unweighted"] == pytest.approx(5 / 8)
    assert result["weight_covered"] == pytest.approx(1.0) and result["n_tools"] == 2


def test_every_view_file_states_its_grain():
    from warehouse.views import view_files

    for name, path in view_files().items():
        assert path.read_text().startswith(f"-- {name}: one row per"), name


def test_weighted_contribution_sums_to_the_weighted_accuracy_and_to_its_change(con):
    # arm a: refund 1 of 4 right, track 4 of 4; arm b: refund 3 of 4, track 2 of 4, and reset (only in b) 1 of 2
    rows = ([row(f"r{i}", "refund", "refund" if i == 0 else "track") for i in range(4)]
            + [row(f"t{i}", "track", "track") for i in range(4)]
            + [row(f"r{i}", "refund", "refund" if i < 3 else "track", arm="b") for i in range(4)]
            + [row(f"t{i}", "track", "track" if i < 2 else "refund", arm="b") for i in range(4)]
            + [row(f"s{i}", "reset", "reset" if i == 0 else "none", arm="b") for i in range(2)])
    load(con, rows, weights={"refund": 0.6, "track": 0.2, "reset": 0.2})
    insert(con, "comparisons", ComparisonRecord, [dict(run_id="run1", baseline="a", arm="b", changed=["catalogue"])])
    result = {(r["arm"], r["baseline"], r["tool"]): r for r in records(con, "select * from weighted_contribution")}
    assert set(result) == {("a", None, "refund"), ("a", None, "track"),
                           ("b", "a", "refund"), ("b", "a", "track"), ("b", "a", "reset")}
    a_refund = result[("a", None, "refund")]
    assert a_refund["traffic_share"] == pytest.approx(0.75) and a_refund["contribution"] == pytest.approx(0.75 * 0.25)
    assert a_refund["contribution_change"] is None
    weighted = {r["arm"]: r["weighted_accuracy"] for r in records(con, "select * from weighted_accuracy")}
    assert sum(r["contribution"] for k, r in result.items() if k[0] == "a") == pytest.approx(weighted["a"])
    b = {k[2]: r for k, r in result.items() if k[0] == "b"}
    assert sum(r["contribution"] for r in b.values()) == pytest.approx(weighted["b"])
    assert sum(r["contribution_change"] for r in b.values()) == pytest.approx(weighted["b"] - weighted["a"])
    # refund: share 0.6 in b (0.75 in a); accuracy .25 -> .75
    refund = b["refund"]
    assert refund["change_from_accuracy"] == pytest.approx(0.6 * 0.5)
    assert refund["change_from_share"] == pytest.approx(0.6 * 0.75 - 0.75 * 0.25 - 0.6 * 0.5)
    assert b["reset"]["baseline_contribution"] is None and b["reset"]["change_from_accuracy"] is None
    assert b["reset"]["contribution_change"] == pytest.approx(0.2 * 0.5)
