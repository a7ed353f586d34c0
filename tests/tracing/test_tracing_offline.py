"""Tracing without a Phoenix server: the target's rules, the ids, the annotations' placement, a run whose
collector is down or refuses (rows unaffected, one warning) and a run that does not trace (loads nothing)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from schemas.catalogue import Catalogue
from schemas.taskset import LabelledRequest, Message
from tasks.selection.arms import SelectionArm
from tasks.files.input_errors import InputError
from tasks.selection.plan_batch import plan_arm_seed
from tasks.core_records import RunContext
from tasks.selection.select_batch import select_and_land
from tasks.tracing.trace_ids import DECISION, LLM, ROOT, TraceIds
from tasks.tracing.trace_target import parse_trace_target
from tests.factories.catalogues import support_tools
from tests.factories.ports import free_port

ROOT_DIR = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text", ["otlp://127.0.0.1:6006", "http://localhost:4318", " otlp://phoenix:80/ "])
def test_trace_targets_that_are_accepted(text):
    target = parse_trace_target(text, "proj")
    assert target.traces_url.endswith("/v1/traces") and target.project == "proj"


@pytest.mark.parametrize("text, says", [
    ("otlp://127.0.0.1", "no valid port"), ("grpc://127.0.0.1:4317", "expected otlp://"),
    ("otlp://user:sk-secret@127.0.0.1:6006", "credentials in the URL are refused"),
    ("otlp://127.0.0.1:6006/v1/traces", "HOST:PORT only"), ("otlp://:6006", "no host"),
])
def test_bad_trace_targets_name_the_flag_and_the_rule(text, says):
    with pytest.raises(InputError) as caught:
        parse_trace_target(text)
    message = str(caught.value)
    assert message.startswith("--trace: [trace-target]") and says in message
    assert "sk-secret" not in message and "user:" not in message  # a credential is never echoed


def test_ids_are_derived_from_the_row_and_differ_per_row_and_role():
    a = TraceIds.of("run", "arm", 1, "r1")
    assert a == TraceIds.of("run", "arm", 1, "r1") and len(a.trace_hex) == 32 and len(a.span_hex(ROOT)) == 16
    assert len({TraceIds.of("run", "arm", s, r).trace_id for s in (1, 2) for r in ("r1", "r2")}) == 4
    assert len({a.span(role) for role in (ROOT, DECISION, LLM)}) == 3


def _row(**changes):
    row = {"run_id": "run", "arm": "gated", "seed": 2, "request_id": "r7", "expected": "track_shipment",
           "chosen": "lookup_order", "correct": False, "outcome": "wrong_tool", "router_pick": "track_shipment",
           "decided_by": "chat", "judge_verdict": "right", "judge_votes": ["right", "wrong", "right"]}
    return {**row, **changes}


def test_annotations_sit_on_the_span_they_judge():
    from tasks.selection.selection_trace import selection_annotations  # OpenTelemetry: the other tests load none

    ids = TraceIds.of("run", "gated", 2, "r7")
    fallback = {a["name"]: a for a in selection_annotations(_row(), (DECISION, LLM))}
    assert fallback["label_check"]["span_id"] == ids.span_hex(LLM)  # the chat model chose: its span is judged
    assert fallback["label_check"]["annotator_kind"] == "CODE"
    assert fallback["label_check"]["result"] == {"label": "wrong_tool", "score": 0.0,
                                                 "explanation": "expected track_shipment, chose lookup_order"}
    assert fallback["router_check"]["span_id"] == ids.span_hex(DECISION)
    assert fallback["router_check"]["result"]["label"] == "right"
    assert fallback["judge"]["span_id"] == ids.span_hex(LLM) and fallback["judge"]["annotator_kind"] == "LLM"
    assert fallback["judge"]["result"]["label"] == "right" and fallback["judge"]["result"]["score"] == pytest.approx(2 / 3)
    assert fallback["judge"]["metadata"]["votes"] == ["right", "wrong", "right"]

    decided = {a["name"]: a for a in selection_annotations(_row(decided_by="router"), (DECISION, LLM))}
    assert decided["label_check"]["span_id"] == ids.span_hex(DECISION) and "router_check" not in decided
    offline = selection_annotations(_row(arm="lex", router_pick=None, decided_by=None, judge_verdict=None),
                                    (DECISION,))
    assert [a["name"] for a in offline] == ["label_check"]
    assert offline[0]["span_id"] == TraceIds.of("run", "lex", 2, "r7").span_hex(DECISION)


def _lexical_unit():
    tools = support_tools("lookup_order", "track_shipment", "refund_order", "reset_password")
    requests = tuple(
        LabelledRequest(id=f"r{i}", messages=(Message(role="user", content=text),), expected=label, slice="existing")
        for i, (text, label) in enumerate([("where is my parcel", "track_shipment"),
                                           ("I want my money back", "refund_order"),
                                           ("forgot my password", "reset_password")] * 4))
    arm = SelectionArm(name="lex", rung=1, catalogue_name="base", catalogue=Catalogue(name="base", tools=tools),
                      prompt_name="default", prompt_text="Pick a tool.", model_id="bm25-okapi", selector="lexical",
                      version="v1", options={})
    [unit] = plan_arm_seed(arm, 1, requests, "shop", batch_size=len(requests))
    return unit


def _rows(result) -> list[dict]:
    rows = pq.read_table(result.paths[0]).to_pylist()
    return [{k: v for k, v in row.items() if k not in ("run_id", "latency_ms")} for row in rows]


def test_a_collector_that_is_down_drops_the_spans_with_one_warning_and_the_rows_are_the_same(tmp_path, caplog):
    from tasks.tracing.trace_sender import finish_tracing

    unit = _lexical_unit()
    plain = select_and_land(unit, RunContext("run-plain", "exp", tmp_path / "rows", None))
    target = parse_trace_target(f"otlp://127.0.0.1:{free_port()}")  # nothing listens there
    with caplog.at_level(logging.WARNING, logger="tooleval.tracing"):
        traced = select_and_land(unit, RunContext("run-traced", "exp", tmp_path / "rows", None, trace=target))
        again = select_and_land(unit, RunContext("run-traced", "exp", tmp_path / "rows2", None, trace=target))
        warnings = finish_tracing(target)
    assert _rows(traced) == _rows(plain) == _rows(again) and traced.n_rows == 12
    said = [r.getMessage() for r in caplog.records if r.name == "tooleval.tracing"]
    assert len(said) == 1 == len(warnings) and said == warnings
    assert "no collector answers at http://127.0.0.1:" in said[0] and "rows are unaffected" in said[0]


class _Refusing(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_collector_that_refuses_drops_spans_and_annotations_once_each_and_the_rows_land(tmp_path, caplog):
    from tasks.tracing.trace_sender import finish_tracing

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        target = parse_trace_target(f"otlp://127.0.0.1:{server.server_address[1]}")
        unit = _lexical_unit()
        with caplog.at_level(logging.WARNING, logger="tooleval.tracing"):
            first = select_and_land(unit, RunContext("run-a", "exp", tmp_path / "rows", None, trace=target))
            second = select_and_land(unit, RunContext("run-a", "exp", tmp_path / "rows2", None, trace=target))
            warnings = finish_tracing(target)
    finally:
        server.shutdown()
    assert first.n_rows == second.n_rows == 12 and _rows(first) == _rows(second)
    assert len(warnings) == 2, warnings  # annotations refused (Phoenix's API), then the spans' export
    assert any("did not take annotations" in w for w in warnings)
    assert any("did not accept spans" in w for w in warnings)


def test_a_run_that_does_not_trace_loads_no_tracing_code(tmp_path):
    script = f"""
import sys, json
sys.path.insert(0, {str(ROOT_DIR)!r})
from tests.tracing.test_tracing_offline import _lexical_unit
from tasks.selection.select_batch import RunContext, select_and_land
import flows.evaluate  # the flow module too
select_and_land(_lexical_unit(), RunContext("r", "e", __import__("pathlib").Path({str(tmp_path)!r}), None))
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("opentelemetry.sdk", "openinference",
      "phoenix", "tasks.tracing.exporter", "tasks.selection.selection_trace")))))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT_DIR)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
