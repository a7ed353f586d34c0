"""Calibration of a new task-set version: the same (baseline) arm measured on the old and the new version
in one run, read from the warehouse views, so a change of instrument is never mistaken for a change of
the agent.

Tables: accuracy per slice on each version with its 95% interval and seed spread; volume-weighted accuracy
under the same production window; per-tool accuracy on each version and the difference (the view
``version_calibration``). The two versions hold different requests, so the difference is unpaired: it is
called "inside the noise" when it is no larger than the larger seed spread or the two intervals overlap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from warehouse.query import records
from tasks.report.format import pct, points
from tasks.report.render import markdown_document
from tasks.report_types import ReportTable
from tasks.taskset.provisional_labels import provisional_notice


@dataclass
class CalibrationReport:
    run_id: str
    old_arm: str
    new_arm: str
    old_version: str
    new_version: str
    headline: list[str]
    tables: list[ReportTable] = field(default_factory=list)
    differences: dict[str, float] = field(default_factory=dict)
    """Slice (and 'weighted') -> new accuracy minus old accuracy."""


def _noise(diff: float | None, spreads: list[float | None], old: dict | None, new: dict | None) -> str:
    if diff is None:
        return ""
    spread = max((s for s in spreads if s is not None), default=0.0)
    overlap = (old is not None and new is not None and old.get("ci_low") is not None and new.get("ci_low") is not None
               and old["ci_low"] <= new["ci_high"] and new["ci_low"] <= old["ci_high"])
    if abs(diff) <= spread:
        return "inside seed spread"
    return "intervals overlap" if overlap else "instrument shift"


def calibration_report(con: duckdb.DuckDBPyConnection, run_id: str, old_arm: str, new_arm: str) -> CalibrationReport:
    arms = {r["arm"]: r for r in records(con, "SELECT * FROM arms WHERE run_id = ? AND arm IN (?, ?)",
                                          [run_id, old_arm, new_arm])}
    if old_arm not in arms or new_arm not in arms:
        raise KeyError(f"run {run_id} has no arms {old_arm} and {new_arm}")
    old_version, new_version = arms[old_arm]["taskset_version"], arms[new_arm]["taskset_version"]
    report = CalibrationReport(
        run_id=run_id, old_arm=old_arm, new_arm=new_arm, old_version=old_version, new_version=new_version,
        headline=[f"Calibration of {new_version} against {old_version}: arm {old_arm} and {new_arm} are one "
                  f"configuration measured on both versions in run {run_id}. A difference here is a change in the "
                  "instrument (who asks what, and how it is labelled), not in the agent."],
    )
    report.headline += [line for line in provisional_notice(con, run_id) if new_version in line or old_version in line]

    slices = records(con, "SELECT * FROM aggregate_accuracy WHERE run_id = ? AND arm IN (?, ?) ORDER BY slice",
                     [run_id, old_arm, new_arm])
    by_slice: dict[str, dict[str, dict]] = {}
    for row in slices:
        by_slice.setdefault(row["slice"], {})[row["arm"]] = row
    rows = []
    for slice_, pair in sorted(by_slice.items()):
        old, new = pair.get(old_arm), pair.get(new_arm)
        diff = new["accuracy"] - old["accuracy"] if old and new else None
        if diff is not None:
            report.differences[slice_] = diff

        def cell(r: dict | None) -> str:
            if r is None:
                return "—"
            ci = f" [{pct(r['ci_low'])}–{pct(r['ci_high'])}]" if r.get("ci_low") is not None else ""
            return f"{pct(r['accuracy'])}{ci} ({r['n_requests']} req.)"

        spreads = [points(r and r["seed_spread"]) or "—" for r in (old, new)]
        rows.append([slice_, cell(old), cell(new), points(diff), " / ".join(spreads),
                     _noise(diff, [old and old["seed_spread"], new and new["seed_spread"]], old, new)])
    report.tables.append(ReportTable(
        title=f"Accuracy by slice: {old_version} vs {new_version} (same arm)",
        columns=["slice", old_version, new_version, "Δ pts", "seed spread pts", "reading"], rows=rows,
        note="unpaired: the versions hold different requests; 'instrument shift' = larger than the seed spread "
             "and the intervals do not overlap"))

    weighted = {r["arm"]: r for r in records(con, "SELECT * FROM weighted_accuracy WHERE run_id = ? AND arm IN (?, ?)",
                                             [run_id, old_arm, new_arm])}
    if old_arm in weighted and new_arm in weighted:
        old, new = weighted[old_arm], weighted[new_arm]
        diff = new["weighted_accuracy"] - old["weighted_accuracy"]
        report.differences["weighted"] = diff
        window = con.execute("SELECT weights_window FROM runs WHERE run_id = ?", [run_id]).fetchall()[0][0]
        report.tables.append(ReportTable(
            title=f"Volume-weighted accuracy under production window {window}",
            columns=["version", "weighted", "unweighted", "traffic covered"],
            rows=[[old_version, pct(old["weighted_accuracy"]), pct(old["accuracy_unweighted"]), pct(old["weight_covered"])],
                  [new_version, pct(new["weighted_accuracy"]), pct(new["accuracy_unweighted"]), pct(new["weight_covered"])],
                  ["Δ", points(diff), points(new["accuracy_unweighted"] - old["accuracy_unweighted"]), ""]],
        ))

    tools = records(con, "SELECT * FROM version_calibration WHERE run_id = ? AND old_arm = ? AND new_arm = ?",
                    [run_id, old_arm, new_arm])
    tools.sort(key=lambda r: (-(abs(r["difference"]) if r["difference"] is not None else -1), r["tool"]))
    report.tables.append(ReportTable(
        title=f"Per-tool accuracy on {old_version} and {new_version}, largest difference first",
        columns=["tool", f"{old_version} accuracy", f"{old_version} requests", f"{new_version} accuracy",
                 f"{new_version} requests", "Δ pts"],
        rows=[[r["tool"], pct(r["old_accuracy"]), str(r["old_requests"] or 0), pct(r["new_accuracy"]),
               str(r["new_requests"] or 0), points(r["difference"])] for r in tools],
    ))
    return report


def calibration_markdown(report: CalibrationReport) -> str:
    return markdown_document(f"Calibration {report.new_version} vs {report.old_version} — run {report.run_id}",
                             report.headline, report.tables)
