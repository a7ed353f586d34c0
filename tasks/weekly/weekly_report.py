"""The weekly report: the resample, its label checks, drift, label age, the production configuration on
every version in use, and the calibration of the new version — one markdown file per week.

Written to ``<warehouse>/reports/weekly/<window>-<version>/<run_id>/weekly.md`` (and ``calibration.md``): one
folder per run, so a weekly run repeated for the same window (the same version, reused) never overwrites the
report of an earlier one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from schemas.catalogue import NONE_LABEL
from schemas.taskset import ProductionWeights
from schemas.traffic import ResampleSummary, ToolSampleCount
from tasks.files.atomic_write import write_atomic
from warehouse.query import records
from tasks.report.format import pct, points
from tasks.report.render import markdown_document
from tasks.report_types import ReportTable
from tasks.taskset.label_checks import CheckReport
from tasks.taskset.load_taskset import load_version
from tasks.traffic.drift import MixDrift, eval_set_drift, window_drift
from tasks.traffic.version_age import LabelAge
from tasks.weekly.calibration_report import calibration_markdown, calibration_report
from tasks.weekly.weekly_experiment import WeeklyExperiment
from warehouse.connect import connect
from warehouse.location import Warehouse

TOP_DRIFT_ROWS = 10


@dataclass
class WeeklyReport:
    title: str
    headline: list[str]
    warnings: list[str]
    tables: list[ReportTable] = field(default_factory=list)
    calibration: dict[str, float] = field(default_factory=dict)
    """Slice / 'weighted' -> difference new - old version for the calibrated arm."""
    drift: dict[str, float] = field(default_factory=dict)
    """Version -> total variation distance between production's mix and the version's label mix."""

    def markdown(self) -> str:
        warnings = [f"WARNING: {w}" for w in self.warnings]
        return markdown_document(self.title, self.headline + warnings, self.tables)


def _drift_table(drift: MixDrift, counts: bool = True) -> ReportTable:
    """The largest differences; ``counts``: the other mix is an eval set (show its request counts)."""
    rows = [[r.tool, pct(r.production_share), pct(r.other_share)] + ([str(r.other_count)] if counts else [])
            + [points(r.difference)] for r in drift.rows[:TOP_DRIFT_ROWS]]
    thin = drift.thin_tools() if counts else []
    note = (f"the {TOP_DRIFT_ROWS} largest differences; shares of the turns (requests) that call a tool, 'none' "
            "left out (a tool's production share is its production weight, the run report's traffic); 0 = the "
            "same mix, 1 = nothing in common")
    if drift.production_none is not None:
        note += (f"; 'none': {pct(drift.production_none)} of all production turns, {pct(drift.other_none)} of the "
                 f"{drift.against} requests")
    if thin:
        note += "; thinly covered (>= 1% of traffic, < 10 requests): " + ", ".join(r.tool for r in thin)
    return ReportTable(title=f"Production mix vs {drift.against}: total variation distance {drift.tvd:.3f}",
                   columns=["tool", "production", drift.against] + (["requests"] if counts else []) + ["Δ pts"],
                   rows=rows, note=note)


def tool_shares(per_tool: list[ToolSampleCount]) -> dict[str, str]:
    """Each tool's share of the turns that called a tool ('none' left out: the production weight, the drift
    tables' production share and the run report's traffic); 'none' as its share of all turns, in brackets."""
    tool_turns = sum(t.turns for t in per_tool if t.tool != NONE_LABEL)
    all_turns = sum(t.turns for t in per_tool)
    return {t.tool: (f"({pct(t.turns / all_turns)} of all)" if all_turns else "—") if t.tool == NONE_LABEL
            else (pct(t.turns / tool_turns) if tool_turns else "—") for t in per_tool}


def build_weekly_report(
    *, taskset_dir: Path, summary: ResampleSummary, checks: CheckReport, weekly: WeeklyExperiment | None,
    run_id: str | None, warehouse: Warehouse, label_age: LabelAge, now: datetime, max_log_lag_days: int,
    previous_weights: ProductionWeights | None, current_weights: ProductionWeights,
) -> tuple[WeeklyReport, str | None]:
    """The report and, when the new version was calibrated, the calibration markdown."""
    warnings: list[str] = []
    new = load_version(taskset_dir, summary.version)
    n_provisional = sum(r.label_status == "provisional" for r in new.requests)
    headline = [
        f"Task set {summary.taskset}: {'found the earlier draw' if summary.reused else 'new version'} "
        f"{summary.version}"
        + (f" (drawn as {summary.drawn_as}, labels imported from its queue since)" if summary.drawn_as else "")
        + f" (parent {summary.parent or '-'}) from window {summary.window.id} of {summary.source}; "
        f"{len(new.requests)} requests, {n_provisional} with provisional labels; content hash "
        f"{new.manifest.content_hash[:12]}.",
        (f"Labelling queue: {summary.queue_file} — import it with `tooleval queue import` to adjudicate "
         f"(a new child version)." if summary.queue_file else
         f"Labelling queue: none — every label of {summary.version} is decided."),
    ]
    if summary.newest_turn is not None:
        lag = (now - summary.newest_turn).total_seconds() / 86400
        if lag > max_log_lag_days:
            warnings.append(f"the production log's newest turn is {lag:.0f} days old ({summary.newest_turn:%Y-%m-%d}): "
                            "is the export stale?")
    if label_age.warning:
        warnings.append(label_age.warning)
    short = [t for t in summary.per_tool if t.shortfall]
    if short:
        warnings.append("too few distinct requests for the plan: "
                        + ", ".join(f"{t.tool} ({t.sampled} of {t.target})" for t in short))
    if summary.unknown_tools:
        warnings.append("production called tools that no catalogue of the task set has: "
                        + ", ".join(f"{t} ({n:,} turns)" for t, n in summary.unknown_tools.items()))

    share = tool_shares(summary.per_tool)
    tables = [
        ReportTable(title="Production traffic and the stratified sample, per first tool",
                columns=["tool", "turns", "share", "distinct available", "target", "drawn"],
                rows=[[t.tool, f"{t.turns:,}", share[t.tool], f"{t.candidates:,}", str(t.target),
                       str(t.sampled) + (f" (short {t.shortfall})" if t.shortfall else "")] for t in summary.per_tool],
                note=("share = of the turns that called a tool, 'none' left out (the production weight, as in the "
                      "drift tables and the run report's traffic); 'none' = its share of all turns. "
                      f"{summary.n_turns:,} turns, {summary.n_distinct:,} distinct masked requests; "
                      f"{summary.n_earlier_duplicates_removed:,} already in earlier versions and "
                      f"{summary.n_near_duplicates_removed:,} near-duplicates left out; sampling seed {summary.plan.seed}")),
        ReportTable(title="Personal data masked before anything was written",
                columns=["kind", "masks"], rows=[[k, f"{n:,}"] for k, n in summary.masked.items()] or [["none", "0"]]),
        ReportTable(title=f"Label checks (Great Expectations) on {summary.version}", columns=[],
                rows=[[f"{checks.n_expectations} expectations passed on {checks.n_requests} requests and "
                       f"{checks.n_weights} production weights ({summary.weights_file})"]]),
        ReportTable(title="Age of the labels", columns=[], rows=[[
            f"newest fully adjudicated version: {label_age.newest_adjudicated or 'none'}"
            + (f", created {label_age.created_at:%Y-%m-%d} ({max(label_age.age_days, 0):.0f} days ago; warning past "
               f"{label_age.max_age_days})" if label_age.created_at else "")],
            [f"versions with provisional labels: {', '.join(label_age.provisional_versions) or 'none'}"]]),
    ]
    report = WeeklyReport(title=f"Weekly — {summary.taskset} {summary.window.id} — {summary.version}",
                          headline=headline, warnings=warnings)

    counts = {t.tool: t.turns for t in summary.per_tool}
    versions = weekly.versions if weekly else [summary.version]
    for version in versions:
        drift = eval_set_drift(counts, load_version(taskset_dir, version).requests, version)
        report.drift[version] = drift.tvd
        tables.append(_drift_table(drift))
    if previous_weights is not None and previous_weights.window != current_weights.window:
        tables.append(_drift_table(window_drift(current_weights, previous_weights), counts=False))

    calibration_text = None
    if weekly is not None and run_id is not None:
        with connect(warehouse.db_path, read_only=True) as con:
            weighted = records(con, "SELECT * FROM weighted_accuracy WHERE run_id = ? ORDER BY rung", [run_id])
            aggregate = records(con, "SELECT * FROM aggregate_accuracy WHERE run_id = ? ORDER BY rung, slice", [run_id])
            tables.append(ReportTable(
                title=f"Production configuration on every version in use (run {run_id})",
                columns=["arm", "slice", "accuracy", "requests", "weighted (window " + summary.window.id + ")"],
                rows=[[r["arm"], r["slice"], pct(r["accuracy"]), str(r["n_requests"]),
                       pct(next((w["weighted_accuracy"] for w in weighted if w["arm"] == r["arm"]), None))]
                      for r in aggregate],
                note=f"the run's full report: {warehouse.reports_dir / run_id / 'report.md'}"))
            if weekly.skipped_provisional:
                headline.append(f"Not measured (provisional labels, allow_provisional is off): "
                                f"{', '.join(weekly.skipped_provisional)}.")
            if weekly.calibration:
                old_arm, new_arm = weekly.calibration[0]
                calibration = calibration_report(con, run_id, old_arm, new_arm)
                report.calibration = calibration.differences
                tables += calibration.tables
                headline += calibration.headline
                calibration_text = calibration_markdown(calibration)
            else:
                warnings.append(f"{summary.version} was not calibrated against {summary.parent or 'a parent'} "
                                "(no parent, or a provisional version not allowed)")
    report.tables = tables
    return report, calibration_text


def weekly_report_dir(warehouse: Warehouse, window: str, version: str, run_id: str) -> Path:
    return warehouse.reports_dir / "weekly" / f"{window}-{version}" / run_id


def write_weekly_report(warehouse: Warehouse, report: WeeklyReport, calibration_text: str | None,
                        window: str, version: str, run_id: str) -> dict[str, Path]:
    directory = weekly_report_dir(warehouse, window, version, run_id)
    paths = {"weekly": write_atomic(directory / "weekly.md", report.markdown())}
    if calibration_text is not None:
        paths["calibration"] = write_atomic(directory / "calibration.md", calibration_text)
    return paths
