"""A fitted 'none' cut-off (``tooleval fit``): the score below which a router abstains, and the softmax
temperature of its confidence, fitted on one half of a task-set version's labelled requests and confirmed on
the other. For a trained decision model that learned 'none' the score is its best tool's margin over the
learned 'none' (``scale: margin``), for any other router the best tool's own score (``scale: score``). An
experiment uses it with the arm option ``abstain_cutoff: <file>`` (or ``router_options: {abstain_cutoff:
<file>}`` for a routed arm's router)."""

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class HalfAccuracy(BaseModel):
    """Accuracy of the router on one half of the split, with and without the cut-off."""

    model_config = ConfigDict(extra="forbid")

    n_requests: int = Field(description="Requests in the half.")
    n_none: int = Field(description="Of them, requests labelled 'none'.")
    correct_with_cutoff: int = Field(description="Right with the fitted cut-off.")
    correct_never_abstaining: int = Field(description="Right when the router never abstains.")
    correct_default: int = Field(description="Right with the router's default cut-off.")
    abstained: int = Field(description="Requests the router abstains on with the fitted cut-off.")
    ci_low: float = Field(description="95% Wilson interval of the accuracy with the cut-off: low end.")
    ci_high: float = Field(description="95% Wilson interval of the accuracy with the cut-off: high end.")


class TemperatureFit(BaseModel):
    """The softmax temperature fitted beside the cut-off, and the ECE of the confidence in the pick on each
    half, with the router's own temperature (before) and the fitted one (after)."""

    model_config = ConfigDict(extra="forbid")

    before: float = Field(description="The router's own temperature (its `temperature` option, or its default).")
    fitted: bool = Field(description="False when the fit half had too few requests: the temperature is the "
                         "router's own.")
    fit_ece_before: float = Field(description="ECE on the fit half with the router's own temperature.")
    fit_ece_after: float = Field(description="ECE on the fit half with the fitted temperature.")
    confirm_ece_before: float = Field(description="ECE on the confirm half with the router's own temperature.")
    confirm_ece_after: float = Field(description="ECE on the confirm half with the fitted temperature.")
    confirm_ece_if_calibrated: float | None = Field(
        description="The ECE a perfectly calibrated router would stay under on the confirm half (95th percentile "
        "of simulated draws, the report's noise floor); null on an empty half.")


class AbstainCutoff(BaseModel):
    """A fitted cut-off file: what router it belongs to, where it was fitted, and how it did on both halves."""

    model_config = ConfigDict(extra="forbid")

    selector: str = Field(description="Router kind: lexical, embedding or trained.")
    model: str = Field(description="The router's model id.")
    router_options: dict[str, Any] = Field(description="The router's answer-changing options, cut-off options left out.")
    threshold: float | None = Field(
        description="The cut-off, on the scale `scale` names: below it the router picks 'none'; null = never abstain "
        "(the fit half was best served by never abstaining).")
    scale: Literal["score", "margin"] = Field(
        default="score",
        description="What the cut-off is compared with: `score`, the best tool's score (the run option "
        "`abstain_threshold`); `margin`, a trained model's best tool utility minus its learned 'none' utility "
        "(`abstain_margin`: 0 is the model as trained). Files written before this field are `score`.")
    temperature: float | None = Field(
        default=None,
        description="The fitted softmax temperature, on the router's own `temperature` scale: the run sets the "
        "router's `temperature` option to it (replacing one written in the options). Null in files written before "
        "the field: the router keeps its own.")
    temperature_fit: TemperatureFit | None = Field(
        default=None, description="How the temperature was fitted and what it did to the ECE on each half.")
    taskset: str = Field(description="Task-set folder the cut-off was fitted on.")
    version: str = Field(description="Task-set version.")
    taskset_hash: str = Field(description="Content hash of that version.")
    split_salt: str = Field(description="Salt of the hash split: sha256(salt + request id), even first byte = fit half.")
    fit: HalfAccuracy = Field(description="The half the cut-off was chosen on.")
    confirm: HalfAccuracy = Field(description="The other half, where it is confirmed.")
    fitted_at: datetime = Field(description="When it was fitted (UTC).")


FITTED_ON = re.compile(r"fitted on (?P<taskset>\S+) (?P<version>\S+), hash (?P<hash>[0-9a-f]{12})")
"""How an arm's abstain rule names the task-set version its cut-off file was fitted on (``fitted_on``)."""


def fitted_on(cutoff: AbstainCutoff) -> str:
    """'fitted on <taskset> <version>, hash <first 12 hex of its content hash>', for the arm's abstain rule."""
    return f"fitted on {cutoff.taskset} {cutoff.version}, hash {cutoff.taskset_hash[:12]}"
