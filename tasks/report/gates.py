"""Judge a run's figures against its registered acceptance criteria: PASS / FAIL per gate, with evidence.

Every gate reads a figure with its 95% interval from ``RunFigures`` (what the report shows) and applies
its pre-registered rule (schemas/criteria.py: point, confident, demonstrated). The verdict is FAIL when
any gate fails; NOT JUDGED when the criteria changed since registration or a gate lacks what it needs.

Tolerance: a figure and its limit are compared as the report prints them, to 0.1 point
(``format.as_printed``): a drop of -0.10000000000000003 prints as -10.0 and is judged as exactly -10.0,
i.e. not "more than 10 points". Floating-point error never decides a gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from schemas.criteria import ArmSelection, GateResult, Verdict
from schemas.selection.criteria import (
    ConfidenceGapGate,
    ConfusedPairGate,
    FailureRateGate,
    SelectionCriteria,
    SliceFloorGate,
    ToolDropGate,
    WeightedDropGate,
    WeightedFloorGate,
)
from tasks.experiment.criteria import CriteriaRegistration
from tasks.report.figures import Change, RunFigures
from tasks.report.format import (
    PRINTED_DIGITS,
    as_printed,
    change_span,
    interval_text,
    p_value,
    pct,
    pct_with_fraction,
    points,
)
from tasks.stats.estimate import Interval

EVIDENCE_LINES = 6
"""Failing cases listed per gate before '... and N more'."""

RULE_WORDS = {
    "point": "judged on the measured value",
    "confident": "fails only when the whole 95% interval is beyond the limit",
    "demonstrated": "passes only when the whole 95% interval is within the limit",
}
TOLERANCE_WORDS = f"compared as printed, to {10 ** -PRINTED_DIGITS:g} point"


@dataclass(frozen=True)
class Case:
    """One thing a gate checked: a figure with its interval, and the line that describes it."""

    value: Interval
    describe: str


def beyond(interval: Interval, limit: float, bad_below: bool, rule: str) -> bool:
    """Is the figure beyond the limit under the rule? ``bad_below``: lower is worse (floors, drops).
    Both are compared as printed (to 0.1 point): a figure that prints as the limit is at the limit."""
    if rule == "point":
        x = interval.estimate
    elif rule == "confident":  # fail only when the whole interval is on the bad side
        x = interval.high if bad_below else interval.low
    else:  # demonstrated: fail unless the whole interval is on the good side
        x = interval.low if bad_below else interval.high
    shown, bound = as_printed(x), as_printed(limit)
    return shown < bound if bad_below else shown > bound


def select_arms(figures: RunFigures, selection: ArmSelection) -> list[str]:
    order = figures.arm_order
    if isinstance(selection, list):
        return [a for a in order if a in selection]
    if selection == "all":
        return order
    if selection == "final":
        return order[-1:]
    candidates = {c["arm"] for c in figures.comparisons}
    return [a for a in order if a in candidates] or order


def _result(gate, statement: str, cases: list[Case], failed: list[Case], closest: Case | None,
            skip_reason: str = "", unjudged_reason: str = "") -> GateResult:
    rule = f" ({RULE_WORDS[gate.rule]}; {TOLERANCE_WORDS})"
    why = " ".join(gate.why.split())
    if unjudged_reason:
        return GateResult(name=gate.name, kind=gate.kind, status="NOT JUDGED", statement=statement + rule,
                          evidence=[unjudged_reason], why=why)
    if not cases:
        return GateResult(name=gate.name, kind=gate.kind, status="SKIP", statement=statement + rule,
                          evidence=[skip_reason or "nothing to check"], why=why)
    if failed:
        evidence = [c.describe for c in failed[:EVIDENCE_LINES]]
        if len(failed) > EVIDENCE_LINES:
            evidence.append(f"... and {len(failed) - EVIDENCE_LINES} more")
        status = "FAIL"
    else:
        evidence = [f"closest: {closest.describe}"] if closest else []
        status = "PASS"
    return GateResult(name=gate.name, kind=gate.kind, status=status, statement=statement + rule,
                      evidence=evidence, n_checked=len(cases), n_failed=len(failed), why=why)


def _change_line(c: Change, figures: RunFigures, what: str) -> str:
    p = c.paired
    weight = figures.weights.get(c.tool) if c.tool else None
    share = f", {pct(weight)} of traffic" if weight is not None else ""
    noise = f"; inside the seed noise floor ({points(c.noise_floor)} pts)" if c.inside_noise else ""
    return (f"{what} ({c.slice}{share}) {c.baseline} -> {c.arm}: {pct_with_fraction(p.correct_from, p.rows_from)} -> "
            f"{pct_with_fraction(p.correct_to, p.rows_to)} "
            f"= {points(p.change.estimate)} pts (95% CI {change_span(p.change)}); {p.worse} requests worse, "
            f"{p.better} better of {p.n_requests}, exact McNemar {_p(p.p_value)}{noise}")


def _p(value: float) -> str:
    text = p_value(value)
    return f"p{text}" if text.startswith("<") else f"p={text}"


def judge_tool_drop(gate: ToolDropGate, figures: RunFigures) -> GateResult:
    statement = (f"no tool with >= {pct(gate.min_volume_share, 0)} of traffic drops more than "
                 f"{gate.max_drop_points:g} points in a comparison (paired on the same requests)")
    if not figures.weights:
        return _result(gate, statement, [], [], None, unjudged_reason="the run has no production weights: "
                       "which tools carry the volume is unknown")
    limit = -gate.max_drop_points / 100
    cases = []
    for c in figures.tool_changes:
        weight = figures.weights.get(c.tool or "")
        if weight is None or weight < gate.min_volume_share:
            continue
        if gate.slices is not None and c.slice not in gate.slices:
            continue
        cases.append(Case(c.paired.change, _change_line(c, figures, c.tool or "")))
    failed = [x for x in cases if beyond(x.value, limit, True, gate.rule)]
    closest = min(cases, key=lambda x: x.value.estimate, default=None)
    return _result(gate, statement, cases, failed, closest,
                   skip_reason="no comparison has a tool over the volume share")


def judge_confused_pair(gate: ConfusedPairGate, figures: RunFigures) -> GateResult:
    statement = f"no confused pair carries more than {pct(gate.max_share, 0)} of an arm's failures"
    arms = set(select_arms(figures, gate.arms))
    cases = [Case(p.share, f"{p.expected} -> {p.chosen} in {p.arm}: {p.n} of {p.n_failures} failed rows = "
                           f"{pct(p.share.estimate)} (95% CI {interval_text(p.share)})")
             for p in figures.pairs if p.arm in arms]
    failed = [x for x in cases if beyond(x.value, gate.max_share, False, gate.rule)]
    closest = max(cases, key=lambda x: x.value.estimate, default=None)
    return _result(gate, statement, cases, failed, closest, skip_reason="no arm judged has a confused pair")


def judge_weighted_floor(gate: WeightedFloorGate, figures: RunFigures) -> GateResult:
    statement = f"traffic-weighted accuracy is at least {pct(gate.min_accuracy, 0)}"
    if not figures.weights:
        return _result(gate, statement, [], [], None, unjudged_reason="the run has no production weights")
    arms = set(select_arms(figures, gate.arms))
    cases = [Case(w.weighted, f"{w.arm}: weighted {pct(w.weighted.estimate)} (95% CI {interval_text(w.weighted)}), "
                              f"unweighted {pct(w.unweighted)}, {pct(w.weight_covered)} of traffic covered")
             for w in figures.weighted if w.arm in arms and w.weighted is not None]
    failed = [x for x in cases if beyond(x.value, gate.min_accuracy, True, gate.rule)]
    closest = min(cases, key=lambda x: x.value.estimate, default=None)
    return _result(gate, statement, cases, failed, closest)


def judge_weighted_drop(gate: WeightedDropGate, figures: RunFigures) -> GateResult:
    statement = f"traffic-weighted accuracy drops no more than {gate.max_drop_points:g} points in a comparison"
    if not figures.weights:
        return _result(gate, statement, [], [], None, unjudged_reason="the run has no production weights")
    cases = []
    for (base, arm), change in figures.weighted_changes.items():
        if change.weighted is None:
            continue
        top = sorted((c for c in change.contributions if c.weighted_contribution is not None),
                     key=lambda c: c.weighted_contribution)[:2]
        drivers = ", ".join(f"{c.tool} {points(c.weighted_contribution)}" for c in top)
        cases.append(Case(change.weighted, f"{base} -> {arm}: weighted {points(change.weighted.estimate)} pts "
                                           f"(95% CI {change_span(change.weighted)}); unweighted "
                                           f"{points(change.unweighted.estimate)}; largest parts: {drivers}"))
    failed = [x for x in cases if beyond(x.value, -gate.max_drop_points / 100, True, gate.rule)]
    closest = min(cases, key=lambda x: x.value.estimate, default=None)
    return _result(gate, statement, cases, failed, closest, skip_reason="the run declares no comparison")


def judge_slice_floor(gate: SliceFloorGate, figures: RunFigures) -> GateResult:
    floors = ", ".join(f"{s} >= {pct(f, 0)}" for s, f in gate.floors.items())
    statement = f"accuracy per slice: {floors}"
    arms = select_arms(figures, gate.arms)
    cases, failed = [], []
    for arm in arms:
        for slice_, floor in gate.floors.items():
            level = figures.level(arm, slice_)
            if level is None:
                continue
            case = Case(level.interval, f"{slice_} in {arm}: {pct_with_fraction(level.correct, level.n)} "
                                        f"(95% CI {interval_text(level.interval)}) vs floor {pct(floor, 0)}")
            cases.append(case)
            if beyond(level.interval, floor, True, gate.rule):
                failed.append(case)
    closest = min(cases, key=lambda x: x.value.estimate, default=None)
    return _result(gate, statement, cases, failed, closest, skip_reason="no judged arm has rows in these slices")


def judge_confidence_gap(gate: ConfidenceGapGate, figures: RunFigures) -> GateResult:
    statement = (f"the least confident third is at least {gate.min_gap_points:g} points less accurate than "
                 f"the most confident third (selectors that give a confidence)")
    arms = set(select_arms(figures, gate.arms))
    cases = []
    for cal in figures.calibration:
        if cal.arm not in arms or not cal.terciles:
            continue
        low, high = cal.terciles[0], cal.terciles[-1]
        cases.append(Case(cal.gap, f"{cal.arm}: most confident third {pct(high['accuracy'])}, least "
                                   f"{pct(low['accuracy'])}: gap {points(cal.gap.estimate)} pts "
                                   f"(95% CI {change_span(cal.gap)})"))
    failed = [x for x in cases if beyond(x.value, gate.min_gap_points / 100, True, gate.rule)]
    closest = min(cases, key=lambda x: x.value.estimate, default=None)
    return _result(gate, statement, cases, failed, closest,
                   skip_reason="no judged arm's selector gives a confidence")


def judge_failure_rate(gate: FailureRateGate, figures: RunFigures) -> GateResult:
    statement = f"invalid + error + empty rows are at most {pct(gate.max_rate, 1)} of each slice"
    arms = set(select_arms(figures, gate.arms))
    cases = [Case(f.rate, f"{f.slice} in {f.arm}: {pct_with_fraction(f.invalid + f.error + f.empty, f.n)} "
                          f"(invalid {f.invalid}, error {f.error}, empty {f.empty}; 95% CI {interval_text(f.rate)})")
             for f in figures.failures if f.arm in arms]
    failed = [x for x in cases if beyond(x.value, gate.max_rate, False, gate.rule)]
    closest = max(cases, key=lambda x: x.value.estimate, default=None)
    return _result(gate, statement, cases, failed, closest)


JUDGES: dict[str, Callable[..., GateResult]] = {
    "tool_drop": judge_tool_drop,
    "confused_pair_share": judge_confused_pair,
    "weighted_floor": judge_weighted_floor,
    "weighted_drop": judge_weighted_drop,
    "slice_floor": judge_slice_floor,
    "confidence_gap": judge_confidence_gap,
    "failure_rate": judge_failure_rate,
}


def judge(figures: RunFigures, criteria: SelectionCriteria, registration: CriteriaRegistration | None = None,
          criteria_path: str | None = None) -> Verdict:
    """Every gate in file order; FAIL if any fails, NOT JUDGED if any could not be judged, else PASS."""
    gates = [JUDGES[g.kind](g, figures) for g in criteria.gates]
    statuses = {g.status for g in gates}
    status = "FAIL" if "FAIL" in statuses else "NOT JUDGED" if "NOT JUDGED" in statuses else "PASS"
    n_failed = sum(g.status == "FAIL" for g in gates)
    reason = {"FAIL": f"{n_failed} of {len(gates)} gates failed",
              "NOT JUDGED": "a gate lacked what it needs (see below)",
              "PASS": f"all {sum(g.status == 'PASS' for g in gates)} applicable gates passed"}[status]
    return Verdict(run_id=figures.run_id, status=status, reason=reason,
                   criteria_path=criteria_path or (registration.source if registration else None),
                   criteria_hash=registration.sha256 if registration else None,
                   registered_at=registration.registered_at if registration else None,
                   judged_at=datetime.now(timezone.utc), gates=gates)


def not_judged(run_id: str, reason: str, registration: CriteriaRegistration | None = None) -> Verdict:
    return Verdict(run_id=run_id, status="NOT JUDGED", reason=reason,
                   criteria_path=registration.source if registration else None,
                   criteria_hash=registration.sha256 if registration else None,
                   registered_at=registration.registered_at if registration else None,
                   judged_at=datetime.now(timezone.utc))


def no_criteria(run_id: str) -> Verdict:
    return Verdict(run_id=run_id, status="NO CRITERIA",
                   reason="the experiment registers no acceptance criteria: nothing was judged")
