"""The report's judge-beside-arguments table: per judged arm, the LLM judge's verdict on the choice of tool
(right / wrong / unsure) crossed with the argument check against the request's expected arguments (right /
wrong / not scored), so the turns where the two readings part are counted, not averaged away.

Read from the ``judge_argument_check`` view (loaded with the run's figures). The judge stays blind to the
labels and to the expected arguments: the two readings are only placed side by side here.
"""

from __future__ import annotations

from typing import Any

from tasks.report.format import pct
from tasks.report_types import ReportTable

VERDICTS = ("right", "wrong", "unsure")
CHECKS = ("right", "wrong", "not_scored")


def _cell(rows: int, judged: int) -> str:
    return "0" if not rows else f"{rows} ({pct(rows / judged)})"


def judge_arguments_table(records: list[dict[str, Any]]) -> ReportTable | None:
    """The table from the run's ``judge_argument_check`` rows (``RunFigures.judge_arguments``); None when no
    judged row had its arguments scored (nothing to set beside the judge: its agreement with the label check
    is in the per-arm operations table)."""
    if not any(r["argument_check"] != "not_scored" for r in records):
        return None
    counts: dict[str, dict[tuple[str, str], int]] = {}
    rungs: dict[str, int] = {}
    for r in records:
        counts.setdefault(r["arm"], {})[(r["judge_verdict"], r["argument_check"])] = r["rows"]
        rungs[r["arm"]] = r["rung"]
    rows: list[list[str]] = []
    sections: list[int] = []
    for arm in sorted(counts, key=lambda a: (rungs[a], a)):
        cells = counts[arm]
        judged = sum(cells.values())
        sections.append(len(rows))
        for verdict in VERDICTS:
            if any(cells.get((verdict, check)) for check in CHECKS):
                rows.append([f"{rungs[arm]}. {arm}" if len(rows) == sections[-1] else "", verdict,
                             *[_cell(cells.get((verdict, check), 0), judged) for check in CHECKS]])
    return ReportTable(
        title="Per judged arm: the judge's verdict on the choice beside the argument check",
        columns=["rung", "judge", "args right", "args wrong", "not scored"],
        rows=rows, key="judge_arguments", sections=sections,
        note="Judged turns of each arm (share of the arm's judged turns). judge: the LLM judge's majority on the "
             "choice of tool (blind to the labels); args: the call's arguments against the request's expected "
             "arguments. Judge right, args wrong: the choice held and the call did not (look at the "
             "per-parameter table); judge wrong, args right: the judge disagrees with the label (arguments are "
             "scored on calls of the labelled tool only); not scored: another tool or no usable answer, or the "
             "request has no expected arguments.",
    )
