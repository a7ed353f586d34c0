"""Each view on known rows: load hand-made rows into an in-memory DuckDB and assert the output."""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb
import pytest

from schemas.arrow import to_arrow_table
from schemas.rows import OfferedTool, RunRecord, SelectionRow, WeightRecord
from warehouse.tables import create_tables
from warehouse.views import create_views

NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)


def row(request_id: str, expected: str, chosen: str | None, *, seed: int = 1, arm: str = "a", slice_: str = "s1",
        tool_set: str = "ts1", outcome: str | None = None) -> dict:
    correct = outcome is None and chosen == expected
    if outcome is None:
        outcome = "correct" if correct else ("no_tool" if chosen == "none" else "wrong_tool")
    pair = f"{expected} -> {chosen}" if outcome in ("wrong_tool", "no_tool") else None
    return dict(
        run_id="run1", experiment="e", arm=arm, rung=1 if arm == "a" else 2, seed=seed, taskset="t",
        taskset_version="v1", request_id=request_id, slice=slice_, intent=None, label_status="adjudicated",
        catalogue="c", tool_set_id=tool_set, n_tools=3, expected=expected, expected_position=1, chosen=chosen,
        correct=correct, outcome=outcome, pair=pair, invalid=outcome == "invalid", error=outcome == "error",
        empty=outcome == "empty", confidence=None, probabilities=None, detail=None, input_tokens=None,
        output_tokens=None, cost_usd=None, latency_ms=1.0, model_id="m", served_model_id=None, selector="lexical",
        prompt="p", cache_hit=False, retries=0,
    )


@pytest.fixture
def con():
    connection = duckdb.connect(":memory:")
    create_tables(connection)
    create_views(connection)
    yield connection
    connection.close()


def load(con, rows: list[dict], weights: dict[str, float] | None = None, tool_sets: dict[str, list[str]] | None = None):
    con.register("incoming", to_arrow_table(SelectionRow, rows))
    con.execute("insert into landed_rows by name select * from incoming")
    run = RunRecord(run_id="run1", experiment="e", experiment_path="e.yaml", experiment_hash="h", taskset="t",
                    started_at=NOW, finished_at=NOW, n_rows=len(rows), criteria_hash=None,
                    criteria_registered_at=None, weights_window="w" if weights else None, tooleval_version="test")
    con.register("run", to_arrow_table(RunRecord, [run.model_dump()]))
    con.execute("insert into runs by name select * from run")
    if weights:
        records = [WeightRecord(taskset="t", window_id="w", tool=k, weight=v).model_dump() for k, v in weights.items()]
        con.register("w", to_arrow_table(WeightRecord, records))
        con.execute("insert into production_weights by name select * from w")
    sets = tool_sets or {"ts1": ["refund", "track", "reset"]}
    offered = [OfferedTool(tool_set_id=k, tool=t).model_dump() for k, names in sets.items() for t in names]
    con.register("o", to_arrow_table(OfferedTool, offered))
    con.execute("insert into offered_tools by name select * from o")


def fetch(con, sql: str) -> list[dict]:
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r)) for r in cursor.fetchall()]


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
    result = fetch(con, "select * from aggregate_accuracy order by slice")
    assert [(r["slice"], r["n"], r["n_requests"], r["correct"]) for r in result] == [("s1", 8, 4, 5), ("s2", 2, 1, 2)]
    s1 = result[0]
    assert s1["accuracy"] == pytest.approx(5 / 8)
    assert (s1["n_seeds"], s1["seed_min"], s1["seed_max"], s1["seed_spread"]) == (2, 0.5, 0.75, 0.25)
    assert (s1["wrong_tool"], s1["no_tool"], s1["invalid"], s1["error"], s1["empty"]) == (1, 1, 1, 0, 0)


def test_per_tool_accuracy_counts_the_expected_tool(con):
    load(con, [row("q1", "refund", "refund"), row("q2", "refund", "track"), row("q3", "track", "track"),
               row("q1", "refund", "refund", seed=2), row("q2", "refund", "refund", seed=2),
               row("q3", "track", "track", seed=2)])
    result = {r["tool"]: r for r in fetch(con, "select * from per_tool_accuracy")}
    assert (result["refund"]["n"], result["refund"]["n_requests"], result["refund"]["correct"]) == (4, 2, 3)
    assert (result["refund"]["seed_min"], result["refund"]["seed_max"]) == (0.5, 1.0)
    assert result["track"]["accuracy"] == 1.0


def test_confused_pairs_share_of_failures_and_offered_together(con):
    rows = [row("q1", "refund", "track"), row("q2", "refund", "track"), row("q3", "refund", "none"),
            row("q4", "reset", None, outcome="error"), row("q5", "refund", "refund"),
            # offered a set without `track`: counts toward refund rows but not toward "offered together"
            row("q6", "refund", "refund", tool_set="ts2")]
    load(con, rows, tool_sets={"ts1": ["refund", "track", "reset"], "ts2": ["refund", "reset"]})
    result = {(r["expected"], r["chosen"]): r for r in fetch(con, "select * from confused_pairs")}
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
    (result,) = fetch(con, "select * from weighted_accuracy")
    assert result["weighted_accuracy"] == pytest.approx(0.8 * 0.25 + 0.2 * 1.0)
    assert result["accuracy_unweighted"] == pytest.approx(5 / 8)
    assert result["weight_covered"] == pytest.approx(1.0) and result["n_tools"] == 2


def test_every_view_file_states_its_grain():
    from warehouse.views import view_files

    for name, path in view_files().items():
        assert path.read_text().startswith(f"-- {name}: one row per"), name
