"""Compare two registered runs: paired per-slice and per-tool changes, and the traffic-weighted change, for
an arm of each (``tooleval compare RUN_A RUN_B``), read from the ``run_comparison`` view.

Two runs a month apart measure a change only if the configuration stayed put in every respect but the one
under study (a comparison between two runs a month apart is rejected on sight if an identifier
differs). The arms' catalogues, prompts, pinned model ids, the model ids the provider served,
selectors and task-set versions are compared first; a difference that was not declared (``differ_in``)
refuses the comparison (``NotComparable``), naming both sides' ids. Pairs are matched on request ids, and
on seeds when the arms share some; per-tool changes use the requests whose label is the same on both sides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb

from tasks.files.input_errors import InputError
from warehouse.query import records
from tasks.report.format import change_span, p_value, pct, points
from tasks.report_types import ReportTable
from tasks.stats.paired import PairedComparison, paired_comparison
from tasks.stats.weighted import WeightedChange, weighted_change

RESPECTS = ("catalogue", "prompt", "model", "selector", "version")
"""What ``--differ-in`` may declare; 'model' covers the pinned id and the ids served."""
COVERED_BY = {"served_model": "model"}


class NotComparable(Exception):
    """The two arms differ in more than the declared respect (the message names each differing id)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("\n".join(lines))


@dataclass
class ArmPairComparison:
    run_a: str
    arm_a: str
    run_b: str
    arm_b: str
    differs_in: list[str]
    sides: dict[str, Any]
    """Each side's catalogue, prompt, model, served models, selector and version (the view's columns)."""
    paired_on: str
    shared_seeds: list[int]
    n_requests: int
    slices: dict[str, PairedComparison] = field(default_factory=dict)
    tools: dict[tuple[str, str], PairedComparison] = field(default_factory=dict)
    weighted: WeightedChange | None = None
    weights_window: str | None = None
    n_relabelled: int = 0
    arguments: dict[tuple[str, str], PairedComparison] = field(default_factory=dict)
    """Per (slice, tool): argument accuracy's paired change on the label-stable requests scored on both sides."""
    arguments_one_side: int = 0
    """Label-stable requests whose arguments were scored on one side only (left out of the argument changes)."""


def _run_ids(con: duckdb.DuckDBPyConnection, db: str, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    runs = {r["run_id"]: r for r in records(con, "SELECT * FROM runs WHERE run_id IN (SELECT unnest(?))", [run_ids])}
    missing = [r for r in run_ids if r not in runs]
    if missing:
        from tasks.report.publish import other_instrument, run_instrument

        for run_id in missing:
            if (name := run_instrument(con, run_id)) is not None:
                raise InputError.one(db, f"run {run_id}", "run-instrument",
                                     other_instrument(run_id, name, "tooleval compare"))
        recent = [r for (r,) in con.execute("SELECT run_id FROM runs ORDER BY finished_at DESC LIMIT 5").fetchall()]
        raise InputError.one(db, f"run {missing[0]}", "run-registered", "no such run in this warehouse"
                             + (f"; the latest: {', '.join(recent)}" if recent else ""))
    return runs


def arm_pairs(con: duckdb.DuckDBPyConnection, db: str, run_a: str, run_b: str, arm_a: str | None,
              arm_b: str | None) -> list[tuple[str, str]]:
    """Which arms to pair: the named ones, else every arm name the two runs share, else their only arms."""
    arms = {run: [a for (a,) in con.execute("SELECT arm FROM arms WHERE run_id = ? ORDER BY rung", [run]).fetchall()]
            for run in (run_a, run_b)}
    if arm_a is not None:
        arm_b = arm_b or arm_a
        for run, arm in ((run_a, arm_a), (run_b, arm_b)):
            if arm not in arms[run]:
                raise InputError.one(db, f"run {run}", "arm-exists",
                                     f"no arm '{arm}' in this run; its arms: {', '.join(arms[run])}")
        return [(arm_a, arm_b)]
    shared = [a for a in arms[run_a] if a in arms[run_b]]
    if shared:
        return [(a, a) for a in shared]
    if len(arms[run_a]) == 1 and len(arms[run_b]) == 1:
        return [(arms[run_a][0], arms[run_b][0])]
    raise InputError.one(db, f"runs {run_a} and {run_b}", "arms-paired",
                         f"no arm name in common (run A: {', '.join(arms[run_a])}; run B: {', '.join(arms[run_b])}): "
                         "say which to compare with --arm NAME --arm-b NAME")


def _side_text(respect: str, side: dict[str, Any], suffix: str) -> str:
    """One side's id for a respect, as the refusal names it."""
    if respect == "catalogue":
        return f"{side['catalogue_' + suffix]} (sha256 {str(side['catalogue_hash_' + suffix])[:12]})"
    if respect == "prompt":
        return f"{side['prompt_' + suffix]} (sha256 {str(side['prompt_hash_' + suffix])[:12]})"
    if respect == "model":
        return str(side["model_" + suffix])
    if respect == "served_model":
        return ", ".join(side["served_models_" + suffix] or []) or "(none recorded)"
    if respect == "selector":
        return str(side["selector_" + suffix])
    return f"{side['version_' + suffix]} (hash {str(side['version_hash_' + suffix])[:12]})"


def _weights(con: duckdb.DuckDBPyConnection, run: dict[str, Any]) -> dict[str, float]:
    if not run.get("weights_window"):
        return {}
    return {t: w for t, w in con.execute(
        "SELECT tool, weight FROM production_weights WHERE taskset = ? AND window_id = ? AND tool <> 'none'",
        [run["taskset"], run["weights_window"]]).fetchall()}


ROW_COLUMNS = ("arm_a", "arm_b", "slice", "label_a", "label_stable", "trials_a", "correct_a", "trials_b",
               "correct_b", "scored_a", "arguments_right_a", "scored_b", "arguments_right_b")
"""The ``run_comparison`` columns read for every request (those the changes are counted from); the pair's own
columns (SIDE_COLUMNS) are read once."""
SIDE_COLUMNS = ("run_a", "run_b", "paired_on", "shared_seeds", "differs_in", "catalogue_a", "catalogue_b",
                "catalogue_hash_a", "catalogue_hash_b", "prompt_a", "prompt_b", "prompt_hash_a", "prompt_hash_b",
                "model_a", "model_b", "served_models_a", "served_models_b", "selector_a", "selector_b", "version_a",
                "version_b", "version_hash_a", "version_hash_b")
_PAIR_SQL = (f"SELECT {', '.join(ROW_COLUMNS)}, CASE WHEN row_number() OVER (PARTITION BY arm_a, arm_b) = 1 THEN "
             f"struct_pack({', '.join(SIDE_COLUMNS)}) END AS side FROM run_comparison WHERE run_a = ? AND run_b = ? ")


def pair_rows(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str,
              pairs: list[tuple[str, str]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The ``run_comparison`` rows of each arm pair, the pair's own columns (``SIDE_COLUMNS``) in its first row
    only: converting them for every request was half of reading the rows. Arms of the same name on both sides
    (the usual case) are read in one query: binding the view costs more than reading a pair's rows."""
    if len(pairs) > 1 and all(a == b for a, b in pairs):
        read = records(con, _PAIR_SQL + "AND arm_a = arm_b", [run_a, run_b])
    else:
        read = [row for a, b in pairs for row in records(con, _PAIR_SQL + "AND arm_a = ? AND arm_b = ?",
                                                         [run_a, run_b, a, b])]
    by_pair: dict[tuple[str, str], list[dict[str, Any]]] = {pair: [] for pair in pairs}
    for row in read:
        side = row.pop("side")
        if (pair := (row["arm_a"], row["arm_b"])) in by_pair:
            if side:  # the pair's first row carries its own columns: compare_runs reads them from rows[0]
                by_pair[pair].insert(0, {**row, **side})
            else:
                by_pair[pair].append(row)
    return by_pair


def compare_runs(con: duckdb.DuckDBPyConnection, db: str, run_a: str, run_b: str, *, arm_a: str | None = None,
                 arm_b: str | None = None, differ_in: list[str] | tuple[str, ...] = ()) -> list[ArmPairComparison]:
    """Every arm pair of the two runs, compared; raises NotComparable before computing anything when a pair
    differs in a respect not in ``differ_in``, and InputError on unknown runs or arms."""
    if run_a == run_b:
        raise InputError.one(db, f"run {run_a}", "two-runs", "compare two different runs")
    runs = _run_ids(con, db, [run_a, run_b])
    pairs = arm_pairs(con, db, run_a, run_b, arm_a, arm_b)
    declared = set(differ_in)
    results, refusals = [], []
    rows_of = pair_rows(con, run_a, run_b, pairs)
    window_run = runs[run_b] if runs[run_b].get("weights_window") else runs[run_a]
    weights = _weights(con, window_run)  # the runs' traffic weights: the same for every arm pair
    for a, b in pairs:
        rows = rows_of[(a, b)]
        if not rows:
            raise InputError.one(db, f"arms {run_a}/{a} and {run_b}/{b}", "requests-shared",
                                 "the two arms answered no request in common (no request id on both sides)")
        side = rows[0]
        differs = list(side["differs_in"])
        undeclared = [d for d in differs if COVERED_BY.get(d, d) not in declared]
        if undeclared:
            refusals.append(f"{a} (run {run_a}) -> {b} (run {run_b}) differ in "
                            + "; ".join(f"{d}: {_side_text(d, side, 'a')} -> {_side_text(d, side, 'b')}"
                                        for d in undeclared))
            continue
        results.append(_paired(rows, side, differs, window_run, weights))
    if refusals:
        hint = ("declare the one difference you mean to measure with --differ-in "
                + "|".join(RESPECTS) + "; more than one is never a comparison of one change")
        raise NotComparable(["not comparable:", *[f"  {line}" for line in refusals], hint])
    return results


def _paired(rows: list[dict[str, Any]], side: dict[str, Any], differs: list[str], window_run: dict[str, Any],
            weights: dict[str, float]) -> ArmPairComparison:
    """One arm pair's paired changes; ``weights``: the traffic weights of ``window_run`` (run B's window, else
    run A's), empty when neither has one."""
    result = ArmPairComparison(run_a=side["run_a"], arm_a=side["arm_a"], run_b=side["run_b"], arm_b=side["arm_b"],
                               differs_in=differs, sides=side, paired_on=side["paired_on"],
                               shared_seeds=list(side["shared_seeds"] or []), n_requests=len(rows))
    by_slice: dict[str, list[dict[str, Any]]] = {}
    by_tool: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        by_slice.setdefault(row["slice"], []).append(row)
        if row["label_stable"]:
            by_tool.setdefault((row["slice"], row["label_a"]), []).append(row)
    result.n_relabelled = sum(not r["label_stable"] for r in rows)

    def compare(group: list[dict[str, Any]]) -> PairedComparison:
        return paired_comparison([r["correct_a"] for r in group], [r["trials_a"] for r in group],
                                 [r["correct_b"] for r in group], [r["trials_b"] for r in group])

    result.slices = {s: compare(g) for s, g in sorted(by_slice.items())}
    result.tools = {k: compare(g) for k, g in sorted(by_tool.items())}
    result.arguments, result.arguments_one_side = _argument_changes(by_tool)
    stable = [r for r in rows if r["label_stable"]]
    if weights and stable:
        result.weights_window = window_run["weights_window"]
        result.weighted = weighted_change([r["label_a"] for r in stable], [r["correct_a"] for r in stable],
                                          [r["trials_a"] for r in stable], [r["correct_b"] for r in stable],
                                          [r["trials_b"] for r in stable], weights)
    return result


def _argument_changes(by_tool: dict[tuple[str, str], list[dict[str, Any]]]
                      ) -> tuple[dict[tuple[str, str], PairedComparison], int]:
    """Per (slice, tool), argument accuracy's paired change on the requests scored on both sides; and how many
    requests were scored on one side only."""
    changes, one_side = {}, 0
    for key, group in sorted(by_tool.items()):
        pairs = [r for r in group if r["scored_a"] and r["scored_b"]]
        one_side += sum(bool(r["scored_a"]) != bool(r["scored_b"]) for r in group)
        if pairs:
            changes[key] = paired_comparison([r["arguments_right_a"] for r in pairs], [r["scored_a"] for r in pairs],
                                             [r["arguments_right_b"] for r in pairs], [r["scored_b"] for r in pairs])
    return changes, one_side


def _change_cells(c: PairedComparison) -> list[str]:
    return [pct(c.accuracy_from), pct(c.accuracy_to), points(c.change.estimate) or "0.0", change_span(c.change),
            f"{c.worse}/{c.better}", p_value(c.p_value)]


CHANGE_COLUMNS = ["from", "to", "change", "95% CI", "w/b", "p"]


def comparison_headline(result: ArmPairComparison) -> list[str]:
    s = result.sides
    same = [f"catalogue {s['catalogue_a']}", f"prompt {s['prompt_a']}", f"model {s['model_a']}",
            f"selector {s['selector_a']}", f"version {s['version_a']}"]
    kept = [text for text, respect in zip(same, RESPECTS) if respect not in result.differs_in
            and not (respect == "model" and "served_model" in result.differs_in)]
    changed = [f"{d}: {_side_text(d, s, 'a')} -> {_side_text(d, s, 'b')}" for d in result.differs_in]
    seeds = (f"request ids and seeds {', '.join(map(str, result.shared_seeds))}" if result.shared_seeds
             else "request ids (no seed in common: every seed of each side)")
    lines = [f"{result.arm_a} (run {result.run_a}) -> {result.arm_b} (run {result.run_b})",
             "changed: " + ("; ".join(changed) if changed else "nothing (a repeat: any change is noise)"),
             "the same: " + ", ".join(kept),
             f"paired on {result.n_requests:,} requests by {seeds}"
             + (f"; {result.n_relabelled} labelled differently on the two sides (in the slices only)"
                if result.n_relabelled else "")]
    if result.arguments_one_side and not result.arguments:
        lines.append(f"argument accuracy not compared: {result.arguments_one_side:,} requests scored on one side "
                     "only, none on both")
    if result.weighted is not None and result.weighted.weighted is not None:
        w = result.weighted
        lines.append(f"traffic-weighted change (window {result.weights_window}, {pct(w.weight_covered)} of traffic): "
                     f"{points(w.weighted.estimate) or '0.0'} pts ({change_span(w.weighted)}); unweighted: per "
                     "slice below (slices are never averaged together)")
    return lines


def comparison_tables(result: ArmPairComparison) -> list[ReportTable]:
    """Per slice; per tool, one table per slice; the tools that moved the weighted change most."""
    key = f"{result.arm_a}->{result.arm_b}"
    tables = [ReportTable(
        title="Per slice (slices are never averaged together)", key=f"slices:{key}",
        columns=["slice", "req"] + CHANGE_COLUMNS,
        rows=[[s, f"{c.n_requests:,}"] + _change_cells(c) for s, c in result.slices.items()],
        note="Paired on the same requests, over every seed of each (the request is the cluster). w/b: requests "
             "worse / better (right on fewer / more of their seeds in run B than in run A). 95% CI: paired score "
             "interval (Tango, design-effect adjusted); p: the score test that CI inverts (p < 0.05 exactly when "
             "it excludes 0).", wrap=["slice"])]
    traffic = {c.tool: c.raw_weight for c in result.weighted.contributions} if result.weighted else {}
    for slice_ in result.slices:
        rows = [[tool, pct(traffic.get(tool)) if traffic.get(tool) is not None else "—", f"{c.n_requests:,}"]
                + _change_cells(c) for (s, tool), c in result.tools.items() if s == slice_]
        if rows:
            tables.append(ReportTable(title=f"Per tool, slice {slice_} (requests labelled the same in both runs)",
                                      key=f"tools:{slice_}:{key}", columns=["tool", "traffic", "req"] + CHANGE_COLUMNS,
                                      rows=rows, wrap=["tool"],
                                      note="traffic = the tool's share of all production traffic in the window "
                                           "(as in the run report)." if traffic else ""))
    tables += argument_tables(result, key)
    if result.weighted is not None and result.weighted.weighted is not None:
        moved = sorted((c for c in result.weighted.contributions if c.weighted_contribution),
                       key=lambda c: abs(c.weighted_contribution or 0), reverse=True)[:8]
        tables.append(ReportTable(
            title="Contributions to the traffic-weighted change (the tools that moved it most)",
            key=f"weighted:{key}", columns=["tool", "traffic", "share of compared traffic", "change",
                                            "contribution (pts)"],
            rows=[[c.tool, pct(c.raw_weight), pct(c.traffic_share), points(c.change) or "0.0",
                   points(c.weighted_contribution) or "0.0"] for c in moved] or [["(no tool changed)", "", "", "", ""]],
            note="traffic = the tool's share of all production traffic; share of compared traffic = its share of "
                 "the compared tools' traffic (they sum to 100%); contribution = share of compared traffic x "
                 "change; every tool: the weighted_contribution view.", wrap=["tool", "share of compared traffic"]))
    return tables


def argument_tables(result: ArmPairComparison, key: str) -> list[ReportTable]:
    """Per slice, each tool's argument accuracy change (scored rows: calls of the right tool on requests with
    expected arguments); none when no request was scored on both sides."""
    tables = []
    for slice_ in result.slices:
        rows = [[tool, f"{c.n_requests:,}"] + _change_cells(c) for (s, tool), c in result.arguments.items()
                if s == slice_]
        if rows:
            tables.append(ReportTable(
                title=f"Argument accuracy per tool, slice {slice_} (requests scored on both sides)",
                key=f"arguments:{slice_}:{key}", columns=["tool", "req"] + CHANGE_COLUMNS, rows=rows, wrap=["tool"],
                note="Rows whose arguments were scored: calls of the expected tool on a request with expected "
                     "arguments; from / to = right arguments / scored rows; the interval and test as per tool."
                     + (f" {result.arguments_one_side:,} requests scored on one side only are left out."
                        if result.arguments_one_side else "")))
    return tables
