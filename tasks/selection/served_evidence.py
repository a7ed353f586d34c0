"""What the replies proved about the model that answered each hosted arm (rows' ``served_model_evidence``).

A pinned id is only worth what the provider reports: a reply may carry no model id, and a self-hosted
server (llama-cpp-python) echoes whatever id it is asked for. The report says, per hosted arm, which
evidence it had, and the headline says when an arm had none.
"""

from __future__ import annotations

from typing import Any

from tasks.report_types import ReportTable

ECHO = "server echoes the request"
NOT_REPORTED = "not reported"


def _hosted(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["selector"] in ("openai", "anthropic")]


def evidence_text(r: dict[str, Any]) -> str:
    """One arm's evidence in words, e.g. 'provider reported gpt-4.1-mini-2025-04-14 (36 replies)'."""
    parts = []
    if r.get("served_reported"):
        parts.append(f"provider reported {', '.join(r['served_models'] or [])} ({r['served_reported']:,} replies)")
    if r.get("served_echoed"):
        parts.append(f"{ECHO} ({r['served_echoed']:,} replies: a self-hosted server returned the id asked for, "
                     "which proves nothing)")
    if r.get("served_not_reported"):
        parts.append(f"{NOT_REPORTED} ({r['served_not_reported']:,} replies carried no model id)")
    return "; ".join(parts) or "not recorded (no reply came back, or the run predates the evidence column)"


def served_evidence_table(records: list[dict[str, Any]]) -> ReportTable | None:
    hosted = _hosted(records)
    if not hosted:
        return None
    return ReportTable(
        title="Which model answered: the served-model evidence of each hosted arm",
        columns=["rung", "pinned", "evidence"],
        rows=[[f"{r['rung']}. {r['arm']}", r["model_id"], evidence_text(r)] for r in hosted],
        key="served_evidence", summary=True, wrap=["evidence"],
        note="provider reported: the reply's model id, checked against the pin (or the arm's served_model); "
             "a self-hosted server echoing the id asked for (llama-cpp-python does) and a reply without a model id "
             "prove nothing about the weights that answered: state model_revision and check the server.",
    )


def served_evidence_notice(records: list[dict[str, Any]]) -> str | None:
    """A headline line when some hosted arm's replies did not evidence the model served."""
    weak = [f"{r['rung']}. {r['arm']}" for r in _hosted(records)
            if r.get("served_echoed") or r.get("served_not_reported")]
    if not weak:
        return None
    return (f"served model not evidenced for {', '.join(weak)}: its replies carried no model id or echoed the "
            "request (see 'Which model answered')")
