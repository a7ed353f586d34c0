"""The report as plain tables built from a run's figures; renderers turn them into text, markdown, HTML.

Order: the verdict first (rendered from ``Report.verdict``), then the tables that explain it. Every
proportion carries its 95% interval; small denominators show the fraction; every aggregate shows its
seed figures and spread; changes are paired on the same requests, with the requests that moved each way,
the interval over every seed of every request and the p-value of the score test that interval inverts: a
reading follows from the interval printed beside it. Tables are laid out to fit 100 columns.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from schemas.criteria import Verdict
from tasks.selection.arm_operations import arm_operations_table
from tasks.selection.judge_arguments import judge_arguments_table
from tasks.selection.argument_tables import (argument_change_tables, argument_headline, argument_tables,
                                            per_tool_argument_tables, tool_arguments_tables)
from tasks.selection.served_evidence import served_evidence_notice, served_evidence_table
from tasks.selection.confidence_headline import confidence_headline
from tasks.selection.example_distance import far_from_examples_notices, far_from_examples_table
from tasks.selection.figures import RunFigures, ToolLevel, load_figures
from tasks.report.format import (
    accuracy_cell,
    change_cells,
    change_span,
    interval_text,
    p_value,
    pct,
    pct_below,
    pct_with_fraction,
    points,
    seeds_text,
    span,
)
from tasks.report.layout import ARMS_PER_TABLE, group_starts, in_tables
from tasks.report_types import Chart, Report, ReportTable
from tasks.stats.change_power import planned_drop
from tasks.report.render import figure_html
from tasks.report.version_calibration import version_calibration_table
from tasks.run.unpinned_cache import report_notes
from tasks.stats.estimate import Interval

if TYPE_CHECKING:
    import duckdb

TOP_PAIRS = 5
TOP_CONTRIBUTORS = 8

def build_report(con: duckdb.DuckDBPyConnection, run_id: str, verdict: Verdict | None = None) -> Report:
    return build_report_from(load_figures(con, run_id), verdict)


def arm_label(figures: RunFigures, arm: str) -> str:
    return f"{figures.rung_of(arm)}. {arm}"


def build_report_from(figures: RunFigures, verdict: Verdict | None = None) -> Report:
    run, arms = figures.run, figures.arms
    label = lambda arm: arm_label(figures, arm)  # noqa: E731
    headline = [
        f"run {figures.run_id} · experiment {run['experiment']} · task set {run['taskset']} "
        f"{', '.join(sorted({a['taskset_version'] for a in arms}))} · {run['n_rows']:,} rows"
        + (f" · weights {run['weights_window']}" if run.get("weights_window") else ""),
        *[f"  rung {a['rung']}. {a['arm']}: catalogue {a['catalogue']} ({a['n_tools'] or 'per-request'} tools), "
          f"{a['selector']} {a['model_id']}, prompt {a['prompt']}, {len(a['seeds'])} seeds" for a in arms],
        *report_notes(arms, "rows"),
        "95% intervals treat the request as the unit (seeds of one request are correlated); "
        "changes are paired on the same requests.",
        *figures.notices,
        *filter(None, [served_evidence_notice(figures.arm_operations)]),
        *far_from_examples_notices(figures.far_from_examples, label),
        *confidence_headline(figures.calibration, figures.arms, label),
        *argument_headline(figures.argument_breakdown),
    ]
    report = Report(run_id=figures.run_id, headline=headline, verdict=verdict, figures=figures)
    report.tables.append(slice_table(figures))
    if figures.slice_changes:
        report.tables.append(slice_changes_table(figures))
    if figures.version_calibrations:  # beside the paired changes: each version's own requests, and the shared ones
        report.tables.append(version_calibration_table(figures.version_calibrations, unit="request"))
    report.tables += per_tool_tables(figures)
    report.tables += tool_changes_tables(figures)
    report.tables.append(pairs_table(figures))
    # beside the pairs: a schema fix, not a description fix
    report.tables += tool_arguments_tables(figures.argument_breakdown, figures.arguments.tools, label)
    report.tables += argument_tables(figures.argument_breakdown, label)
    report.tables += per_tool_argument_tables(figures.arguments, figures.arm_order, figures.rung_of, label)
    report.tables += argument_change_tables(figures.arguments, figures.comparisons)
    if figures.weighted:
        report.tables.append(weighted_table(figures))
    if figures.weighted_changes:
        report.tables.append(weighted_changes_table(figures))
        report.tables += contribution_tables(figures)
    if figures.positions:
        report.tables.append(position_table(figures))
    if figures.calibration:
        report.tables.append(calibration_table(figures))
        report.tables += reliability_tables(figures)
        report.tables.append(coverage_table(figures))
        report.tables.append(threshold_table(figures))
    if figures.interactions:
        report.tables.append(interaction_table_(figures))
    report.tables.append(failures_table(figures))
    report.tables.append(resolution_table(figures))
    report.tables += [table for table in (
        arm_operations_table(figures.arm_operations),
        judge_arguments_table(figures.judge_arguments),  # the judge's verdict beside the argument check
        served_evidence_table(figures.arm_operations),
        far_from_examples_table(figures.far_from_examples, label),
        drops_table(figures),
    ) if table is not None]
    report.charts = charts(figures, report.tables)
    return report


def charts(figures: RunFigures, tables: list[ReportTable]) -> dict[str, list[Chart]]:
    """The HTML report's charts, each after the table it draws: the ladder, each slice's per-tool whiskers,
    a confusion heatmap per rung, the reliability diagram."""
    from tasks.selection import charts as draw

    def heatmap(k: int, arm: str) -> str:
        opened = " open" if k == len(figures.arm_order) - 1 else ""
        return (f"<details{opened}><summary>Confusion heatmap — {figures.rung_of(arm)}. {html.escape(arm)}</summary>"
                + figure_html(draw.confusion_heatmap(figures, arm),
                              "Rows: expected tool; columns: the answer. Blue outlined = correct; orange = a "
                              "confusion; darker = a larger share of the row.") + "</details>")

    def whiskers(slice_: str) -> str:
        return figure_html(draw.tool_whisker_chart(figures, slice_),
                           f"Per-tool accuracy across rungs, slice {slice_}: markers at the accuracy, whiskers the "
                           "95% interval; traffic share beside the tool.")

    found: dict[str, list[Chart]] = {
        "slices": [lambda: figure_html(draw.ladder_chart(figures),
                                       "The ladder by slice: accuracy per rung with 95% intervals.")],
        "pairs": [lambda k=k, arm=arm: heatmap(k, arm) for k, arm in enumerate(figures.arm_order)],
        "calibration": [lambda: figure_html(draw.reliability_chart(figures),
                                            "Reliability diagram: accuracy against mean confidence in ten bins; the "
                                            "dashed diagonal is perfect calibration; marker area follows the rows "
                                            "in the bin.")],
    }
    for table in tables:
        if table.key.startswith("tools-") and table.key.endswith("-1"):
            found[table.key] = [lambda slice_=table.key[len("tools-"):-len("-1")]: whiskers(slice_)]
    return found


def drops_table(figures: RunFigures) -> ReportTable | None:
    """The per-tool drops outside the noise, for the markdown summary (a pull-request comment)."""
    drops = sorted((c for c in figures.tool_changes if c.significant and c.paired.change.estimate < 0),
                   key=lambda c: c.paired.change.estimate)
    if not drops:
        return None
    return ReportTable(
        title="Per-tool drops (paired: p < 0.05 and the 95% CI excludes 0)",
        columns=["comparison", "slice", "tool", "traffic", "Δ pts", "95% CI", "worse/better", "p", "seed spread"],
        rows=[[f"{c.baseline} → {c.arm}", c.slice, c.tool or "", pct(figures.weights.get(c.tool or "")),
               points(c.paired.change.estimate), change_span(c.paired.change), f"{c.paired.worse} / {c.paired.better}",
               p_value(c.paired.p_value), f"{100 * c.noise_floor:.1f}"] for c in drops],
        key="drops", summary_only=True,
        note="Every paired drop whose 95% CI excludes 0 (p < 0.05 is the same test); the CI is taken over every "
             "seed of every request, so a drop no larger than the seed spread is still a drop when the CI says so. "
             "seed spread = the larger of the two arms' max − min over seeds, shown beside it, judging nothing.")


def slice_table(figures: RunFigures) -> ReportTable:
    levels = sorted(figures.slices, key=lambda x: (x.slice, x.rung))
    rows = [[level.slice, arm_label(figures, level.arm), f"{level.n_requests}×{len(level.seed_accuracies)}",
             pct_with_fraction(level.correct, level.n), span(level.ci_low, level.ci_high),
             seeds_text(level.seed_accuracies), points(level.seed_spread) or "0.0"] for level in levels]
    return ReportTable(
        title="Accuracy by slice and rung (slices are never averaged together)",
        columns=["slice", "rung", "req×seeds", "accuracy", "95% CI", "per seed", "spread"],
        rows=rows, sections=group_starts([x.slice for x in levels]), key="slices", summary=True,
        note="95% CI: Wilson on the effective number of requests (the sampling uncertainty: which requests the "
             "set happens to hold). spread = max − min over seeds (the seed noise floor: how much the tool order "
             "alone moves the figure); a spread of 0.0 means the seeds agreed, not that the figure is exact.",
    )


SIGNIFICANCE = 0.05
RESOLUTION_POWER = 0.8


def slice_changes_table(figures: RunFigures) -> ReportTable:
    starts = group_starts([(c.baseline, c.arm) for c in figures.slice_changes])
    rows = [[f"{c.baseline} → {c.arm}" if i == 0 or i in starts else "", c.slice, points(c.paired.change.estimate),
             *change_cells(c.paired)] for i, c in enumerate(figures.slice_changes)]
    return ReportTable(
        title="Rung-to-rung changes by slice, paired on the same requests",
        columns=["comparison", "slice", "Δ pts", "95% CI", "worse/better", "p", "reading"],
        rows=rows, sections=starts, key="slice-changes", summary=True, wrap=["comparison"],
        note="worse / better = requests right on fewer / more of their seeds after than before; CI: paired score "
             "interval over every seed of every request (Tango's, on counts adjusted by the design effect: the "
             "request is the cluster); p: the score test that CI inverts, at 0. ▼ / ▲ = the CI excludes 0 (the "
             "same as p < 0.05); could be chance = it holds 0. The CI is for the tool orders the seeds recorded "
             "(the same in both arms); the per-seed spread shows how far other orders move a figure.",
    )


def _tool_cell(level: ToolLevel | None) -> str:
    """Accuracy (fraction on small denominators), then the 95% CI: '' for a rung without the tool."""
    return "" if level is None else accuracy_cell(level.correct, level.n, level.interval, level.seed_spread)


def _requests_cell(by_arm: dict[str, ToolLevel], arms: list[str]) -> str:
    """Requests behind a tool in each rung of the table: '24' when they agree, '140/140/140/6' when not."""
    counts = [str(by_arm[a].n_requests) if a in by_arm else "–" for a in arms]
    return counts[0] if len(set(counts)) == 1 else "/".join(counts)


def per_tool_tables(figures: RunFigures) -> list[ReportTable]:
    cells: dict[tuple[str, str], dict[str, ToolLevel]] = {}
    for level in figures.tools:
        cells.setdefault((level.slice, level.tool), {})[level.arm] = level
    tables = []
    for slice_ in sorted({s for s, _ in cells}):
        for k, (part, chunk) in enumerate(in_tables(figures.arm_order)):
            rows = []
            for (s, tool), by_arm in sorted(cells.items()):
                if s != slice_:
                    continue
                rows.append([tool, pct(figures.weights.get(tool)), _requests_cell(by_arm, chunk)]
                            + [_tool_cell(by_arm.get(arm)) for arm in chunk])
            tables.append(ReportTable(
                title=f"Per-tool accuracy, slice {slice_}{part}: accuracy, then its 95% CI",
                columns=["tool", "traffic", "req"] + [f"rung {figures.rung_of(a)}" for a in chunk],
                rows=rows, key=f"tools-{slice_}-{k + 1}",
                note="rungs: " + " · ".join(f"{figures.rung_of(a)} {a}" for a in chunk) + ". traffic = share "
                     "of production volume; req = requests labelled with the tool in each rung shown (each under "
                     "every seed), one number when the rungs agree, else one per rung in order ('–' = none); "
                     "spread = max − min over seeds, shown when they disagree.",
            ))
    return tables


def tool_changes_tables(figures: RunFigures) -> list[ReportTable]:
    """One table per comparison and slice: the tools where some request changed, worst first."""
    tables = []
    for comparison in figures.comparisons:
        base, arm = comparison["baseline"], comparison["arm"]
        changes = [c for c in figures.tool_changes if c.baseline == base and c.arm == arm]
        for slice_ in sorted({c.slice for c in changes}):
            in_slice = [c for c in changes if c.slice == slice_]
            moved = [c for c in in_slice if c.paired.discordant or abs(c.paired.change.estimate) > 1e-12]
            rows = []
            for c in sorted(moved, key=lambda c: (c.paired.change.estimate, c.tool or "")):
                rows.append([c.tool or "", pct(figures.weights.get(c.tool or "")), str(c.paired.n_requests),
                             points(c.paired.change.estimate), *change_cells(c.paired)])
            if not rows:
                continue
            unchanged = len(in_slice) - len(moved)
            relabelled = [f"{c.tool} {c.n_relabelled}" for c in in_slice if c.n_relabelled]
            tables.append(ReportTable(
                title=f"Per-tool changes {base} → {arm}, slice {slice_} (changed: "
                      f"{', '.join(comparison['changed'])}), paired",
                columns=["tool", "traffic", "req", "Δ pts", "95% CI", "worse/better", "p", "reading"],
                rows=rows, key=f"tool-changes-{base}-{arm}-{slice_}",
                note=f"{unchanged} tool(s) where no request changed are not listed. Requests whose label differs "
                     "between the two arms are left out of a tool's change"
                     + (f" (relabelled: {', '.join(relabelled)})." if relabelled else "."),
            ))
    return tables


def pairs_table(figures: RunFigures) -> ReportTable:
    rows, count, shown = [], {}, []
    for p in figures.pairs:
        count[p.arm] = count.get(p.arm, 0) + 1
        if count[p.arm] > TOP_PAIRS:
            continue
        shown.append(p.arm)
        rate = pct_with_fraction(p.n, p.n_offered_together) if p.n_offered_together else "—"
        rows.append([arm_label(figures, p.arm) if count[p.arm] == 1 else "", f"{p.expected} → {p.chosen}", str(p.n),
                     f"{pct(p.share.estimate)} ({interval_text(p.share)})", rate])
    return ReportTable(
        title=f"Top {TOP_PAIRS} confused pairs per rung (expected → chosen)",
        columns=["rung", "pair", "rows", "failure share (95% CI)", "rate when offered"],
        rows=rows, sections=group_starts(shown), key="pairs", summary=True, wrap=["rung", "pair"],
        note="share of failures: of the rung's rows that were not correct; rate when offered: of the rows "
             "expecting the tool in which the other was offered too.",
    )


def unweighted_by_slice(figures: RunFigures, arm: str) -> str:
    """The arm's unweighted accuracy per slice (the slice table's figures), one line each: slices are never
    averaged into one figure, so no pooled unweighted figure stands beside the weighted one."""
    return "\n".join(f"{x.slice} {pct(x.accuracy)}" for x in sorted(figures.slices, key=lambda x: x.slice)
                     if x.arm == arm)


def weighted_table(figures: RunFigures) -> ReportTable:
    rows = []
    for w in figures.weighted:
        spread = points(w.seed_spread) or "0.0"
        rows.append([arm_label(figures, w.arm), pct(w.weighted.estimate) if w.weighted else "—",
                     interval_text(w.weighted), spread, pct(w.weight_covered), unweighted_by_slice(figures, w.arm)])
    return ReportTable(
        title=f"Volume-weighted accuracy (production window {figures.run.get('weights_window')})",
        columns=["rung", "weighted", "95% CI", "seed spread", "traffic covered", "unweighted by slice"],
        rows=rows, key="weighted", summary=True, wrap=["unweighted by slice"],
        note="weighted = Σ traffic share × tool accuracy over the tools this rung has requests for, each tool's "
             "requests of every slice together (traffic has no slices; 'none' has no traffic weight); traffic "
             "covered = the share of all production traffic held by those tools; CI: each tool's "
             "request-clustered Wilson interval, combined by MOVER. unweighted by slice = the slice table's "
             "accuracy (slices are never averaged together).",
    )


def weighted_changes_table(figures: RunFigures) -> ReportTable:
    rows, sections = [], []
    for (base, arm), change in figures.weighted_changes.items():
        if rows:
            sections.append(len(rows))
        first = [f"{base} → {arm}", points(change.weighted.estimate) if change.weighted else "—",
                 change_span(change.weighted), pct(change.weight_covered)]
        # the comparison's paired change per slice (the slice-change table's figures)
        for k, c in enumerate(c for c in figures.slice_changes if (c.baseline, c.arm) == (base, arm)):
            rows.append((first if k == 0 else ["", "", "", ""])
                        + [c.slice, points(c.paired.change.estimate) or "0.0", change_span(c.paired.change)])
        if not any(r[0] == first[0] for r in rows):
            rows.append(first + ["", "", ""])
    return ReportTable(
        title="Weighted change, and the unweighted change per slice, paired on the same requests",
        columns=["comparison", "weighted Δ", "95% CI", "traffic covered", "slice", "unweighted Δ", "95% CI"],
        rows=rows, sections=sections, key="weighted-changes", summary=True, wrap=["comparison"],
        note="weighted Δ: over the requests labelled alike in both arms, each tool's change × its share of the "
             "compared tools' traffic (every slice together: traffic has no slices); traffic covered = the share "
             "of all production traffic held by the tools compared. unweighted Δ: per slice, the slice-change "
             "table's figure (slices are never averaged together). CI: paired score interval over the requests, "
             "each weighted by its tool's traffic share per request.",
    )


def contribution_tables(figures: RunFigures) -> list[ReportTable]:
    tables = []
    for (base, arm), change in figures.weighted_changes.items():
        parts = sorted(change.contributions,
                       key=lambda c: (-(abs(c.weighted_contribution) if c.weighted_contribution is not None
                                        else abs(c.unweighted_contribution)), c.tool))
        shown = [c for c in parts if abs(c.change) > 1e-12][:TOP_CONTRIBUTORS]
        rows = [[c.tool, pct(c.raw_weight), pct(c.traffic_share), points(c.change),
                 points(c.weighted_contribution) if c.weighted_contribution is not None else "—"] for c in shown]
        rest = [c for c in parts if c not in shown]
        if rest:
            weighted_rest = sum(c.weighted_contribution or 0.0 for c in rest)
            rows.append([f"{len(rest)} other tools", pct(sum(c.raw_weight or 0.0 for c in rest)),
                         pct(sum(c.traffic_share or 0.0 for c in rest)), "", points(weighted_rest) or "0.0"])
        rows.append(["total", pct(change.weight_covered), "100.0%", "",
                     points(change.weighted.estimate) if change.weighted else "—"])
        tables.append(ReportTable(
            title=f"Which tools make up the weighted change {base} → {arm} (share × change)",
            columns=["tool", "traffic", "share of compared traffic", "Δ pts", "weighted part"],
            rows=rows, sections=[len(rows) - 1], key=f"contributions-{base}-{arm}", summary=True,
            wrap=["share of compared traffic"],
            note="traffic = the tool's share of all production traffic (as in the per-tool tables); share of "
                 "compared traffic = its share of the traffic of the tools compared (they sum to 100%); "
                 "share of compared traffic × Δ = its part of the weighted change. The unweighted change is "
                 "per slice (slice-change and per-tool change tables).",
        ))
    return tables


def position_table(figures: RunFigures) -> ReportTable:
    by_key: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for r in figures.positions:
        by_key.setdefault((r["arm"], r["slice"]), {})[r["position_third"]] = r
    shifts = {(x.arm, x.slice): x for x in figures.position_shifts}
    rows = []
    for (arm, slice_), thirds in sorted(by_key.items(), key=lambda kv: (figures.rung_of(kv[0][0]), kv[0][1])):
        cells = []
        for t in (1, 2, 3):
            r = thirds.get(t)
            cells.append("" if r is None else f"{pct_with_fraction(r['correct'], r['n'])}\n"
                                               f"{span(r['ci_low'], r['ci_high'])}")
        shift = shifts.get((arm, slice_))
        within = "" if shift is None else (f"{points(shift.change.estimate) or '0.0'} "
                                           f"({shift.worse}/{shift.better})\n{change_span(shift.change)}")
        rows.append([arm_label(figures, arm), slice_] + cells + [within])
    return ReportTable(
        title="Position effect: accuracy by where the expected tool stood in the permuted order",
        columns=["rung", "slice", "first third", "middle third", "last third", "same request, late−early"],
        rows=rows, key="position", wrap=["rung", "same request, late−early"],
        note="Thirds mix tools (one permutation per seed puts each tool at a few positions only); the last "
             "column compares each request with itself: right at its latest position minus right at its "
             "earliest, in points (worse/better requests), with a 95% CI. Rows expecting 'none' have no position.",
    )


def _third(interval: Interval | None) -> str:
    return "" if interval is None else f"{pct(interval.estimate)}\n{interval_text(interval)}"


def _draws_text(figures: RunFigures) -> str:
    draws = sorted({c.ece_if_calibrated.draws for c in figures.calibration if c.ece_if_calibrated is not None})
    return "no draws" if not draws else f"{draws[0]:,} draws" if len(draws) == 1 else \
        f"{draws[0]:,}-{draws[-1]:,} draws (fewer for an arm with many distinct confidences)"


def calibration_table(figures: RunFigures) -> ReportTable:
    rows = []
    for cal in figures.calibration:
        seeds = round(cal.n / cal.n_requests) if cal.n_requests else 0
        thirds = [_third(t) for t in cal.tercile_intervals] or [f"{pct(t['accuracy'])}" for t in cal.terciles]
        brier = f"{cal.brier:.3f}"
        if cal.brier_interval is not None:
            brier += f"\n{cal.brier_interval.low:.3f}–{cal.brier_interval.high:.3f}"
        ece = f"{cal.ece:.3f}"
        if cal.ece_if_calibrated is not None:
            ece += f"\n<{cal.ece_if_calibrated.high:.3f}"
        rows.append([arm_label(figures, cal.arm), f"{cal.n_requests}×{seeds}" if cal.n_requests else str(cal.n),
                     ece, brier]
                    + (thirds + [""] * (3 - len(thirds))) + [f"{points(cal.gap.estimate)}\n{change_span(cal.gap)}"])
    return ReportTable(
        title="Calibration of the selector's confidence (slices pooled: the router sees all traffic)",
        columns=["rung", "req×seeds", "ECE", "Brier", "low third", "mid third", "high third", "high−low"],
        rows=rows, key="calibration", summary=True, wrap=["rung"],
        note="The request is the unit: every 95% CI (second line of a cell) counts a request once, whatever its "
             "seeds. ECE over ten equal-width bins; under it (<x) its noise: the 95th percentile of the ECE a "
             "perfectly calibrated selector would show with the same confidences on as many requests (each draw "
             "makes every request right with the probability of its confidence, its seeds together; "
             f"{_draws_text(figures)} from a fixed seed, so the figure recomputes exactly and another seed moves it by "
             "about 0.001): an ECE under x is not shown to be miscalibration. Brier of the confidence in the pick (0 is perfect); thirds = "
             "accuracy of the least / middle / most confident third of the rows; high−low their difference.",
    )


def reliability_tables(figures: RunFigures) -> list[ReportTable]:
    """Ten equal-width confidence bins: accuracy and mean confidence of the rows in each, per rung."""
    tables = []
    for k, (part, chunk) in enumerate(in_tables(figures.calibration)):
        rows = []
        for b in range(1, 11):
            line = [f"{(b - 1) / 10:.1f}–{b / 10:.1f}"]
            for cal in chunk:
                cell = next((x for x in cal.bins if x["bin"] == b), None)
                interval = cal.bin_intervals[b - 1] if len(cal.bin_intervals) >= b else None
                line.append("" if cell is None else f"{pct_with_fraction(cell['correct'], cell['n'])}\n"
                                                    + (f"{interval_text(interval)}\n" if interval else "")
                                                    + f"conf {cell['mean_confidence']:.2f}")
            rows.append(line)
        tables.append(ReportTable(
            title=f"Reliability: accuracy in ten confidence bins{part}",
            columns=["confidence"] + [f"rung {cal.rung}" for cal in chunk], rows=rows, key=f"reliability-{k + 1}",
            note="Each cell: accuracy of the rows whose confidence falls in the bin (rows: requests × seeds), its "
                 "95% CI with the request as the unit, then their mean confidence; calibrated = the two agree.",
        ))
    return tables


def coverage_table(figures: RunFigures) -> ReportTable:
    """Accuracy against coverage: keep the decisions with confidence >= t."""
    cals = figures.calibration[-ARMS_PER_TABLE:]
    thresholds = [p.threshold for p in cals[0].coverage] if cals else []
    rows = []
    for i, t in enumerate(thresholds):
        line = [f">= {t:.1f}"]
        for cal in cals:
            point = cal.coverage[i]
            line.append(f"{pct(point.accuracy)} at {pct(point.coverage, 0)}" if point.n_kept else "none kept")
        rows.append(line)
    return ReportTable(
        title="Accuracy against coverage (keep decisions with confidence >= t)",
        columns=["t"] + [f"rung {cal.rung}" for cal in cals], rows=rows, key="coverage",
        note="Each cell: accuracy of the kept decisions at the share of rows kept. Chosen on all rows: read it "
             "as a curve; the threshold below is fitted and confirmed on separate requests.",
    )


def threshold_table(figures: RunFigures) -> ReportTable:
    rows = []
    for cal in figures.calibration:
        t = cal.threshold
        if t.threshold is None:
            rows.append([arm_label(figures, cal.arm), pct(t.target_accuracy, 0), "none reaches the target",
                         "", "", ""])
            continue
        confirm = t.confirm_accuracy
        rows.append([arm_label(figures, cal.arm), pct(t.target_accuracy, 0), f"{t.threshold:.3f}",
                     f"{pct(t.fit_accuracy)} at {pct(t.fit_coverage)}\n{t.fit_kept_requests} requests",
                     (f"{pct(confirm.estimate)} ({interval_text(confirm)})\nat {pct(t.confirm_coverage)}, "
                      f"{t.confirm_kept_requests} requests") if confirm else "—",
                     threshold_verdict(t)])
    return ReportTable(
        title="Router threshold: fitted on one half of the requests, judged on the other",
        columns=["rung", "target", "threshold", "fit: accuracy at coverage", "confirm: accuracy (95% CI)",
                 "confirmed?"],
        rows=rows, key="threshold", wrap=["rung", "fit: accuracy at coverage", "confirm: accuracy (95% CI)",
                                          "confirmed?"],
        note="Lowest confidence cut whose kept decisions reach the target on the fit half; the confirm half "
             "(requests split by a hash of their id) judges it from its 95% CI: 'confirmed' when the whole CI is at or "
             "above the target, 'not confirmed' when the whole CI is below it, 'inconclusive' when the CI "
             "straddles it (whatever the fit half showed). Never judged on the data it was chosen on.",
    )


def threshold_verdict(fit) -> str:
    """From the confirm half's 95% interval: 'confirmed' (the whole interval meets the target), 'not confirmed
    (86.3% < 90%)' (the whole interval below it), 'inconclusive (88.1%: the CI straddles 90%)', or
    'nothing to confirm'."""
    reading = fit.confirmation
    if reading is None:
        return "nothing to confirm"
    estimate, target = pct(fit.confirm_accuracy.estimate), pct(fit.target_accuracy, 0)
    if reading == "not confirmed":  # the whole interval is below the target: so is the estimate, shown so
        return f"not confirmed ({pct_below(fit.confirm_accuracy.estimate, fit.target_accuracy)} < {target})"
    if reading == "inconclusive":
        return f"inconclusive ({estimate}: the CI straddles {target})"
    return reading


def interaction_table_(figures: RunFigures) -> ReportTable:
    rows = []
    for it in figures.interactions:
        f, t = it.factorial, it.table
        rows.append([f"{f.baseline} / {f.first} / {f.second} / {f.both}", it.slice, pct(t.baseline),
                     f"{points(t.first_effect)} / {points(t.second_effect)}", pct(t.additive_prediction),
                     pct(t.both), f"{points(t.gap.estimate)} ({change_span(t.gap)})"])
    return ReportTable(
        title="2×2 interaction: is the combined arm what the two single changes add up to?",
        columns=["baseline / first / second / both", "slice", "baseline", "effects", "additive", "measured",
                 "gap (95% CI)"],
        rows=rows, key="interaction", wrap=["baseline / first / second / both"],
        note="additive = baseline + each single effect; gap = measured − additive (95% CI: paired score interval "
             "over the requests all four arms answered).",
    )


def failures_table(figures: RunFigures) -> ReportTable:
    rows = [[arm_label(figures, f.arm), f.slice, str(f.invalid), str(f.text_calls), str(f.error), str(f.empty),
             f"{pct_with_fraction(f.invalid + f.error + f.empty, f.n)} ({interval_text(f.rate)})"]
            for f in figures.failures]
    return ReportTable(
        title="Invalid, error and empty rows (counted apart, never as a correct 'none')",
        columns=["rung", "slice", "invalid", "as text", "error", "empty", "failure rate (95% CI)"],
        rows=rows, key="failures", wrap=["rung"],
        note="as text: of the invalid rows, replies that wrote a tool call as text (functions.NAME:, "
             "<tool_call>...</tool_call>) instead of a structured call; on a self-hosted server, check its "
             "tool-call parser and send tool_choice: auto (docs/selection/hosted-models.md, self-hosted models)."
        if any(f.text_calls for f in figures.failures) else "",
    )


def observed_churn(worse: int, better: int, n_requests: int) -> float:
    """The share of requests seen changing *both* ways in a comparison: min(worse, better) / requests.

    The power of the paired test depends on the discordance, so the smallest detectable drop needs the rate
    at which requests change in the direction opposite to the drop while the drop happens. A comparison's
    discordant requests split into a net movement ``|better - worse|`` (its own change: a gain that went one
    way is not evidence that requests also fall back) and a symmetric part ``min(worse, better)`` that went
    each way (requests flipping with no net effect); only the symmetric part is churn. 33 better / 0 worse
    of 140 is a one-way gain: churn 0, not 23.6%."""
    return min(worse, better) / n_requests if n_requests else 0.0


def resolution_table(figures: RunFigures) -> ReportTable:
    """What this task set can resolve at the last rung, per slice: the interval itself and the smallest
    drop the report's own reading (the paired change interval excludes 0) detects with 80% power."""
    rows = []
    last_rung = max((x.rung for x in figures.slices), default=0)
    for level in sorted((x for x in figures.slices if x.rung == last_rung), key=lambda x: x.slice):
        into = [c for c in figures.slice_changes if c.arm == level.arm and c.slice == level.slice]
        seen = into[-1].paired if into else None
        churn = observed_churn(seen.worse, seen.better, seen.n_requests) if seen else 0.0
        found = planned_drop(level.accuracy, level.n_requests, power=RESOLUTION_POWER, alpha=SIGNIFICANCE,
                             churn=churn)
        drop = ("none detectable" if found.drop is None else
                f"{100 * found.drop:.1f} ({found.drop * level.n_requests:.1f} req)")
        source = (f"{100 * found.churn:.1f}% ({seen.worse} worse / {seen.better} better, "
                  f"{into[-1].baseline} → {level.arm})" if seen else "0% (assumed)")
        rows.append([level.slice, str(level.n_requests), span(level.ci_low, level.ci_high),
                     f"±{100 * (level.ci_high - level.ci_low) / 2:.1f}", drop, source,
                     f"{100 / level.n_requests:.2f}"])
    return ReportTable(
        title=f"What this set can resolve (rung {last_rung})",
        columns=["slice", "requests", "95% CI", "± pts", "smallest detectable drop, pts", "churn",
                 "pts per request"],
        rows=rows, key="resolution", wrap=["smallest detectable drop, pts", "pts per request", "churn"],
        note=f"Smallest detectable drop: {100 * RESOLUTION_POWER:.0f}% power of the report's reading (the paired "
             f"95% CI excludes 0) on these paired requests, for seeds that agree, on top of churn: the share of "
             "requests seen changing both ways in the comparison into this rung, min(worse, better) / requests "
             "(that many assumed to turn wrong → right while as many more turn right → wrong beside the drop). A "
             "one-way change is that comparison's own movement, not churn; 0% churn = every changed request got "
             "worse, the easiest drop to see. Where the seeds disagree the drop is larger: `tooleval plan --seeds S "
             "--icc R` gives it, and sizes a set for a target width or drop.",
    )
