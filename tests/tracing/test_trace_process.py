"""The trace process (tasks/tracing/trace_process.py) against a recording loopback collector: the run's own
process loads no OpenTelemetry, every row's span and label check arrives, a run process killed after
handing its units over still gets them sent, a trace process that falls behind costs traces (counted in
one warning), never the run's time, and no provider key reaches its environment."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tasks.tracing.trace_ids import DECISION, TraceIds
from tests.tracing.recording_collector import RecordingCollector

ROOT_DIR = Path(__file__).resolve().parents[2]

RUN_UNITS = """
import json, os, signal, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from tests.tracing.test_tracing_offline import _lexical_unit
from tasks.selection.select_batch import RunContext, select_and_land
from tasks.tracing.trace_sender import finish_tracing, sender_for
from tasks.tracing.trace_target import parse_trace_target

target = parse_trace_target({otlp!r})
unit = _lexical_unit()
for index in range(2):
    select_and_land(unit, RunContext("run-tp", "exp", Path({rows!r}) / str(index), None, trace=target))
loaded = sorted(m for m in sys.modules if m.startswith(("opentelemetry", "openinference", "phoenix",
                                                        "tasks.tracing.exporter", "tasks.selection.selection_trace")))
print(json.dumps({{"loaded": loaded, "trace_pid": sender_for(target)._process.pid}}), flush=True)
if {kill!r}:
    sender_for(target).close()  # every unit handed over, the trace process's input closed ...
    os.kill(os.getpid(), signal.SIGKILL)  # ... and the run dies before it waits for the spans to leave
print(json.dumps({{"warnings": finish_tracing(target)}}), flush=True)
"""


def _run_units(collector: RecordingCollector, tmp_path: Path, kill: bool,
               **env_changes: str) -> tuple[subprocess.CompletedProcess, dict]:
    script = RUN_UNITS.format(root=str(ROOT_DIR), otlp=collector.otlp, rows=str(tmp_path / "rows"), kill=kill)
    env = {**os.environ, "OPENAI_API_KEY": "sk-tooleval-FAKE-trace-process", **env_changes}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         cwd=ROOT_DIR, env=env)
    said = json.loads(out.stdout.splitlines()[0])
    return out, said


def _expected_span_ids(run_id: str = "run-tp") -> set[str]:
    return {TraceIds.of(run_id, "lex", 1, f"r{i}").span_hex(DECISION) for i in range(12)}


def _wait_for(collector: RecordingCollector, n_spans: int, n_annotations: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if len(collector.spans) >= n_spans and len(collector.annotations) >= n_annotations:
            return
        time.sleep(0.1)


def test_the_runs_process_loads_no_opentelemetry_and_every_rows_trace_arrives(tmp_path):
    with RecordingCollector() as collector:
        out, said = _run_units(collector, tmp_path, kill=False)
        assert out.returncode == 0, out.stderr[-2000:]
        _wait_for(collector, 24, 24)
    assert said["loaded"] == []  # the spans were built in the trace process
    assert json.loads(out.stdout.splitlines()[1]) == {"warnings": []}
    # the same 12 requests landed twice in one run: each row's span arrived (the second is the same trace)
    assert len(collector.spans) == 24 and collector.span_ids() == _expected_span_ids()
    assert {s.name for s in collector.spans} == {"decide_tool"}
    assert len(collector.annotations) == 24 and {a["name"] for a in collector.annotations} == {"label_check"}
    assert {a["span_id"] for a in collector.annotations} == _expected_span_ids()
    assert out.stderr.strip() == ""  # nothing of the trace process on the run's terminal


def test_a_run_killed_after_handing_over_its_units_still_gets_them_sent(tmp_path):
    with RecordingCollector() as collector:
        out, said = _run_units(collector, tmp_path, kill=True)
        assert out.returncode == -9
        _wait_for(collector, 24, 24)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and Path(f"/proc/{said['trace_pid']}").exists():
            time.sleep(0.1)
    assert collector.span_ids() == _expected_span_ids() and len(collector.spans) == 24
    assert len(collector.annotations) == 24
    assert not Path(f"/proc/{said['trace_pid']}/cmdline").exists() or \
        b"trace_process" not in Path(f"/proc/{said['trace_pid']}/cmdline").read_bytes()  # it exited


def test_a_busy_collector_is_waited_for_by_the_trace_process_and_gets_every_span(tmp_path):
    with RecordingCollector(busy_first=4) as collector:  # Phoenix's 503 while its queue of spans is full
        out, _ = _run_units(collector, tmp_path, kill=False)
        assert out.returncode == 0, out.stderr[-2000:]
    assert collector.busy_answers == 4
    assert json.loads(out.stdout.splitlines()[1]) == {"warnings": []}
    assert collector.span_ids() == _expected_span_ids() and len(collector.spans) == 24


def test_a_collector_busy_for_longer_than_the_patience_drops_the_spans_with_one_warning(tmp_path):
    with RecordingCollector(busy_first=-1) as collector:
        started = time.monotonic()
        out, _ = _run_units(collector, tmp_path, kill=False, TOOLEVAL_TRACE_PATIENCE_S="2")
        took = time.monotonic() - started
        assert out.returncode == 0, out.stderr[-2000:]
    warnings = json.loads(out.stdout.splitlines()[1])["warnings"]
    assert len(warnings) == 1 and f"{collector.otlp.replace('otlp', 'http')}/v1/traces was at capacity (HTTP 503) " \
        "for 2 s; spans and annotations of this run are dropped (rows are unaffected)" in warnings[0]
    assert collector.spans == [] and took < 120


def test_a_trace_process_that_falls_behind_drops_traces_with_one_warning_never_waits(tmp_path, monkeypatch, caplog):
    import logging

    from tasks.core_records import RunContext
    from tasks.selection.select_batch import select_and_land
    from tasks.tracing import trace_sender
    from tasks.tracing.trace_target import parse_trace_target
    from tests.tracing.test_tracing_offline import _lexical_unit

    monkeypatch.setattr(trace_sender, "MAX_WAITING_BYTES", 1)  # nothing fits: every unit's traces are dropped
    with RecordingCollector() as collector, caplog.at_level(logging.WARNING, logger="tooleval.tracing"):
        target = parse_trace_target(collector.otlp, "behind")
        unit = _lexical_unit()
        results = [select_and_land(unit, RunContext("run-behind", "exp", tmp_path / str(i), None, trace=target))
                   for i in range(3)]
        warnings = trace_sender.finish_tracing(target)
    assert [r.n_rows for r in results] == [12, 12, 12]
    assert warnings == ["tracing: the trace process fell behind the run; the traces of 36 of 36 rows were dropped "
                        "(rows are unaffected)"]
    assert [r.getMessage() for r in caplog.records if r.name == "tooleval.tracing"] == warnings
    assert collector.spans == []


def test_the_trace_process_gets_no_provider_key(monkeypatch):
    from tasks.tracing.trace_sender import trace_process_environment

    monkeypatch.setenv("OPENAI_API_KEY", "sk-1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-2")
    monkeypatch.setenv("MY_VLLM_TOKEN", "t")
    monkeypatch.setenv("OPENAI_API_KEY_FILE", "/run/secrets/openai")
    monkeypatch.setenv("PHOENIX_API_KEY", "phoenix's own")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x=y")
    env = trace_process_environment()
    assert not {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_VLLM_TOKEN", "OPENAI_API_KEY_FILE"} & set(env)
    assert env["PHOENIX_API_KEY"] == "phoenix's own" and env["OTEL_EXPORTER_OTLP_HEADERS"] == "x=y"
    assert str(ROOT_DIR) in env["PYTHONPATH"].split(os.pathsep)


def test_a_slow_runs_traces_are_sent_while_it_runs(tmp_path):
    """A run landing few rows a second (hosted models) has its traces sent every HOLD_S seconds, not at
    its end: the spans are at the collector while the run still holds its sender open."""
    from tasks.core_records import RunContext
    from tasks.selection.select_batch import select_and_land
    from tasks.tracing.trace_process import HOLD_S, TICK_S
    from tasks.tracing.trace_sender import finish_tracing
    from tasks.tracing.trace_target import parse_trace_target
    from tests.tracing.test_tracing_offline import _lexical_unit

    with RecordingCollector() as collector:
        target = parse_trace_target(collector.otlp, "slow")
        select_and_land(_lexical_unit(), RunContext("run-slow", "exp", tmp_path, None, trace=target))
        _wait_for(collector, 12, 12, timeout_s=HOLD_S + TICK_S + 30)
        arrived_while_running = len(collector.spans)
        assert finish_tracing(target) == []
    assert arrived_while_running == 12 and collector.span_ids() == _expected_span_ids("run-slow")


def test_held_units_come_back_in_order_and_a_fast_run_is_told_from_a_slow_one():
    from collections import deque

    from tasks.tracing.trace_process import FAST_ROWS_PER_S, HOLD_S, HeldUnits, run_is_fast

    held = HeldUnits()
    for n in range(3):
        held.add(10 + n, pickle.dumps(("selection", {"n": n})))
    assert held.n_rows == 33 and held.n_bytes > 0
    assert list(held.take()) == [("selection", {"n": 0}), ("selection", {"n": 1}), ("selection", {"n": 2})]
    assert held.n_rows == 0 and list(held.take()) == []
    held.add(1, pickle.dumps(("task", {})))
    assert list(held.take()) == [("task", {})]
    held.close()

    now = 1000.0
    fast = deque([(now - 1.0, FAST_ROWS_PER_S * HOLD_S), (now - 0.5, 1)])
    assert run_is_fast(fast, now)
    slow = deque([(now - HOLD_S - 1.0, 10 * FAST_ROWS_PER_S * HOLD_S), (now - 1.0, 180)])  # the burst is old
    assert not run_is_fast(slow, now) and len(slow) == 1
