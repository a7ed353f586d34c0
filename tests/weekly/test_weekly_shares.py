"""The weekly report's tables agree on a tool's share: of the turns that called a tool, 'none' left out (the
production weight), with 'none' stated apart as its share of all turns."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone

from schemas.taskset import LabelledRequest, Message
from schemas.traffic import ToolSampleCount, Window
from tasks.traffic.drift import eval_set_drift
from tasks.traffic.production_weights import production_weights
from tasks.weekly.weekly_report import _drift_table, tool_shares


def test_the_traffic_table_the_drift_table_and_the_weights_give_one_share():
    counts = {"refund_order": 243, "track_shipment": 677, "none": 80}  # 243 of 1,000 turns, of 920 with a tool
    per_tool = [ToolSampleCount(tool=t, turns=n, share=n / 1000, candidates=n, target=5, sampled=5, shortfall=0)
                for t, n in counts.items()]
    shares = tool_shares(per_tool)
    assert shares["refund_order"] == "26.4%" and shares["none"] == "(8.0% of all)"  # not 24.3%
    requests = tuple(LabelledRequest(id=f"r{i}", messages=(Message(role="user", content=f"q{i}"),), expected=label,
                                     slice="s") for i, label in enumerate(["refund_order"] * 3 + ["none"]))
    drift = _drift_table(eval_set_drift(counts, requests, "v2"))
    refund = next(r for r in drift.rows if r[0] == "refund_order")
    assert refund[1] == "26.4%"
    assert "'none' left out" in drift.note and "'none': 8.0% of all production turns, 25.0%" in drift.note
    window = Window(id="w", start=datetime(2026, 1, 1, tzinfo=timezone.utc), end=datetime(2026, 1, 8, tzinfo=timezone.utc))
    weights = production_weights(Counter(counts), window, "log", {"refund_order", "track_shipment"})
    assert f"{100 * weights.weights['refund_order']:.1f}%" == "26.4%"
