"""The arm_operations view and its report table on known rows."""

from __future__ import annotations

import duckdb
import pytest

from schemas.arrow import to_arrow_table
from schemas.rows import SelectionRow
from tasks.report.arm_operations import arm_operations_table
from warehouse.tables import create_tables
from warehouse.views import create_views


def row(i: int, arm: str, outcome: str, **extra) -> dict:
    correct = outcome == "correct"
    base = dict(
        run_id="run1", experiment="e", arm=arm, rung=1 if arm == "chat" else 2, seed=1, taskset="t",
        taskset_version="v1", request_id=f"r{i}", slice="s", intent=None, label_status="adjudicated", catalogue="c",
        tool_set_id="ts", n_tools=3, expected="track", expected_position=1, chosen="track" if correct else None,
        correct=correct, outcome=outcome, pair=None, invalid=outcome == "invalid", error=outcome == "error",
        empty=outcome == "empty", confidence=None, probabilities=None, detail=None, input_tokens=1000,
        output_tokens=20, cost_usd=0.001, latency_ms=300.0, model_id="gpt-4.1-mini-2025-04-14",
        served_model_id="gpt-4.1-mini-2025-04-14", selector="openai", prompt="p", cache_hit=False, retries=0,
    )
    base.update(extra)
    return base


@pytest.fixture
def con():
    connection = duckdb.connect(":memory:")
    create_tables(connection)
    create_views(connection)
    yield connection
    connection.close()


def test_arm_operations_on_known_rows(con):
    rows = [
        row(1, "chat", "correct", retries=2),
        row(2, "chat", "correct", cache_hit=True, latency_ms=100.0, cost_usd=0.003),
        row(3, "chat", "empty", detail="unfinished reply (stop reason length)"),
        row(4, "chat", "error", detail="budget reached", latency_ms=0.0, cost_usd=None, input_tokens=None,
            output_tokens=None),
        row(5, "chat", "error", detail="HTTP 500 (InternalServerError) (after 4 retries)", cost_usd=None, retries=4),
        row(1, "gated", "correct", route="gated", router="embedding:m", decided_by="router", fallback=False,
            judge_verdict="right"),
        row(2, "gated", "correct", route="gated", router="embedding:m", decided_by="router", fallback=False,
            judge_verdict="wrong"),
        row(3, "gated", "invalid", route="gated", router="embedding:m", decided_by="chat", fallback=True,
            judge_verdict="right", chosen="track"),
        row(4, "gated", "correct", route="gated", router="embedding:m", decided_by="chat", fallback=True,
            judge_verdict="unsure"),
    ]
    con.register("incoming", to_arrow_table(SelectionRow, rows))
    con.execute("insert into landed_rows by name select * from incoming")
    cursor = con.execute("select * from arm_operations order by rung")
    names = [d[0] for d in cursor.description]
    chat, gated = [dict(zip(names, r)) for r in cursor.fetchall()]

    assert (chat["n"], chat["correct"], chat["empty"], chat["error"], chat["budget_stopped"]) == (5, 2, 1, 1, 1)
    assert chat["first_match_accuracy"] == pytest.approx(0.4)
    assert chat["mean_latency_ms"] == pytest.approx((300 + 100 + 300 + 300) / 4)  # the budget stop is not a turn
    assert chat["mean_cost_usd"] == pytest.approx((0.001 + 0.003 + 0.001) / 3)  # over turns with a cost
    assert chat["run_cost_usd"] == pytest.approx(0.001 + 0.001)  # the cache hit cost nothing this run
    assert chat["retries"] == 6 and chat["route"] is None and chat["fallback_rate"] is None and chat["judged"] == 0

    assert gated["route"] == "gated" and gated["decided_by_router"] == 2 and gated["fallbacks"] == 2
    assert gated["fallback_rate"] == pytest.approx(0.5)
    assert gated["judged"] == 4 and gated["judge_agrees"] == 1  # right&correct; wrong&correct and right&invalid disagree
    assert gated["judge_right_label_wrong"] == 1 and gated["judge_wrong_label_right"] == 1

    table = arm_operations_table([chat, gated])
    assert table is not None and table.key == "arm_operations" and len(table.rows) == 2
    assert table.rows[0][1].startswith("40.0% (2/5)") and table.rows[0][3] == "0/1 +1b"
    assert table.rows[1][7] == "2 / 50.0%" and table.rows[1][8].startswith("25.0% (1/4)")
    assert max(len(" | ".join(table.columns)), 0) < 100


def test_no_table_for_offline_arms_only():
    assert arm_operations_table([{"selector": "lexical", "route": None}]) is None
