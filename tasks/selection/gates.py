"""The selection instrument's gate kinds: each reads a figure with its 95% interval from ``RunFigures``
(what the report shows) and applies its pre-registered rule (tasks/report/judge.py: the rules, the
tolerance, the verdict).

An arm most of whose rows are errors (the selector failed after its retries: a provider down, a dead server) is
NOT JUDGED, by name, in every gate but the failure-rate gate (which measures exactly that), and so is every
comparison it is in; so is an arm or comparison whose weighted figure is undefined."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from schemas.criteria import ArmSelection, GateResult
from schemas.selection.criteria import (
    ArgumentDropGate,
    ConfidenceGapGate,
    ConfusedPairGate,
    FailureRateGate,
    HallucinatedParameterGate,
    SliceFloorGate,
    ToolDropGate,
    WeightedDropGate,
    WeightedFloorGate,
)
from tasks.report.format import change_span, interval_text, p_value, pct, pct_with_fraction, points
from tasks.report.judge import RULE_WORDS, TOLERANCE_WORDS, arms_not_carried_out, beyond, gate_result, select_arms
from tasks.stats.estimate import Interval

if TYPE_CHECKING:  # the figures' module (polars, intervals) is imported by a run's report, not by a check
    from tasks.selection.argument_figures import ArgumentChange
    from tasks.selection.figures import Change, RunFigures


@dataclass(frozen=True)
class Case:
    """One thing a gate checked: a figure with its interval, and the line that describes it."""

    value: Interval
    describe: str
    limit: float | None = None
    """The case's own limit (a slice's floor), where the gate has no single one."""


def _arms(figures: RunFigures, selection: ArmSelection) -> list[str]:
    return select_arms(selection, figures.arm_order, {c["arm"] for c in figures.comparisons})


def rows_not_carried_out(figures: RunFigures) -> dict[str, tuple[int, int]]:
    """Per arm, (error rows, rows): rows whose selector failed after its retries could not be carried out."""
    counts: dict[str, tuple[int, int]] = {}
    for f in figures.failures:
        error, n = counts.get(f.arm, (0, 0))
        counts[f.arm] = (error + f.error, n + f.n)
    return counts


def _unjudgeable(figures: RunFigures) -> dict[str, str]:
    """Arms most of whose rows could not be carried out, with the words that say so."""
    return arms_not_carried_out(rows_not_carried_out(figures), "rows")


def _judgeable(figures: RunFigures, selection: ArmSelection, unjudged: dict[str, str]) -> set[str]:
    """The arms the gate judges that can be judged; the others go into ``unjudged`` (arm -> why)."""
    bad = _unjudgeable(figures)
    arms = _arms(figures, selection)
    unjudged.update({arm: bad[arm] for arm in arms if arm in bad})
    return {arm for arm in arms if arm not in bad}


def _compared(figures: RunFigures, base: str, arm: str, unjudged: dict[str, str]) -> bool:
    """Both arms of a comparison can be judged; else the ones that cannot go into ``unjudged``."""
    bad = _unjudgeable(figures)
    unjudged.update({a: bad[a] for a in (base, arm) if a in bad})
    return base not in bad and arm not in bad


def _result(gate, statement: str, cases: list[Case], bad_below: bool, limit: float | None = None,
            skip_reason: str = "", unjudged_reason: str = "", unjudged: dict[str, str] | None = None) -> GateResult:
    """The cases beyond the limit (each case's own where ``limit`` is None) fail; the closest to failing is
    the evidence of a pass. ``bad_below``: lower is worse (floors, drops)."""
    failed = [c for c in cases if beyond(c.value, c.limit if limit is None else limit, bad_below, gate.rule)]
    closest = (min if bad_below else max)(cases, key=lambda c: c.value.estimate, default=None)
    return gate_result(gate, f"{statement} ({RULE_WORDS[gate.rule]}; {TOLERANCE_WORDS})", len(cases),
                       [c.describe for c in failed], [f"closest: {closest.describe}"] if closest else [],
                       skip_reason=skip_reason, unjudged_reason=unjudged_reason, unjudged=unjudged)


def _change_line(c: Change | ArgumentChange, figures: RunFigures, what: str) -> str:
    p = c.paired
    weight = figures.weights.get(c.tool) if c.tool else None
    share = f", {pct(weight)} of traffic" if weight is not None else ""
    noise = f"; seed spread {100 * c.noise_floor:.1f} pts" if c.noise_floor > 0 else ""  # stated, never judging
    return (f"{what} ({c.slice}{share}) {c.baseline} -> {c.arm}: {pct_with_fraction(p.correct_from, p.rows_from)} -> "
            f"{pct_with_fraction(p.correct_to, p.rows_to)} "
            f"= {points(p.change.estimate)} pts (95% CI {change_span(p.change)}); {p.worse} requests worse, "
            f"{p.better} better of {p.n_requests}, score test {_p(p.p_value)}{noise}")


def _p(value: float) -> str:
    text = p_value(value)
    return f"p{text}" if text.startswith("<") else f"p={text}"


def judge_tool_drop(gate: ToolDropGate, figures: RunFigures) -> GateResult:
    statement = (f"no tool with >= {pct(gate.min_volume_share, 0)} of traffic drops more than "
                 f"{gate.max_drop_points:g} points in a comparison (paired on the same requests)")
    if not figures.weights:
        return _result(gate, statement, [], True, unjudged_reason="the run has no production weights: "
                       "which tools carry the volume is unknown")
    cases = []
    unjudged: dict[str, str] = {}
    for c in figures.tool_changes:
        weight = figures.weights.get(c.tool or "")
        if weight is None or weight < gate.min_volume_share:
            continue
        if gate.slices is not None and c.slice not in gate.slices:
            continue
        if _compared(figures, c.baseline, c.arm, unjudged):
            cases.append(Case(c.paired.change, _change_line(c, figures, c.tool or "")))
    return _result(gate, statement, cases, True, -gate.max_drop_points / 100,
                   skip_reason="no comparison has a tool over the volume share", unjudged=unjudged)


def judge_confused_pair(gate: ConfusedPairGate, figures: RunFigures) -> GateResult:
    statement = f"no confused pair carries more than {pct(gate.max_share, 0)} of an arm's failures"
    unjudged: dict[str, str] = {}
    arms = _judgeable(figures, gate.arms, unjudged)
    cases = [Case(p.share, f"{p.expected} -> {p.chosen} in {p.arm}: {p.n} of {p.n_failures} failed rows = "
                           f"{pct(p.share.estimate)} (95% CI {interval_text(p.share)})")
             for p in figures.pairs if p.arm in arms]
    return _result(gate, statement, cases, False, gate.max_share, skip_reason="no arm judged has a confused pair",
                   unjudged=unjudged)


def judge_weighted_floor(gate: WeightedFloorGate, figures: RunFigures) -> GateResult:
    statement = f"traffic-weighted accuracy is at least {pct(gate.min_accuracy, 0)}"
    if not figures.weights:
        return _result(gate, statement, [], True, unjudged_reason="the run has no production weights")
    unjudged: dict[str, str] = {}
    arms = _judgeable(figures, gate.arms, unjudged)
    unjudged.update({w.arm: "no traffic-weighted figure: no tool it has rows for carries a production weight" for w in figures.weighted
                     if w.arm in arms and w.weighted is None})
    cases = [Case(w.weighted, f"{w.arm}: weighted {pct(w.weighted.estimate)} (95% CI {interval_text(w.weighted)}), "
                              f"{pct(w.weight_covered)} of traffic covered; unweighted by slice: "
                              + ", ".join(f"{x.slice} {pct(x.accuracy)}" for x in figures.slices if x.arm == w.arm))
             for w in figures.weighted if w.arm in arms and w.weighted is not None]
    return _result(gate, statement, cases, True, gate.min_accuracy, unjudged=unjudged)


def judge_weighted_drop(gate: WeightedDropGate, figures: RunFigures) -> GateResult:
    statement = f"traffic-weighted accuracy drops no more than {gate.max_drop_points:g} points in a comparison"
    if not figures.weights:
        return _result(gate, statement, [], True, unjudged_reason="the run has no production weights")
    cases = []
    unjudged: dict[str, str] = {}
    for (base, arm), change in figures.weighted_changes.items():
        if not _compared(figures, base, arm, unjudged):
            continue
        if change.weighted is None:
            unjudged[f"{base} -> {arm}"] = ("no traffic-weighted change: no tool of the requests both arms ran "
                                                 "carries a production weight")
            continue
        top = sorted((c for c in change.contributions if c.weighted_contribution is not None),
                     key=lambda c: c.weighted_contribution)[:2]
        drivers = ", ".join(f"{c.tool} {points(c.weighted_contribution)}" for c in top)
        by_slice = ", ".join(f"{c.slice} {points(c.paired.change.estimate) or '0.0'}" for c in figures.slice_changes
                             if c.baseline == base and c.arm == arm)
        cases.append(Case(change.weighted, f"{base} -> {arm}: weighted {points(change.weighted.estimate)} pts "
                                           f"(95% CI {change_span(change.weighted)}); unweighted by slice: "
                                           f"{by_slice}; largest parts: {drivers}"))
    return _result(gate, statement, cases, True, -gate.max_drop_points / 100,
                   skip_reason="the run declares no comparison", unjudged=unjudged)


def judge_slice_floor(gate: SliceFloorGate, figures: RunFigures) -> GateResult:
    floors = ", ".join(f"{s} >= {pct(f, 0)}" for s, f in gate.floors.items())
    statement = f"accuracy per slice: {floors}"
    unjudged: dict[str, str] = {}
    arms = _judgeable(figures, gate.arms, unjudged)
    cases = [Case(level.interval, f"{slice_} in {arm}: {pct_with_fraction(level.correct, level.n)} "
                                  f"(95% CI {interval_text(level.interval)}) vs floor {pct(floor, 0)}", floor)
             for arm in _arms(figures, gate.arms) if arm in arms for slice_, floor in gate.floors.items()
             if (level := figures.level(arm, slice_)) is not None]
    return _result(gate, statement, cases, True, skip_reason="no judged arm has rows in these slices",
                   unjudged=unjudged)


def judge_confidence_gap(gate: ConfidenceGapGate, figures: RunFigures) -> GateResult:
    statement = (f"the least confident third is at least {gate.min_gap_points:g} points less accurate than "
                 f"the most confident third (selectors that give a confidence)")
    unjudged: dict[str, str] = {}
    arms = _judgeable(figures, gate.arms, unjudged)
    cases = []
    for cal in figures.calibration:
        if cal.arm not in arms or not cal.terciles:
            continue
        low, high = cal.terciles[0], cal.terciles[-1]
        cases.append(Case(cal.gap, f"{cal.arm}: most confident third {pct(high['accuracy'])}, least "
                                   f"{pct(low['accuracy'])}: gap {points(cal.gap.estimate)} pts "
                                   f"(95% CI {change_span(cal.gap)})"))
    return _result(gate, statement, cases, True, gate.min_gap_points / 100,
                   skip_reason="no judged arm's selector gives a confidence", unjudged=unjudged)


def judge_failure_rate(gate: FailureRateGate, figures: RunFigures) -> GateResult:
    statement = f"invalid + error + empty rows are at most {pct(gate.max_rate, 1)} of each slice"
    arms = set(_arms(figures, gate.arms))
    cases = [Case(f.rate, f"{f.slice} in {f.arm}: {pct_with_fraction(f.invalid + f.error + f.empty, f.n)} "
                          f"(invalid {f.invalid}, error {f.error}, empty {f.empty}; 95% CI {interval_text(f.rate)})")
             for f in figures.failures if f.arm in arms]
    return _result(gate, statement, cases, False, gate.max_rate)


NO_SCORED_ARGUMENTS = ("no row's arguments were scored: no request carries expected arguments, or no arm's "
                       "selector sends arguments")


def judge_argument_drop(gate: ArgumentDropGate, figures: RunFigures) -> GateResult:
    volume = (f" with >= {pct(gate.min_volume_share, 0)} of traffic" if gate.min_volume_share is not None else "")
    statement = (f"no tool{volume} has its argument accuracy drop more than {gate.max_drop_points:g} points in a "
                 "comparison (paired on requests scored in both arms)")
    if not figures.arguments.scored:
        return _result(gate, statement, [], True, unjudged_reason=NO_SCORED_ARGUMENTS)
    if gate.min_volume_share is not None and not figures.weights:
        return _result(gate, statement, [], True, unjudged_reason="the run has no production weights: "
                       "which tools carry the volume is unknown")
    cases = []
    unjudged: dict[str, str] = {}
    unpaired: dict[tuple[str, str], list[str]] = {}
    for c in figures.arguments.changes:
        if gate.min_volume_share is not None and figures.weights.get(c.tool, 0.0) < gate.min_volume_share:
            continue
        if gate.slices is not None and c.slice not in gate.slices:
            continue
        if not _compared(figures, c.baseline, c.arm, unjudged):
            continue
        if c.paired is None:
            unpaired.setdefault((c.baseline, c.arm), []).append(f"{c.tool} ({c.slice})")
            continue
        line = _change_line(c, figures, f"{c.tool} arguments")
        cases.append(Case(c.paired.change, line + (f"; {c.one_side} requests scored in one arm only, left out"
                                                   if c.one_side else "")))
    for (base, arm), tools in unpaired.items():
        unjudged[f"{base} -> {arm}"] = ("no request scored in both arms for " + ", ".join(tools[:4])
                                        + (f" and {len(tools) - 4} more" if len(tools) > 4 else ""))
    return _result(gate, statement, cases, True, -gate.max_drop_points / 100,
                   skip_reason="no comparison has a tool with scored arguments", unjudged=unjudged)


def judge_hallucinated_parameter(gate: HallucinatedParameterGate, figures: RunFigures) -> GateResult:
    from tasks.selection.argument_figures import no_scored_share

    statement = (f"no parameter outside a tool's schema is sent in more than {pct(gate.max_share, 1)} of the "
                 "tool's scored calls")
    arguments = figures.arguments
    if not arguments.scored:
        return _result(gate, statement, [], False, unjudged_reason=NO_SCORED_ARGUMENTS)
    unjudged: dict[str, str] = {}
    arms = _judgeable(figures, gate.arms, unjudged)
    unjudged.update({arm: "no row's arguments were scored in this arm" for arm in sorted(arms)
                     if not arguments.scored_in(arm)})
    cases = []
    for level in arguments.tools:
        if level.arm not in arms or not level.scored or (gate.slices is not None and level.slice not in gate.slices):
            continue
        found = [h for h in arguments.hallucinations
                 if (h.arm, h.slice, h.tool) == (level.arm, level.slice, level.tool)]
        cases += [Case(h.share, f"{h.tool}.{h.parameter} in {h.arm} ({h.slice}): sent in "
                                f"{pct_with_fraction(h.hallucinated, h.scored)} of scored calls "
                                f"(95% CI {interval_text(h.share)})") for h in found]
        if not found:
            share = no_scored_share(level)
            cases.append(Case(share, f"{level.tool} in {level.arm} ({level.slice}): no hallucinated parameter in "
                                     f"{level.scored:,} scored calls (95% CI {interval_text(share)})"))
    return _result(gate, statement, cases, False, gate.max_share,
                   skip_reason="no judged arm has scored arguments in these slices", unjudged=unjudged)


JUDGES: dict[str, Callable[..., GateResult]] = {
    "tool_drop": judge_tool_drop,
    "confused_pair_share": judge_confused_pair,
    "weighted_floor": judge_weighted_floor,
    "weighted_drop": judge_weighted_drop,
    "slice_floor": judge_slice_floor,
    "confidence_gap": judge_confidence_gap,
    "failure_rate": judge_failure_rate,
    "argument_drop": judge_argument_drop,
    "hallucinated_parameter_share": judge_hallucinated_parameter,
}
