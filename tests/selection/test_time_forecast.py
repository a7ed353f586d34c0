"""How long a selection run will take, before its first call (tasks/selection/time_forecast.py): from the
median per-call latency of past rows of the same model sent as calls and the arm's concurrency; as a batch,
the provider's window and the median wait of past batches of the model; unknown, and said so, with no past
rows; kept in cost_forecasts and set beside the run's wall time after it."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.selection.forecast import CostForecast
from tasks.run.prepare_run import prepare_run
from tasks.selection.cost_forecast import forecast_run
from tasks.selection.time_forecast import ArmTime, PastTimes, duration, run_call_seconds
from tests.factories.rows import RUN, KnownRun, insert, memory_warehouse, selection_row
from tests.factories.taskset import write_experiment, write_taskset

MODEL = "gpt-4.1-mini-2025-04-14"


@pytest.fixture
def hosted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """5 requests x 3 seeds of a hosted arm with 4 calls in flight, and an offline arm."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-forecast")
    root = write_taskset(tmp_path / "shop")
    return write_experiment(root, arms=[{"name": "gpt", "selector": "openai", "model": MODEL,
                                         "options": {"concurrency": 4}},
                                        {"name": "bm25", "options": {"abstain_threshold": 0.5}}])


def known_times(db: Path) -> KnownRun:
    """Past rows of the model: six sent as calls (per call 100..500 ms, one of 2 requests), one from the
    cache (not timed), two batches waited 61 s and 120 s (a batch's wait is its longest row's)."""
    same = dict(arm="past", model_id=MODEL, selector="openai", input_tokens=1000, output_tokens=20)
    rows = [selection_row(f"q{i}", "refund_order", True, latency_ms=ms, http_attempts=1, sent_as="call", **same)
            for i, ms in enumerate((100, 200, 300, 400))]
    rows += [selection_row("q4", "refund_order", True, latency_ms=1000, http_attempts=2, sent_as="call", **same),
             selection_row("q5", "refund_order", True, latency_ms=500, http_attempts=1, **same),  # before sent_as
             selection_row("c0", "refund_order", True, latency_ms=9999, http_attempts=1, cache_hit=True, **same)]
    rows += [selection_row(f"b{i}", "refund_order", True, latency_ms=ms, http_attempts=1, sent_as="batch",
                           batch_id=batch, **same)
             for i, (ms, batch) in enumerate(((60_000, "b1"), (61_000, "b1"), (120_000, "b2")))]
    known = KnownRun(db, arms=("past",)).add(rows)
    known.arm_respects("past", model_id=MODEL, catalogue_hash="another", selector="openai")
    return known


def test_the_time_comes_from_past_rows_of_the_model_and_the_arms_concurrency(hosted, tmp_path):
    (tmp_path / "wh").mkdir()
    known_times(tmp_path / "wh" / "tooleval.duckdb").finish().close()
    forecast = forecast_run(prepare_run(hosted, checked=False), tmp_path / "wh")
    [arm] = forecast.arms
    assert arm.source == "estimate" and arm.sent_calls == 15  # another catalogue: the cost is estimated
    # per call 100, 200, 300, 400, 500, 500 ms: median 350; 15 calls 4 at a time are 4 rounds
    assert arm.time is not None and (arm.time.past.call_rows, arm.time.past.call_ms) == (6, 350)
    assert arm.time.call_seconds(15) == pytest.approx(1.4) and forecast.call_seconds() == pytest.approx(1.4)
    lines = forecast.lines()
    assert "    time: about 1.4s as calls, 4 in flight (from 6 past rows)" in lines
    assert "    as a batch: within 24 h; past batches of this model took median 1m 30s" in lines  # 61 s, 120 s
    assert "  time as calls: about 1.4s (arms on one endpoint share its bound)" in lines
    assert all(len(line) <= 78 for line in lines)
    [record] = forecast.records("r")["cost_forecasts"]
    assert (record.concurrency, record.latency_rows, record.call_latency_ms) == (4, 6, 350)
    assert record.call_seconds == pytest.approx(1.4)
    assert (record.past_batches, record.batch_wait_s) == (2, pytest.approx(90.5))
    con = memory_warehouse(tmp_path / "kept.duckdb")
    insert(con, "cost_forecasts", CostForecast, [record.model_dump()])
    assert con.execute("select concurrency, call_seconds, past_batches, batch_wait_s from cost_forecasts"
                       ).fetchall() == [(4, pytest.approx(1.4), 2, pytest.approx(90.5))]


def test_with_no_past_rows_the_time_is_unknown_and_a_batch_has_the_providers_window(hosted):
    forecast = forecast_run(prepare_run(hosted, checked=False), None)
    lines = forecast.lines()
    assert "    time unknown as calls: no past rows" in lines
    assert "    as a batch: within 24 h (the provider's window)" in lines
    assert "  time as calls: unknown for an arm without past rows" in lines
    [record] = forecast.records("r")["cost_forecasts"]
    assert (record.call_seconds, record.latency_rows, record.batch_wait_s) == (None, 0, None)


def test_arms_sharing_a_bound_add_up_and_arms_on_another_run_beside_them():
    past = PastTimes(call_rows=10, call_ms=1000)
    shared = ArmTime(2, ("openai", "https://api.openai.com/v1", 2), past)
    other = ArmTime(8, ("anthropic", "https://api.anthropic.com", 8), past)
    assert run_call_seconds([(shared, 10), (shared, 6)]) == pytest.approx(5 + 3)  # rounds of 2 calls
    assert run_call_seconds([(shared, 10), (other, 40)]) == pytest.approx(5)  # 5 rounds each, side by side
    assert run_call_seconds([(shared, 10), (ArmTime(2, shared.bound), 4)]) is None
    assert [duration(s) for s in (0.35, 12.4, 200, 7500)] == ["0.3s", "12s", "3m 20s", "2h 05m"]


def test_after_the_run_its_wall_time_is_printed_beside_the_forecast(hosted, tmp_path):
    (tmp_path / "wh").mkdir()
    db = tmp_path / "wh" / "tooleval.duckdb"
    known_times(db).finish().close()
    forecast = forecast_run(prepare_run(hosted, checked=False), tmp_path / "wh")
    import duckdb

    con = duckdb.connect(str(db))
    con.execute("update runs set finished_at = started_at + interval 75 second")
    insert(con, "cost_forecasts", CostForecast, [r.model_dump() for r in forecast.records(RUN)["cost_forecasts"]])
    con.close()
    lines = forecast.error_lines(db, RUN)
    assert lines[-1] == "  time: took 1m 15s, forecast within 24 h as a batch"  # the run's rows: 3 in batches
    con = duckdb.connect(str(db))
    con.execute("delete from landed_rows where sent_as = 'batch'")
    con.close()
    assert forecast.error_lines(db, RUN)[-1] == "  time: took 1m 15s, forecast about 1.4s as calls"


def test_an_arm_waiting_on_batches_in_turn_says_how_many_within_80_columns():
    from tasks.selection.time_forecast import batch_rounds

    assert batch_rounds({}) == 1
    assert batch_rounds({"route": "gated", "router": "embedding"}) == 1
    assert batch_rounds({"route": "gated", "router": "llm"}) == 2
    assert batch_rounds({"route": "gated", "router": "llm", "judge": {"model": "m", "votes": 3}}) == 3
    known = PastTimes(call_rows=6, call_ms=350.0, batches=2, batch_wait_s=90.5)
    lines = ArmTime(4, ("openai", "url", 4), known, rounds=3).lines(15)
    assert "    as a batch: 3 batches in turn, each within 24 h" in lines
    assert "      past batches of this model took median 1m 30s" in lines
    unknown = ArmTime(4, ("openai", "url", 4), PastTimes(), rounds=2).lines(15)
    assert "    as a batch: 2 batches in turn, each within 24 h (the provider's window)" in unknown
    assert all(len(line) <= 80 for line in lines + unknown)
