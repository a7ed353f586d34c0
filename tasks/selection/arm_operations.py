"""The per-arm operations table of the report: accuracy, empty replies, latency, cost, fallbacks, judge.

Read from the ``arm_operations`` view (loaded with the run's figures); shown when a run has a hosted-model or routed arm.
"""

from __future__ import annotations

from typing import Any

from tasks.report.format import pct, pct_with_fraction
from tasks.report_types import ReportTable


def _money(value: float | None, digits: int = 5) -> str:
    return "—" if value is None else f"${value:,.{digits}f}"


def arm_operations_table(records: list[dict[str, Any]]) -> ReportTable | None:
    """The table from the run's ``arm_operations`` rows (``RunFigures.arm_operations``); None for a run of
    offline arms only."""
    if not any(r["selector"] in ("openai", "anthropic") or r["route"] for r in records):
        return None
    cached = any(r.get("cached_input_share") for r in records)  # a column only when some provider cached
    rows = []
    for r in records:
        judge = "—" if not r["judged"] else pct_with_fraction(r["judge_agrees"], r["judged"])
        routed = "—" if not r["route"] else f"{r['decided_by_router']} / {pct(r['fallback_rate'])}"
        failures = f"{r['invalid']}/{r['error']}" + (f" +{r['budget_stopped']}b" if r["budget_stopped"] else "")
        share = ["—" if r.get("cached_input_share") is None else pct(r["cached_input_share"])] if cached else []
        rows.append([
            f"{r['rung']}. {r['arm']}", pct_with_fraction(r["correct"], r["n"]), str(r["empty"]), failures,
            "—" if r["mean_latency_ms"] is None else f"{r['mean_latency_ms']:,.0f}",
            _money(r["mean_cost_usd"]), _money(r["run_cost_usd"], 2), *share, routed, judge,
        ])
    return ReportTable(
        title="Per arm: first-match accuracy, empty replies, latency and cost per turn, routing, judge",
        columns=["rung", "1st match", "empty", "inv/err", "ms", "$/turn", "spend", *(["cached"] if cached else []),
                 "router/fb", "judge"],
        rows=rows, key="arm_operations", summary=True,
        note="1st match: the first tool call (or none) is the label; inv/err: invalid / error rows (+Nb: not sent, "
             "budget reached); ms: mean latency per turn; $ from the dated price file (rows' price_version), a "
             "routed turn's including its decision model; spend: this run's calls (cache hits cost nothing "
             "again); cached (when a provider reported any): share of this run's prompt tokens served from the "
             "provider's prompt cache; "
             "router/fb: turns the decision model decided / share that fell back to the chat model; "
             "judge: the LLM judge's verdict agrees with the label check (beside the argument check: the "
             "judge-beside-arguments table, when requests have expected arguments).",
    )
