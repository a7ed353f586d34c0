"""Acceptance criteria of a task experiment, written before the run and registered (sha256 + UTC time) before
its first call (schemas/criteria.py: the file, the rules, the verdict and gate results). Besides success, the
gates cover the counters a redesign may make worse only knowingly."""

from typing import Annotated, Literal, Union

from pydantic import Field, model_validator

from schemas.criteria import ArmSelection, CriteriaFile, GateSpec


class SuccessFloorGate(GateSpec):
    """Task success of each named slice is at least its floor (slices judged apart)."""

    kind: Literal["success_floor"] = Field(description="Gate kind.")
    floors: dict[str, float] = Field(min_length=1, description="Slice -> floor (0..1).")
    arms: ArmSelection = Field(default="candidates", description="Arms judged.")


class SuccessDropGate(GateSpec):
    """In every declared comparison, no slice's task success drops more than ``max_drop_points``
    (paired on the same tasks)."""

    kind: Literal["success_drop"] = Field(description="Gate kind.")
    max_drop_points: float = Field(gt=0, le=100, description="Largest allowed drop, in points.")


class IrreversibleGate(GateSpec):
    """Irreversible actions per 100 runs stay under a cap, and/or rise by no more than a margin against the
    baseline of each declared comparison. The denominator is *completed* runs (successes) by default: a
    surface that completes more tasks reaches more actions, and per attempted run that reads as recklessness.
    ``actions: unwanted`` counts only the actions the task did not ask for (tasks/surface/wanted_actions.py):
    the ones a human has to read, whatever the success rate did."""

    kind: Literal["irreversible_actions"] = Field(description="Gate kind.")
    denominator: Literal["completed", "attempted"] = Field(default="completed", description="Runs counted below.")
    actions: Literal["all", "unwanted"] = Field(default="all", description=(
        "Which actions are counted: every irreversible action (the default), or only those the task did not ask "
        "for (per 100 attempted runs is their natural denominator)."))
    max_per_100: float | None = Field(default=None, ge=0, description="Cap per 100 runs.")
    max_increase_per_100: float | None = Field(default=None, ge=0, description="Largest rise against the baseline.")
    arms: ArmSelection = Field(default="candidates", description="Arms judged against max_per_100.")

    @model_validator(mode="after")
    def _a_limit(self) -> "IrreversibleGate":
        if self.max_per_100 is None and self.max_increase_per_100 is None:
            raise ValueError("give max_per_100 and/or max_increase_per_100")
        return self


class UpstreamReadsGate(GateSpec):
    """Upstream reads (pages or records the backend fetched) per run or per executed call stay under a cap, and/or
    grow by no more than a factor against the baseline of each declared comparison."""

    kind: Literal["upstream_reads"] = Field(description="Gate kind.")
    per: Literal["run", "call"] = Field(description=(
        "Reads per run, or per executed call (`call`: calls rejected as invalid never reach a backend and are "
        "not in the denominator)."))
    reads: Literal["all", "unwanted"] = Field(default="all", description=(
        "Which reads are counted: every one (the default), or only those of calls the task did not ask for."))
    max: float | None = Field(default=None, ge=0, description="Cap.")
    max_ratio: float | None = Field(default=None, gt=0, description="Largest allowed arm / baseline ratio.")
    arms: ArmSelection = Field(default="candidates", description="Arms judged against max.")

    @model_validator(mode="after")
    def _a_limit(self) -> "UpstreamReadsGate":
        if self.max is None and self.max_ratio is None:
            raise ValueError("give max and/or max_ratio")
        return self


class HandoffGate(GateSpec):
    """Runs handed to a human (a ticket opened, an escalation) are at most ``max_rate`` of attempted runs."""

    kind: Literal["handoff_rate"] = Field(description="Gate kind.")
    max_rate: float = Field(ge=0, le=1, description="Largest share of runs that end on a human's desk.")
    arms: ArmSelection = Field(default="candidates", description="Arms judged.")


class ToolInvalidRateGate(GateSpec):
    """No tool with at least ``min_calls`` calls a seed has more than ``max_rate`` of them invalid: judged per
    tool, never on the aggregate (which weights tools by how often they are called). Calls are counted over
    one pass of the task set (the tool's calls / the arm's seeds): a seed replaying the same tasks is not new
    evidence, so a one-seed and a three-seed run of the same behaviour are judged alike."""

    kind: Literal["tool_invalid_rate"] = Field(description="Gate kind.")
    max_rate: float = Field(ge=0, le=1, description="Largest invalid share of one tool's calls.")
    min_calls: int = Field(default=20, ge=1, description="Tools with fewer calls a seed (calls / seeds) are not "
                                                         "judged.")
    arms: ArmSelection = Field(default="candidates", description="Arms judged.")


TaskGate = Annotated[
    Union[SuccessFloorGate, SuccessDropGate, IrreversibleGate, UpstreamReadsGate, HandoffGate, ToolInvalidRateGate],
    Field(discriminator="kind"),
]


class SurfaceCriteria(CriteriaFile):
    """A task experiment's acceptance-criteria file."""

    gates: list[TaskGate] = Field(min_length=1, description="Every one must PASS for the run to PASS.")
