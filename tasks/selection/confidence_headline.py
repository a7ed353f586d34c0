"""The report's first screen on each arm's confidence: its ECE beside the ECE a perfectly calibrated router
would stay under with the same confidences on as many requests (the 95th percentile of simulated draws,
``tasks/stats/calibration.py: ece_if_calibrated``), whether the gap is more than that noise, and for an offline
router what fits its temperature on this set; and an arm whose cut-off and temperature were fitted on another
task-set version says so. The calibration table later in the report has the rest."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:  # reading a kept report imports no figures library
    from tasks.selection.figures import Calibration

OFFLINE_ROUTERS = ("lexical", "embedding", "trained")
"""Selectors whose temperature ``tooleval fit`` fits (the same kinds as tasks/selectors/routers/router_setup.py's
OFFLINE_ROUTER_KINDS, named here so the report reads no selector code)."""


def fitted_elsewhere(arms: Sequence[dict[str, Any]], label: Callable[[str], str]) -> list[str]:
    """A line per arm whose cut-off file (and so its temperature) was fitted on another task-set version than
    the one it runs on (its abstain rule names the version it was fitted on: schemas/cutoff.py)."""
    from schemas.cutoff import FITTED_ON

    lines = []
    for arm in arms:
        found = FITTED_ON.search(arm.get("abstain_rule") or "")
        if found and not str(arm.get("taskset_hash") or "").startswith(found["hash"]):
            lines.append(f"{label(arm['arm'])}: its cut-off and temperature were fitted on {found['taskset']} "
                         f"{found['version']}, not on this version: its confidence is not confirmed here")
    return lines


def confidence_headline(calibration: Sequence[Calibration], arms: Sequence[dict[str, Any]],
                        label: Callable[[str], str]) -> list[str]:
    """An arm fitted on another version, then one line for the arms with confidences and one per arm;
    nothing when no arm gives one and none was fitted elsewhere."""
    measured = [c for c in calibration if c.ece_if_calibrated is not None]
    if not measured:
        return fitted_elsewhere(arms, label)
    selector = {a["arm"]: a.get("selector") for a in arms}
    lines = [*fitted_elsewhere(arms, label), "Confidence: each arm's ECE, beside the ECE a perfectly calibrated router stays under at this "
             "number of requests (simulated: 95th percentile of its draws):"]
    for cal in measured:
        floor = cal.ece_if_calibrated.high
        if cal.ece <= floor:
            reading = "within its noise"
        else:
            reading = "miscalibrated here" + ("; `tooleval fit` fits its temperature on this set"
                                              if selector.get(cal.arm) in OFFLINE_ROUTERS else "")
        lines.append(f"  {label(cal.arm)}: ECE {cal.ece:.3f} (calibrated < {floor:.3f}): {reading}")
    return lines
