"""How a deployment's flow run ends and what it leaves in Prefect: the verdict line in the run's log, the
report and the per-gate table as artifacts, and a final state CI and Prefect automations can act on.

A run whose exit code would be non-zero (a gate failed, not judged, a model served other than its pin, the
rows landed but not registered yet) ends **Failed** with the verdict line as the state's message (its log
says it as a WARNING: no ERROR record, no traceback); a run
that passes (or has no criteria) ends **Completed**. The states keep Prefect's own names, so an automation
on ``prefect.flow-run.Failed`` sees a failed gate. The flow's result (``RunResult``) is stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.exceptions import Abort
from prefect.logging import get_run_logger
from prefect.states import Completed, Failed, State

from flows.exit_codes import EXIT_OK, run_exit_code
from schemas.criteria import Verdict
from tasks.report.render import render_markdown

EVIDENCE_LINES = 3
"""Evidence lines per gate in the gates table (the markdown report has them all)."""


@dataclass(frozen=True)
class RunResult:
    """What a pre-change (or weekly) flow run stores as its result: small, and enough for CI."""

    run_id: str
    exit_code: int
    verdict_line: str
    status: str
    """PASS, FAIL, NOT JUDGED, NO CRITERIA, NOT REGISTERED or MODEL MISMATCH."""
    failed_gates: list[str] = field(default_factory=list)
    n_rows: int = 0
    reports: dict[str, str] = field(default_factory=dict)
    warehouse: str = ""


def artifact_key(*parts: str) -> str:
    """A Prefect artifact key (lowercase letters, digits and dashes) from free text."""
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower())).strip("-")[:100]


def experiment_key(experiment_path: str) -> str:
    """'tasksets/support/experiments/ladder.yaml' -> 'support-ladder': the task set and the experiment."""
    path = Path(experiment_path)
    taskset = path.parent.parent.name if path.parent.name == "experiments" else path.parent.name
    return artifact_key(taskset, path.stem)


def verdict_line(summary) -> tuple[str, str, list[str]]:
    """(line, status, failed gate names): 'FAIL — 4 of 7 gates failed: busy-tools-hold, ...'."""
    if getattr(summary, "batches_pending", 0):
        from flows.evaluate import batches_pending_line

        return f"WAITING — {batches_pending_line(summary.batches_pending)}", "WAITING", []
    if summary.halts:
        models = ", ".join(f"{model} ({reason})" for model, reason in summary.halts.items())
        return f"MODEL MISMATCH — a model served another id than its pin: {models}", "MODEL MISMATCH", []
    if not summary.registered:
        return (f"NOT REGISTERED — {summary.n_rows:,} rows landed but the DuckDB file stayed held by another "
                f"process; `tooleval register {summary.run_id}` registers, judges and reports it",
                "NOT REGISTERED", [])
    verdict: Verdict | None = summary.verdict
    if verdict is None:
        return "NO CRITERIA — the experiment names no criteria file", "NO CRITERIA", []
    failed = [gate.name for gate in verdict.gates if gate.status == "FAIL"]
    line = f"{verdict.status} — {verdict.reason}" + (f": {', '.join(failed)}" if failed else "")
    return line, verdict.status, failed


def gates_table(verdict: Verdict | None) -> list[dict[str, str]]:
    """One row per gate: name, status, what it requires, its evidence."""
    return [{"gate": gate.name, "status": gate.status, "requires": gate.statement,
             "evidence": " · ".join(gate.evidence[:EVIDENCE_LINES])
             + (f" · (+{len(gate.evidence) - EVIDENCE_LINES} more)" if len(gate.evidence) > EVIDENCE_LINES else "")}
            for gate in (verdict.gates if verdict else [])]


def publish_run(summary, key: str, what: str = "run") -> RunResult:
    """Log the verdict line and publish the run's markdown report and gates table as artifacts of the
    current flow run; the RunResult to return."""
    logger = get_run_logger()
    code = run_exit_code(summary)
    line, status, failed = verdict_line(summary)
    # a Failed run's log holds no ERROR record: the verdict is a finding, said as a warning and the state's message
    (logger.info if code == EXIT_OK else logger.warning)("%s %s: %s (exit %d)", what, summary.run_id, line, code)
    markdown = (render_markdown(summary.report, summary.reports.get("html")) if summary.report is not None
                else f"## tooleval: {status} — run `{summary.run_id}`\n\n{line}\n")
    create_markdown_artifact(markdown, key=artifact_key(key, "report"),
                             description=f"tooleval {what} {summary.run_id}: {line}")
    if summary.verdict is not None and summary.verdict.gates:
        create_table_artifact(gates_table(summary.verdict), key=artifact_key(key, "gates"),
                              description=f"Gates of {what} {summary.run_id}: {line}")
    return RunResult(run_id=summary.run_id, exit_code=code, verdict_line=line, status=status, failed_gates=failed,
                     n_rows=summary.n_rows, reports=dict(summary.reports), warehouse=summary.warehouse)


class RunFailed(Abort):
    """A Failed flow run's stored result: Prefect resolves a Failed state's data into an exception (anything
    else makes its engine log a TypeError traceback after the run has ended), so the run's RunResult travels
    inside one. ``state.result(raise_on_failure=False).result`` is the RunResult; ``state.result()`` raises
    this, with the verdict line as its message.

    It is one of Prefect's signals (``Abort``), not an ``Exception``: a worker's engine raises the Failed
    run's result once the run has ended, and logs any ``Exception`` it gets as an ERROR record with a
    traceback ("Engine execution exited with unexpected exception") in the run's log; a signal it passes on
    without one, and the worker's process exits 0. The verdict and its reason stay the state's message, the
    run's log line and its artifacts."""

    def __init__(self, message: str, result: Any):
        super().__init__(message)
        self.result = result

    def __reduce__(self):  # stored by Prefect's result serializer: keep both arguments
        return (RunFailed, (str(self), self.result))


def stored_result(state: State) -> Any:
    """A finished flow run's result, Completed or Failed alike (a Failed run's travels inside RunFailed)."""
    data = state.result(raise_on_failure=False)
    return data.result if isinstance(data, RunFailed) else data


def final_state(result, message: str, exit_code: int) -> State:
    """Completed when the exit code is 0, else Failed; the message is the verdict line."""
    if exit_code == EXIT_OK:
        return Completed(message=message, data=result)
    line = f"{message} (exit {exit_code})"
    return Failed(message=line, data=RunFailed(line, result))
