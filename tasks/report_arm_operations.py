"""The per-arm operations table of the report: accuracy, empty replies, latency, cost, fallbacks, judge.

Read from the ``arm_operations`` view (loaded with the run's figures); shown when a run has a hosted-model or routed arm.
"""

from __future__ import annotations

from typing import Any

from tasks.report_format import pct, pct_with_fraction
from tasks.report_tables import ReportTable


def _money(value: float | None, digits: int = 5) -> str:
    return "—" if value is None else f"${value:,.{digits}f}"


def arm_operations_table(records: list[dict[str, Any]]) -> ReportTable | None:
    """The table from the run's ``arm_operations`` rows (``RunFigures.arm_operations``); None for a run of
    offline arms only."""
    if not any(r["selector"] in ("openai", "anthropic") or r["route"] for r in records):
        return None
    rows = []
    for r in records:
        judge = "—"
        if r["judged"]:
            judge = f"{pct_with_fraction(r['judge_agrees'], r['judged'])}; right but not correct: " \
                    f"{r['judge_right_label_wrong']}"
        routed = "—" if not r["route"] else (
            f"{r['route']}: router decided {r['decided_by_router']}, fallback {pct(r['fallback_rate'])}")
        rows.append([
            f"{r['rung']}. {r['arm']}", pct_with_fraction(r["correct"], r["n"]), str(r["empty"]),
            f"{r['invalid']}/{r['error']}" + (f" (+{r['budget_stopped']} budget)" if r["budget_stopped"] else ""),
            "—" if r["mean_latency_ms"] is None else f"{r['mean_latency_ms']:,.0f}",
            _money(r["mean_cost_usd"]), _money(r["run_cost_usd"], 4), str(r["retries"]), routed, judge,
        ])
    return ReportTable(
        title="Per arm: first-match accuracy, empty replies, latency and cost per turn, routing, judge",
        columns=["rung", "first match", "empty", "invalid/error", "ms/turn", "cost/turn", "run spend",
                 "retries", "routing", "judge agrees with label"],
        rows=rows, key="arm_operations", summary=True,
        note="cost from the dated price file (rows' price_version); a routed turn's cost includes its decision "
             "model; run spend excludes cache hits; budget = rows not sent because a cap was reached.",
    )
