"""The surface instrument's gate kinds (tasks/report/judge.py: the rules, the verdict).

Success gates read a rate and its 95% interval under the gate's rule; the counters allowed to get worse are
judged on their measured value, and each tool's invalid rate on its calls over one pass of the task set
(calls / seeds, never seed replicas). An arm ``arms_not_judged`` names is NOT JUDGED, by name, in every gate
that applies to it, and so is a comparison with it on either side; a counter gate also leaves an arm whose
figure is undefined NOT JUDGED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from schemas.criteria import ArmSelection, GateResult
from schemas.surface.rows import FAILED_STOPS
from schemas.surface.criteria import (
    HandoffGate,
    IrreversibleGate,
    SuccessDropGate,
    SuccessFloorGate,
    ToolInvalidRateGate,
    UpstreamReadsGate,
)
from tasks.report.format import change_span, pct, points
from tasks.report.judge import EVIDENCE_LINES, RULE_WORDS, arms_not_carried_out, beyond, gate_result, select_arms
from tasks.stats.estimate import Interval

if TYPE_CHECKING:  # the figures' module (intervals, calibration) is imported by a run's report, not by a check
    from tasks.surface.figures import SurfaceFigures


def judged_arms(figures: SurfaceFigures, selection: ArmSelection) -> list[str]:
    return select_arms(selection, [a["arm"] for a in figures.arms], {c.arm for c in figures.comparisons})


def task_runs_not_carried_out(figures: SurfaceFigures) -> dict[str, tuple[int, int]]:
    """Per arm, (task runs that could not be carried out, task runs): runs that stopped on a provider error, a
    failed surface or the run's budget (``FAILED_STOPS``), and runs every call of which failed because the agent
    could not fill an argument (task_unfilled_arguments.runs_only_unfilled: they measured the agent's missing
    input, not the surface)."""
    counts: dict[str, tuple[int, int]] = {}
    for r in figures.stop_reasons:
        failed, total = counts.get(r["arm"], (0, 0))
        counts[r["arm"]] = (failed + (r["n"] if r["stop_reason"] in FAILED_STOPS else 0), total + r["n"])
    for arm, unfilled in {r["arm"]: r["runs_only_unfilled"] for r in figures.unfilled_arguments}.items():
        failed, total = counts.get(arm, (0, 0))
        counts[arm] = (failed + unfilled, total)
    return counts


def arms_met_drift(figures: SurfaceFigures) -> dict[str, str]:
    """Arms some of whose task runs met an MCP server that had drifted from its pinned catalogue (it changed
    mid-run: tasks/surface/catalogue_drift.py), with the words that say so and the first such reason."""
    drifted: dict[str, tuple[int, int, str]] = {}
    for r in figures.stop_reasons:
        n, total, detail = drifted.get(r["arm"], (0, 0, ""))
        drifted[r["arm"]] = (n + (r.get("drifted") or 0), total + r["n"], detail or r.get("drift_detail") or "")
    return {arm: (f"{n:,} of {total:,} task runs met an MCP server that changed during the run, so the arm did not "
                  f"run on one tool surface: {detail}")
            for arm, (n, total, detail) in drifted.items() if n}


def arms_not_judged(figures: SurfaceFigures) -> dict[str, str]:
    """Arms most of whose task runs could not be carried out, and arms any of whose task runs met a server that
    changed mid-run, with the words that say so: no gate judges them, and the report prints no rate for them."""
    return {**arms_not_carried_out(task_runs_not_carried_out(figures), "task runs"), **arms_met_drift(figures)}


def _result(gate: Any, statement: str, cases: list[tuple[bool, str]], rule_words: str = "",
            unjudged: dict[str, str] | None = None) -> GateResult:
    """Failing cases when any fail, else the cases checked (the first few); ``unjudged``: the arms the gate
    applies to that it could not judge (arm -> why)."""
    return gate_result(gate, statement + (f" ({rule_words})" if rule_words else ""), len(cases),
                       [text for bad, text in cases if bad], [text for _, text in cases[:EVIDENCE_LINES]],
                       skip_reason="nothing to judge: no arm or comparison the gate applies to", unjudged=unjudged)


def _comparisons(figures: SurfaceFigures, unjudged: dict[str, str], bad: dict[str, str]) -> list[Any]:
    """The comparisons (not calibrations) whose two arms can both be judged; an arm of the others that cannot
    (``bad``: arm -> why) goes into ``unjudged``."""
    kept = []
    for c in figures.comparisons:
        if c.calibration:
            continue
        missing = [arm for arm in (c.baseline, c.arm) if arm in bad]
        unjudged.update({arm: bad[arm] for arm in missing})
        if not missing:
            kept.append(c)
    return kept


def _arms_split(figures: SurfaceFigures, selection: ArmSelection) -> tuple[set[str], dict[str, str]]:
    """The arms a gate applies to that it can judge, and those it cannot (arm -> why)."""
    bad = arms_not_judged(figures)
    named = judged_arms(figures, selection)
    return {arm for arm in named if arm not in bad}, {arm: bad[arm] for arm in named if arm in bad}


def _success_floor(gate: SuccessFloorGate, figures: SurfaceFigures) -> GateResult:
    arms, unjudged = _arms_split(figures, gate.arms)
    cases = []
    for row in figures.success:
        if row["arm"] in arms and row["slice"] in gate.floors:
            interval = Interval(row["success_rate"], row["ci_low"], row["ci_high"], "clustered wilson")
            floor = gate.floors[row["slice"]]
            cases.append((beyond(interval, floor, True, gate.rule),
                          f"{row['arm']} {row['slice']} ({row['taskset_version']}): {pct(row['success_rate'])} "
                          f"({pct(row['ci_low'])}–{pct(row['ci_high'])}) vs floor {pct(floor)}"))
    return _result(gate, "task success of each named slice is at least its floor", cases, RULE_WORDS[gate.rule],
                   unjudged)


def _success_drop(gate: SuccessDropGate, figures: SurfaceFigures) -> GateResult:
    limit = -gate.max_drop_points / 100
    cases = []
    unjudged: dict[str, str] = {}
    for c in _comparisons(figures, unjudged, arms_not_judged(figures)):
        p = c.paired
        cases.append((beyond(p.change, limit, True, gate.rule),
                      f"{c.baseline} -> {c.arm} {c.slice}: {pct(p.accuracy_from)} -> {pct(p.accuracy_to)} = "
                      f"{points(p.change.estimate)} pts (95% CI {change_span(p.change)}); {p.worse} tasks worse, "
                      f"{p.better} better of {p.n_requests}"))
    return _result(gate, f"no slice's task success drops more than {gate.max_drop_points:g} points in a comparison",
                   cases, RULE_WORDS[gate.rule], unjudged)


def _per_arm(figures: SurfaceFigures) -> dict[str, dict[str, Any]]:
    return {r["arm"]: r for r in figures.side_effects}


def _counter_gate(gate: Any, figures: SurfaceFigures, value: Callable[[dict[str, Any]], float | None], what: str,
                  cap: float | None, increase: float | None = None, ratio: float | None = None, *,
                  undefined: Callable[[dict[str, Any]], str] = lambda row: "undefined",
                  shown: Callable[[dict[str, Any], float], str] = lambda row, v: f"{v:.2f}",
                  cap_text: Callable[[float], str] = lambda cap: f"{cap:g}") -> GateResult:
    """The counter of each arm against ``cap`` and of each comparison against ``increase`` / ``ratio``. An arm
    whose counter is undefined (``undefined`` says why) or most of whose runs could not be carried out is NOT
    JUDGED, by name, and so is every comparison it is in."""
    rows = _per_arm(figures)
    bad = arms_not_judged(figures)
    unjudged: dict[str, str] = {}

    def figure(arm: str) -> float | None:
        """The arm's counter, or None (the arm then named in ``unjudged``)."""
        row = rows.get(arm)
        v = value(row) if row is not None and arm not in bad else None
        if v is None:
            unjudged[arm] = bad.get(arm) or (f"{what} is undefined: {undefined(row)}" if row else "no task run landed")
        return v

    cases: list[tuple[bool, str]] = []
    if cap is not None:
        for arm in judged_arms(figures, getattr(gate, "arms", "candidates")):
            v = figure(arm)
            if v is not None:
                cases.append((v > cap, f"{arm}: {what} {shown(rows[arm], v)} vs cap {cap_text(cap)}"))
    seen: set[tuple[str, str]] = set()
    for c in figures.comparisons:
        if (c.baseline, c.arm) in seen or c.calibration or (increase is None and ratio is None):
            continue
        seen.add((c.baseline, c.arm))
        before, after = figure(c.baseline), figure(c.arm)
        if before is None or after is None:
            continue
        if increase is not None:
            cases.append((after - before > increase, f"{c.baseline} -> {c.arm}: {what} {before:.2f} -> {after:.2f} "
                                                     f"({after - before:+.2f}, allowed +{increase:g})"))
        if ratio is not None:
            grown = after / before if before else (float("inf") if after else 1.0)
            cases.append((grown > ratio, f"{c.baseline} -> {c.arm}: {what} {before:.2f} -> {after:.2f} "
                                         f"(x{grown:.2f}, allowed x{ratio:g})"))
    return _result(gate, gate.__doc__.split("\n")[0].strip() if gate.__doc__ else gate.kind, cases,
                   unjudged=unjudged)


def _irreversible(gate: IrreversibleGate, figures: SurfaceFigures) -> GateResult:
    unwanted = gate.actions == "unwanted"
    key = f"irreversible{'_unwanted' if unwanted else ''}_per_100_{gate.denominator}"
    what = f"{'unwanted ' if unwanted else ''}irreversible actions per 100 {gate.denominator} runs"
    result = _counter_gate(gate, figures, lambda r: r[key], what, gate.max_per_100, increase=gate.max_increase_per_100,
                           undefined=lambda r: f"none of its {r['attempted']:,} runs completed")
    return result.model_copy(update={"statement": f"{what} stay within the limits"})


def _upstream(gate: UpstreamReadsGate, figures: SurfaceFigures) -> GateResult:
    unwanted = gate.reads == "unwanted"
    key = f"upstream_reads{'_unwanted' if unwanted else ''}_per_{gate.per}"
    per = "executed call" if gate.per == "call" else gate.per  # the figure divides by executed calls
    what = f"{'unwanted ' if unwanted else ''}upstream reads per {per}"
    result = _counter_gate(gate, figures, lambda r: r[key], what, gate.max, ratio=gate.max_ratio,
                           undefined=lambda r: f"no call was executed in its {r['attempted']:,} runs")
    return result.model_copy(update={"statement": f"{what} stay within the limits"})


def _handoff(gate: HandoffGate, figures: SurfaceFigures) -> GateResult:
    result = _counter_gate(gate, figures, lambda r: r["handoff_rate"], "runs handed to a human", gate.max_rate,
                           shown=lambda r, v: f"{pct(v)} ({r['handed_to_human']:,} of {r['attempted']:,} runs)",
                           cap_text=pct)
    return result.model_copy(update={"statement": f"at most {pct(gate.max_rate)} of runs end on a human's desk"})


def _per_seed_words(r: dict[str, Any]) -> str:
    """'; 79 a seed over 3 seeds, in 79 tasks' (nothing more for a one-seed arm)."""
    if r["n_seeds"] <= 1:
        return ""
    per_seed = r["calls_per_seed"]
    shown = f"{per_seed:.0f}" if float(per_seed).is_integer() else f"{per_seed:.1f}"
    return f"; {shown} a seed over {r['n_seeds']} seeds, in {r['tasks_with_tool']} tasks"


def _tool_invalid(gate: ToolInvalidRateGate, figures: SurfaceFigures) -> GateResult:
    """A tool is judged on its calls over one pass of the task set (calls / seeds), not on seed replicas: 11
    tasks x 3 identical seeds are 11 calls a seed, as one seed of them would be."""
    arms, unjudged = _arms_split(figures, gate.arms)
    counted = [r for r in figures.tool_counters if r["arm"] in arms and r["calls_per_seed"] >= gate.min_calls]
    cases = [(r["invalid_rate_filled"] > gate.max_rate,
              f"{r['arm']} {r['tool']}: {pct(r['invalid_rate_filled'])} invalid ({r['invalid'] - r['unfilled']}/"
              f"{r['calls'] - r['unfilled']} calls{_unfilled_words(r)}{_per_seed_words(r)})")
             for r in counted if r["invalid_rate_filled"] is not None]
    cases.sort(key=lambda case: not case[0])
    # a tool none of whose calls the agent could fill measured the agent's missing input, not the tool
    unjudged.update({f"{r['arm']} {r['tool']}": f"every one of its {r['calls']:,} calls lacked an argument the agent "
                     "could not fill" for r in counted if r["invalid_rate_filled"] is None})
    return _result(gate, f"no tool with >= {gate.min_calls} calls a seed has more than {pct(gate.max_rate)} of them "
                         "invalid", cases, unjudged=unjudged)


def _unfilled_words(r: dict[str, Any]) -> str:
    return f"; {r['unfilled']} more without an argument the agent could not fill" if r["unfilled"] else ""


JUDGES: dict[str, Callable[[Any, SurfaceFigures], GateResult]] = {
    "success_floor": _success_floor, "success_drop": _success_drop, "irreversible_actions": _irreversible,
    "upstream_reads": _upstream, "handoff_rate": _handoff, "tool_invalid_rate": _tool_invalid,
}
