"""Production turns from Parquet, JSONL, a DuckDB table and OpenInference trace exports; windows."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import duckdb
import pyarrow.parquet as pq
import pytest

from schemas.arrow import to_arrow_table
from schemas.traffic import ProductionTurn
from tasks.files.input_errors import InputError
from tasks.traffic.openinference import read_openinference
from tasks.traffic.read_turns import TrafficSource, detect_format, newest_turn_time, read_turns
from tasks.traffic.window import last_complete_weeks, parse_window, sampling_seed_for
from tests.factories.traffic import LOG, make_turns, otlp_trace, write_duckdb, write_jsonl

W44_W47 = parse_window("2026-W44-W47")


def rules_of(error: pytest.ExceptionInfo) -> list[tuple[str, str]]:
    return [(p.rule, p.where) for p in error.value.problems]


def test_the_bundled_log_has_12_weeks_and_over_50000_turns():
    con = duckdb.connect()
    n, first, last, weeks = con.execute(
        f"select count(*), min(time), max(time), count(distinct strftime(time, '%G-W%V')) from '{LOG}'").fetchall()[0]
    assert n >= 50_000 and weeks == 12
    assert parse_window("2026-W36-W47").start <= first and last < parse_window("2026-W36-W47").end


@pytest.mark.slow  # reads every turn of a window of the bundled production log
def test_parquet_reader_returns_the_window_only_validated_and_ordered():
    turns = read_turns(TrafficSource(LOG), W44_W47)
    expected = duckdb.connect().execute(
        f"select count(*) from '{LOG}' where time >= ? and time < ?", [W44_W47.start, W44_W47.end]).fetchall()[0][0]
    assert len(turns) == expected > 15_000
    assert all(W44_W47.start <= t.time < W44_W47.end for t in turns)
    assert [t.time for t in turns] == sorted(t.time for t in turns)
    assert any(t.earlier_turns for t in turns) and any(t.first_tool == "none" for t in turns)
    assert newest_turn_time(TrafficSource(LOG)).isocalendar().week == 47


@pytest.mark.slow  # reads every turn of a window of the bundled production log
def test_the_promotion_week_and_the_dispute_launch_show_in_the_mix():
    def share(tool: str, window: str) -> float:
        turns = read_turns(TrafficSource(LOG), parse_window(window))
        return sum(t.first_tool == tool for t in turns) / len(turns)

    assert share("open_dispute", "2026-W38-W40") == 0 < share("open_dispute", "2026-W43-W45")
    assert share("refund_order", "2026-W43-W45") < share("refund_order", "2026-W38-W40")
    assert share("apply_promo_code", "2026-W46") > 4 * share("apply_promo_code", "2026-W44")


def test_jsonl_reader_and_its_line_numbered_errors(tmp_path):
    turns = make_turns(50)
    path = write_jsonl(tmp_path / "turns.jsonl", turns)
    assert detect_format(path) == "jsonl"
    read = read_turns(TrafficSource(path), None)
    assert [t.turn_id for t in read] == [t["turn_id"] for t in turns]
    lines = path.read_text().splitlines()
    broken = json.loads(lines[2])
    del broken["user_message"]
    lines[2] = json.dumps(broken)
    lines[4] = lines[4][:20]
    lines[6] = lines[7]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as caught:
        read_turns(TrafficSource(path), None)
    rules = rules_of(caught)
    assert ("turn-schema", "line 3") in rules and ("json-lines", "line 5") in rules
    assert ("turn-id-unique", "line 8") in rules
    assert all(p.file == str(path) for p in caught.value.problems)


def test_duckdb_table_reader_filters_the_window(tmp_path):
    turns = make_turns(120, weeks=4)
    path = write_duckdb(tmp_path / "log.duckdb", turns, table="agent_turns")
    window = parse_window("2026-W45")
    read = read_turns(TrafficSource(path, table="agent_turns"), window)
    assert {t.turn_id for t in read} == {t["turn_id"] for t in turns if window.start <= t["time"] < window.end}
    with pytest.raises(InputError) as caught:
        read_turns(TrafficSource(path, table="nope"), window)
    assert caught.value.problems[0].rule == "traffic-readable"
    with pytest.raises(InputError) as caught:
        read_turns(TrafficSource(path, table="x; drop table turns"), window)
    assert caught.value.problems[0].rule == "table-name"


def test_a_folder_of_parquet_partitions_is_one_log(tmp_path):
    turns = make_turns(60)
    for week, part in ((44, turns[:30]), (45, turns[30:])):
        (tmp_path / "log" / f"week={week}").mkdir(parents=True)
        pq.write_table(to_arrow_table(ProductionTurn, part), tmp_path / "log" / f"week={week}" / "part-0.parquet")
    source = TrafficSource(tmp_path / "log")
    assert detect_format(source.path) == "parquet"
    assert [t.turn_id for t in read_turns(source, None)] == [t["turn_id"] for t in turns]


def test_a_parquet_log_missing_a_column_is_refused_naming_it(tmp_path):
    path = tmp_path / "bad.parquet"
    duckdb.connect().execute(f"copy (select 't1' as turn_id, now() as time, 'hi' as user_message) to '{path}'")
    with pytest.raises(InputError) as caught:
        read_turns(TrafficSource(path), None)
    problem = caught.value.problems[0]
    assert problem.rule == "turn-columns" and "first_tool" in problem.message and problem.file == str(path)


def test_openinference_otlp_export_gives_one_turn_per_trace(tmp_path):
    start = datetime(2026, 11, 2, 10, tzinfo=timezone.utc)
    traces = [
        otlp_trace("a1", start, [("system", "You are Northwind's agent."), ("user", "hi"),
                                 ("assistant", "Hello! How can I help?"), ("user", "where is my parcel NW-1234567")],
                   ["track_shipment", "lookup_order"], session="conv-1", metadata={"user_retried": True}),
        otlp_trace("a2", start + timedelta(hours=1), [("user", "tell me a joke")], [], reply="Why did the parcel..."),
        otlp_trace("a3", start + timedelta(hours=2), [("user", "refund me")], [], reply="",
                   metadata={"handed_to_human": True}),
    ]
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in traces))
    assert detect_format(path) == "openinference"
    turns = {t.turn_id: t for t in read_turns(TrafficSource(path), None)}
    first = turns["a1"]
    assert first.user_message == "where is my parcel NW-1234567" and first.first_tool == "track_shipment"
    assert [(m.role, m.content) for m in first.earlier_turns] == [("user", "hi"), ("assistant", "Hello! How can I help?")]
    assert first.conversation_id == "conv-1" and first.user_retried is True and first.time == start
    assert turns["a2"].first_tool == "none" and turns["a2"].empty_reply is False
    assert turns["a3"].first_tool == "none" and turns["a3"].empty_reply is True and turns["a3"].handed_to_human is True


def test_openinference_flat_spans_and_tool_spans_only(tmp_path):
    spans = [
        {"name": "agent", "context": {"trace_id": "t9", "span_id": "s1"}, "parent_id": None,
         "start_time": "2026-11-03T09:00:00Z", "span_kind": "CHAIN",
         "attributes": {"input": {"value": "cancel my subscription"}, "session": {"id": "c9"}}},
        {"name": "cancel_subscription", "context": {"trace_id": "t9", "span_id": "s2"}, "parent_id": "s1",
         "start_time": "2026-11-03T09:00:01Z", "span_kind": "TOOL",
         "attributes": {"tool": {"name": "cancel_subscription"}}},
    ]
    path = tmp_path / "phoenix.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in spans))
    (turn,) = read_openinference(path)
    assert (turn.turn_id, turn.user_message, turn.first_tool, turn.conversation_id) == (
        "t9", "cancel my subscription", "cancel_subscription", "c9")


def test_a_trace_without_a_user_message_is_named(tmp_path):
    trace = otlp_trace("b1", datetime(2026, 11, 2, tzinfo=timezone.utc), [("system", "only a system prompt")], [])
    for span in trace["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["attributes"] = [a for a in span["attributes"] if a["key"] != "input.value"]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    with pytest.raises(InputError) as caught:
        read_openinference(path)
    assert caught.value.problems[0].rule == "trace-user-message" and "trace b1" in caught.value.problems[0].where


def test_windows_are_whole_iso_weeks():
    window = parse_window("2026-W44-W47")
    assert (window.start, window.end) == (datetime(2026, 10, 26, tzinfo=timezone.utc),
                                          datetime(2026, 11, 23, tzinfo=timezone.utc))
    across = parse_window("2026-W52..2027-W02")
    assert across.start.date().isoformat() == "2026-12-21" and across.end.date().isoformat() == "2027-01-18"  # 2026 has a W53
    assert parse_window("2026-W44").end - parse_window("2026-W44").start == timedelta(weeks=1)
    for bad in ("2026-44", "2026-W47-W44", "last month"):
        with pytest.raises(InputError) as caught:
            parse_window(bad)
        assert caught.value.problems[0].rule == "window-format"
    assert sampling_seed_for(window) == sampling_seed_for(parse_window("2026-W44-W47"))


def test_the_default_window_is_the_last_complete_weeks_the_log_covers():
    monday = datetime(2026, 11, 30, 9, tzinfo=timezone.utc)
    sunday_night = datetime(2026, 11, 22, 23, 50, tzinfo=timezone.utc)
    assert last_complete_weeks(4, monday, sunday_night).id == "2026-W44-W47"
    assert last_complete_weeks(4, monday, sunday_night - timedelta(days=3)).id == "2026-W43-W46"
    assert last_complete_weeks(2, monday, None).id == "2026-W47-W48"
