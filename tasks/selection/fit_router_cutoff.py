"""``tooleval fit``: fit the 'none' cut-off and the softmax temperature of an arm's offline router (the arm's
own lexical / embedding / trained selector, or the router of a routed hosted arm) on a hash split of the arm's
task-set version, confirm both on the other half, and write them where the experiment can use them
(``abstain_cutoff: <file>``).

The temperature is fitted after the cut-off, on the same half, from the router's probabilities with the fitted
cut-off: the one that minimises the log loss of the confidence in the pick (``tasks/stats/calibration.py:
fit_temperature``; it never changes a pick). The file holds it on the router's own ``temperature`` scale, and the
fit prints the ECE with the router's own temperature and with the fitted one on both halves. On a version where
no request expects 'none' there is no cut-off to fit: the file says never abstain (as a run without one does)
and holds the fitted temperature.

Reads files only: no Prefect, no warehouse. The router runs with abstaining turned off; each request's best
offered tool and its score decide every cut-off at once (``tasks/stats/abstain_cutoff.py``).

The score: for a trained decision model that learned 'none', its best tool's margin over that learned 'none'
(``scale: margin``, the run option ``abstain_margin``): the fit moves the learned 'none' up or down and keeps
what it learned (a margin of 0 is the model as trained, one of the candidates). A constant in its place (the
scale of every other router) would discard the 'none' features.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from schemas.catalogue import NONE_LABEL
from schemas.cutoff import AbstainCutoff, HalfAccuracy, TemperatureFit
from tasks.experiment.resolve_experiment import resolve_experiment
from tasks.files.atomic_write import write_atomic
from tasks.files.input_errors import InputError
from tasks.selection.arms import SelectionArm
from tasks.selectors.decision_models.labelled_inputs import labelled_inputs
from tasks.selectors.offline import offline_selector
from tasks.selectors.routers.router_setup import (
    CUTOFF_OPTIONS,
    DEFAULT_MODELS,
    NEVER,
    OFFLINE_ROUTER_KINDS,
    router_identity_options,
    router_setup,
)
from tasks.selectors.decision_models.trained import TrainedSelector
from tasks.stats.abstain_cutoff import CONFIRM, FIT, ScoredRequest, correct_at, fit_threshold, split_half
from tasks.stats.wilson import wilson_interval
from tasks.taskset.load_taskset import load_version

DEFAULT_SALT = "tooleval-cutoff-v1"
MIN_TEMPERATURE_REQUESTS = 30
"""Fewer scored requests in the fit half and the router keeps its own temperature: a handful of requests
would push the fitted one to the end of the range (every confidence near 0 or 1)."""


@dataclass(frozen=True)
class FittedCutoff:
    cutoff: AbstainCutoff
    path: Path
    arm: str
    relative: str
    """The file's path relative to the experiment file, as ``abstain_cutoff`` names it."""

    def lines(self) -> list[str]:
        c = self.cutoff
        shown = "never abstain" if c.threshold is None else f"{c.threshold:.4g}"
        scale = ["  a margin: 'none' when the best tool beats the learned 'none' by less than that"] \
            if c.scale == "margin" and c.threshold is not None else []

        def pct(k: int, n: int) -> str:
            return f"{100 * k / n:.1f}%" if n else "-"

        def half(name: str, h: HalfAccuracy) -> str:
            ci = f"({100 * h.ci_low:.1f}-{100 * h.ci_high:.1f})"
            return (f"  {name:<8}{h.n_requests:>9}{h.n_none:>6}  {pct(h.correct_with_cutoff, h.n_requests):>6} {ci:<13}"
                    f"{pct(h.correct_never_abstaining, h.n_requests):>7}{pct(h.correct_default, h.n_requests):>8}"
                    f"{h.abstained:>7}")
        return [
            f"fitted the 'none' cut-off and the temperature of arm {self.arm} on {c.taskset} {c.version}",
            f"  router: {c.selector} {c.model}",
            f"  cut-off: {shown}  (split: sha256(salt:id), salt {c.split_salt!r})",
            *(["  no request expects 'none': the router never abstains on this version"]
              if c.fit.n_none + c.confirm.n_none == 0 else []),
            *scale,
            "  half     requests  none  with cut-off (95% CI) never default abstain",
            half(FIT, c.fit),
            half(CONFIRM, c.confirm),
            *self.temperature_lines(),
            f"wrote {self.path}",
            f"use it: options: {{abstain_cutoff: {self.relative}}}",
            "  (in router_options for a routed arm's router)",
        ]

    def temperature_lines(self) -> list[str]:
        c, t = self.cutoff, self.cutoff.temperature_fit
        if t is None or c.temperature is None:
            return []
        floor = "" if t.confirm_ece_if_calibrated is None else \
            f" (noise floor < {t.confirm_ece_if_calibrated:.3f}, simulated)"
        how = "(fit half: log loss of the confidence)" if t.fitted else \
            f"(kept: under {MIN_TEMPERATURE_REQUESTS} requests in the fit half)"
        return [f"  temperature: {t.before:.4g} -> {c.temperature:.4g}  {how}",
                f"  ECE on the fit half:     {t.fit_ece_before:.3f} -> {t.fit_ece_after:.3f}",
                f"  ECE on the confirm half: {t.confirm_ece_before:.3f} -> {t.confirm_ece_after:.3f}{floor}"]


def _temperature_fit(router: Any, inputs: list[Any], labels: list[str], halves: list[str]
                     ) -> tuple[float, TemperatureFit]:
    """The fitted temperature on the router's own scale, and the ECE before and after on both halves, from
    the router's selections with the fitted cut-off (a refused request is left out)."""
    from tasks.stats.calibration import (ece_if_calibrated, expected_calibration_error, fit_temperature,
                                         tempered_probabilities)

    rows: dict[str, tuple[list[list[float]], list[bool], list[str]]] = {FIT: ([], [], []), CONFIRM: ([], [], [])}
    for item, label, half, selection in zip(inputs, labels, halves, router.select(inputs)):
        if selection.chosen is None or not selection.probabilities:
            continue
        probabilities, right, ids = rows[half]
        probabilities.append(list(selection.probabilities.values()))
        right.append(selection.chosen == label)
        ids.append(item.request_id)
    fitted = len(rows[FIT][0]) >= MIN_TEMPERATURE_REQUESTS
    factor = fit_temperature(*rows[FIT][:2]) if fitted else 1.0

    def ece(half: str, temperature: float) -> float:
        probabilities, right, _ = rows[half]
        if not probabilities:
            return float("nan")
        return expected_calibration_error(tempered_probabilities(probabilities, temperature).max(axis=1), right)

    confirm_p, confirm_right, confirm_ids = rows[CONFIRM]
    floor = ece_if_calibrated(tempered_probabilities(confirm_p, factor).max(axis=1), confirm_right, confirm_ids) \
        if confirm_p else None
    before = float(getattr(router, "temperature", 1.0))
    return before * factor, TemperatureFit(
        before=before, fitted=fitted, fit_ece_before=ece(FIT, 1.0), fit_ece_after=ece(FIT, factor),
        confirm_ece_before=ece(CONFIRM, 1.0), confirm_ece_after=ece(CONFIRM, factor),
        confirm_ece_if_calibrated=None if floor is None else floor.high)


def _router_of(arm: SelectionArm, file: str) -> tuple[str, str, dict[str, Any]]:
    """(kind, model id, options as written) of the arm's offline router."""
    if arm.selector in OFFLINE_ROUTER_KINDS:
        return arm.selector, arm.model_id, dict(arm.options)
    router = arm.options.get("router")
    if router in OFFLINE_ROUTER_KINDS:
        model = arm.options.get("router_model") or DEFAULT_MODELS.get(router, "")
        return router, model, dict(arm.options.get("router_options") or {})
    raise InputError.one(file, f"arm {arm.name}", "fit-router", "the arm has no offline router (lexical, embedding "
                         "or trained, as its selector or as router of a routed arm): nothing to fit")


def _half(scored: list[ScoredRequest], default_right: int, threshold: float) -> HalfAccuracy:
    right, abstained = correct_at(scored, threshold)
    never, _ = correct_at(scored, float("-inf"))
    interval = wilson_interval(right, len(scored))
    return HalfAccuracy(n_requests=len(scored), n_none=sum(r.label_is_none for r in scored), correct_with_cutoff=right,
                        correct_never_abstaining=never, correct_default=default_right, abstained=abstained,
                        ci_low=interval.low, ci_high=interval.high)


def fit_router_cutoff(experiment_path: Path, arm_name: str, out: Path | None = None,
                      salt: str = DEFAULT_SALT) -> FittedCutoff:
    """Fit, confirm and write the cut-off of ``arm_name``'s offline router; InputError for bad input."""
    experiment_path = Path(experiment_path)
    experiment = resolve_experiment(experiment_path, only_arm=arm_name)  # the other arms are the run's to check
    file = str(experiment_path)
    if not experiment.arms:
        raise InputError.one(file, f"arm {arm_name}", "fit-arm",
                             f"no such arm; arms: {', '.join(arm.name for arm in experiment.spec.arms)}")
    arm = experiment.arms[0]
    kind, model, written = _router_of(arm, file)
    version = load_version(experiment.taskset_dir, arm.version)
    table = version.table
    expected = table.get_column("expected").to_list()
    has_none = NONE_LABEL in expected  # without, no cut-off to fit: never abstaining is right, as runs do
    base = {k: v for k, v in written.items() if k not in CUTOFF_OPTIONS}
    never = router_setup(kind, model, {**base, "abstain_threshold": NEVER}, has_none_labels=True,
                         base_dir=experiment_path.parent).options
    default = router_setup(kind, model, base, has_none_labels=has_none, base_dir=experiment_path.parent).options
    router = offline_selector(kind, model, never)
    default_router = offline_selector(kind, model, default)
    trained = getattr(default_router, "inner", default_router)  # a trained model with a temperature is wrapped
    margin = isinstance(trained, TrainedSelector) and trained.model.full_model.none is not None

    catalogue = arm.catalogue.tools if arm.catalogue is not None else ()
    inputs, labels = labelled_inputs(table, catalogue, arm.prompt_text,
                                     arm.catalogue.offered_as if arm.catalogue is not None else None)
    scores = trained.none_margins(inputs) if margin else router.scores(inputs)
    defaults = default_router.select(inputs)

    halves: dict[str, tuple[list[ScoredRequest], int]] = {FIT: ([], 0), CONFIRM: ([], 0)}
    for item, label, row, chosen in zip(inputs, labels, scores, defaults):
        if row is None or len(row) == 0:
            scored = ScoredRequest(float("-inf"), False, label == NONE_LABEL)
        else:
            best = int(row.argmax())
            scored = ScoredRequest(float(row[best]), item.tools[best].name == label, label == NONE_LABEL)
        members, right = halves[split_half(item.request_id, salt)]
        members.append(scored)
        halves[split_half(item.request_id, salt)] = (members, right + (chosen.chosen == label))
    threshold = fit_threshold(halves[FIT][0]) if has_none else float("-inf")
    fitted = None if threshold == float("-inf") else threshold
    cut = {"abstain_threshold": NEVER} if fitted is None else \
        {"abstain_margin" if margin else "abstain_threshold": fitted}
    fitted_router = offline_selector(kind, model, {**{k: v for k, v in never.items() if k not in CUTOFF_OPTIONS},
                                                   **cut})
    temperature, temperature_fit = _temperature_fit(fitted_router, inputs, labels,
                                                    [split_half(item.request_id, salt) for item in inputs])
    cutoff = AbstainCutoff(
        selector=kind, model=model, router_options=router_identity_options(never), threshold=fitted,
        scale="margin" if margin else "score", temperature=temperature, temperature_fit=temperature_fit,
        taskset=experiment.taskset_dir.name, version=arm.version,
        taskset_hash=version.manifest.content_hash, split_salt=salt,
        fit=_half(halves[FIT][0], halves[FIT][1], threshold),
        confirm=_half(halves[CONFIRM][0], halves[CONFIRM][1], threshold),
        fitted_at=datetime.now(timezone.utc),
    )
    path = Path(out) if out is not None else experiment_path.parent / "cutoffs" / f"{arm_name}-{arm.version}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(cutoff.model_dump(mode="json"), indent=2) + "\n").encode())
    return FittedCutoff(cutoff, path, arm_name, os.path.relpath(path.resolve(), experiment_path.parent.resolve()))
