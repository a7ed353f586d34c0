"""Judge a run's figures against its registered acceptance criteria: PASS / FAIL per gate with the evidence
that decided it, and the run's verdict.

The gate kinds, and the figures they read, are each instrument's own (``Instrument.judges``); here is what
every gate shares: how a figure and its 95% interval are read against a limit under the gate's
pre-registered rule (schemas/criteria.py: point, confident, demonstrated), which arms a gate judges, how
its result is written, and what makes the verdict. The verdict is FAIL when any gate fails; NOT JUDGED when
a gate lacks what it needs, when a gate could not judge an arm it applies to (its figure is undefined, or most
of the arm's units could not be carried out: ``arms_not_carried_out``), or when no gate applied to the run at
all (every one skipped: a run that no gate could judge does not pass); else PASS. Every verdict names the arms
not judged and, per arm, the units that could not be carried out.

Tolerance: a figure and its limit are compared as the report prints them, to 0.1 point
(``format.as_printed``): a drop of -0.10000000000000003 prints as -10.0 and is judged as exactly -10.0,
i.e. not "more than 10 points". Floating-point error never decides a gate.
"""

from __future__ import annotations

from datetime import datetime, timezone
from functools import partial
from typing import Any, Callable, Mapping, Sequence

from schemas.criteria import ArmSelection, CriteriaFile, GateResult, GateSpec, Verdict
from tasks.experiment.criteria import CriteriaRegistration
from tasks.report.format import PRINTED_DIGITS, as_printed
from tasks.stats.estimate import Interval

EVIDENCE_LINES = 6
"""Failing cases listed per gate before '... and N more'."""

RULE_WORDS = {
    "point": "judged on the measured value",
    "confident": "fails only when the whole 95% interval is beyond the limit",
    "demonstrated": "passes only when the whole 95% interval is within the limit",
}
TOLERANCE_WORDS = f"compared as printed, to {10 ** -PRINTED_DIGITS:g} point"

NOT_CARRIED_OUT_LIMIT = 0.5
"""An arm more than this share of whose units (rows, task runs) could not be carried out (a provider error after
its retries, a dead or crashed server, the run's budget) cannot be judged: what it measured is the outage, and
two such arms compared are not a measured 0.0 change."""


def arms_not_carried_out(counts: Mapping[str, tuple[int, int]], items: str) -> dict[str, str]:
    """Of ``counts`` (arm -> (units not carried out, units)), the arms most of whose units could not be carried
    out, each with the words that say so ('23 of 24 task runs could not be carried out')."""
    return {arm: f"{failed:,} of {total:,} {items} could not be carried out"
            for arm, (failed, total) in counts.items() if total and failed > NOT_CARRIED_OUT_LIMIT * total}


def not_carried_out_words(counts: Mapping[str, tuple[int, int]], items: str) -> str:
    """'task runs that could not be carried out: C 23 of 24, A 1 of 24' (the arms with any), or ''."""
    arms = [f"{arm} {failed:,} of {total:,}" for arm, (failed, total) in counts.items() if failed]
    return f"{items} that could not be carried out: {', '.join(arms)}" if arms else ""


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


def select_arms(selection: ArmSelection, order: Sequence[str], compared: set[str]) -> list[str]:
    """The arms a gate judges, in the run's order: a list of names; 'all'; 'final' (the last); 'candidates'
    (every arm compared to a baseline, or every arm when the run declares no comparison)."""
    if isinstance(selection, list):
        return [a for a in order if a in selection]
    if selection == "all":
        return list(order)
    if selection == "final":
        return list(order[-1:])
    return [a for a in order if a in compared] or list(order)


def gate_result(gate: GateSpec, statement: str, checked: int, failed: Sequence[str], passing: Sequence[str] = (),
                *, skip_reason: str = "", unjudged_reason: str = "", unjudged: Mapping[str, str] | None = None
                ) -> GateResult:
    """A gate's result: NOT JUDGED (``unjudged_reason``: the run lacks what it needs; or ``unjudged``, arm ->
    why, arms it applies to that it could not judge, and no failure), SKIP (nothing it applies to was checked),
    FAIL (the failing cases, the first few, then the arms not judged) or PASS (``passing``: what shows it)."""
    result = partial(GateResult, name=gate.name, kind=gate.kind, statement=statement, why=" ".join(gate.why.split()))
    if unjudged_reason:
        return result(status="NOT JUDGED", evidence=[unjudged_reason])
    arms = dict(unjudged or {})
    unjudged_lines = [f"NOT JUDGED {arm}: {reason}" for arm, reason in arms.items()]
    if failed:
        evidence = list(failed[:EVIDENCE_LINES]) + ([f"... and {len(failed) - EVIDENCE_LINES} more"]
                                                     if len(failed) > EVIDENCE_LINES else [])
        return result(status="FAIL", evidence=evidence + unjudged_lines, n_checked=checked, n_failed=len(failed),
                      not_judged=arms)
    if arms:
        return result(status="NOT JUDGED", evidence=unjudged_lines + list(passing), n_checked=checked,
                      not_judged=arms)
    if not checked:
        return result(status="SKIP", evidence=[skip_reason or "nothing to check"])
    return result(status="PASS", evidence=list(passing), n_checked=checked)


def judge(figures: Any, criteria: CriteriaFile, judges: Mapping[str, Callable[..., GateResult]],
          registration: CriteriaRegistration | None = None, criteria_path: str | None = None,
          not_carried_out: Mapping[str, tuple[int, int]] | None = None, items: str = "units") -> Verdict:
    """Every gate in file order; FAIL if any fails, NOT JUDGED if any could not be judged (or could not judge an
    arm) or none applied, else PASS. The reason names the arms some gate could not judge and, from
    ``not_carried_out`` (arm -> (``items`` not carried out, ``items``)), each arm's units that could not be
    carried out."""
    gates = [judges[g.kind](g, figures) for g in criteria.gates]
    statuses = {g.status for g in gates}
    status = "FAIL" if "FAIL" in statuses else "NOT JUDGED" if "NOT JUDGED" in statuses else "PASS"
    n_failed = sum(g.status == "FAIL" for g in gates)
    unjudged = {arm: None for g in gates for arm in g.not_judged}
    by_arms = [g for g in gates if g.not_judged]
    arms_words = (f"{len(by_arms)} of {len(gates)} gates could not judge {', '.join(unjudged)} (see below)"
                  if unjudged else "")
    lacking = any(g.status == "NOT JUDGED" and not g.not_judged for g in gates)
    reason = {"FAIL": f"{n_failed} of {len(gates)} gates failed" + (f"; {arms_words}" if arms_words else ""),
              "NOT JUDGED": "; ".join([*(["a gate lacked what it needs (see below)"] if lacking else []),
                                       *([arms_words] if arms_words else [])]),
              "PASS": f"all {sum(g.status == 'PASS' for g in gates)} applicable gates passed"}[status]
    if status == "PASS" and "PASS" not in statuses:
        status, reason = "NOT JUDGED", (f"none of the {len(gates)} gates applied to this run (every one skipped): a "
                                        "run that no gate could judge does not pass")
    counted = not_carried_out_words(not_carried_out or {}, items)
    reason += f"; {counted}" if counted else ""
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
