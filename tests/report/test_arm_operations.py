"""The arm_operations view and its report table on known rows."""

from __future__ import annotations

import pytest

from schemas.selection.rows import SelectionRow
from tasks.selection.arm_operations import arm_operations_table
from tests.factories.rows import insert, records, selection_row

MODEL = "gpt-4.1-mini-2025-04-14"


HOSTED = dict(slice_="s", tool_set_id="ts", n_tools=3, input_tokens=1000, output_tokens=20, cost_usd=0.001,
              latency_ms=300.0, model_id=MODEL, served_model_id=MODEL, selector="openai")


def row(i: int, arm: str, outcome: str, **extra) -> dict:
    """A hosted-model row of request r{i} (expected 'track'); ``extra`` overrides any column."""
    fields = {**HOSTED, "chosen": "track" if outcome == "correct" else None, **extra}
    return selection_row(f"r{i}", "track", outcome=outcome, arm=arm, rung=1 if arm == "chat" else 2, **fields)


def test_arm_operations_on_known_rows(con):
    rows = [
        row(1, "chat", "correct", retries=2, http_attempts=3, cached_input_tokens=800,
            served_model_evidence="reported"),
        row(2, "chat", "correct", cache_hit=True, latency_ms=100.0, cost_usd=0.003, http_attempts=0,
            cached_input_tokens=0, served_model_evidence="reported"),
        row(3, "chat", "empty", detail="unfinished reply (stop reason length)"),
        row(4, "chat", "error", detail="budget reached", latency_ms=0.0, cost_usd=None, input_tokens=None,
            output_tokens=None),
        row(5, "chat", "error", detail="HTTP 500 (InternalServerError) (after 4 retries)", cost_usd=None, retries=4,
            http_attempts=5),
        row(1, "gated", "correct", route="gated", router="embedding:m", decided_by="router", fallback=False,
            judge_verdict="right"),
        row(2, "gated", "correct", route="gated", router="embedding:m", decided_by="router", fallback=False,
            judge_verdict="wrong"),
        row(3, "gated", "invalid", route="gated", router="embedding:m", decided_by="chat", fallback=True,
            judge_verdict="right", chosen="track"),
        row(4, "gated", "correct", route="gated", router="embedding:m", decided_by="chat", fallback=True,
            judge_verdict="unsure"),
    ]
    insert(con, "landed_rows", SelectionRow, rows)
    chat, gated = records(con, "select * from arm_operations order by rung")

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
    assert table.rows[1][8] == "2 / 50.0%" and table.rows[1][9].startswith("25.0% (1/4)")
    # prompt-cache share over this run's calls that reported it (the cache hit is not this run's call)
    assert chat["cached_input_share"] == pytest.approx(0.8) and table.rows[0][7] == "80.0%"
    assert chat["http_requests"] == 8 and gated["cached_input_share"] is None and table.rows[1][7] == "—"
    assert "cached" not in arm_operations_table([{**chat, "cached_input_share": 0.0}, gated]).columns
    assert chat["served_reported"] == 2 and chat["served_models"] == [MODEL] and gated["served_reported"] == 0
    assert max(len(" | ".join(table.columns)), 0) < 100


def test_no_table_for_offline_arms_only():
    assert arm_operations_table([{"selector": "lexical", "route": None}]) is None
