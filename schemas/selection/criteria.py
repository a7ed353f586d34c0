"""Acceptance criteria of a selection experiment: the gate kinds over per-tool, per-pair, weighted, slice,
calibration, failure and argument figures (schemas/criteria.py: the file, the rules and the verdict)."""

from typing import Annotated, Literal, Union

from pydantic import Field

from schemas.criteria import ArmSelection, CriteriaFile, GateSpec


class ToolDropGate(GateSpec):
    """No tool with at least ``min_volume_share`` of production traffic drops more than
    ``max_drop_points`` in any declared comparison (paired on requests labelled with the tool in both arms)."""

    kind: Literal["tool_drop"] = Field(description="Gate kind.")
    min_volume_share: float = Field(ge=0, le=1, description="Tools with at least this share of traffic (0.03 = 3%).")
    max_drop_points: float = Field(gt=0, le=100, description="Largest allowed drop, in percentage points.")
    slices: list[str] | None = Field(default=None, description="Slices judged (default: every slice).")


class ConfusedPairGate(GateSpec):
    """No single confused pair (expected -> chosen) carries more than ``max_share`` of an arm's failures."""

    kind: Literal["confused_pair_share"] = Field(description="Gate kind.")
    max_share: float = Field(gt=0, le=1, description="Largest share of an arm's failures one pair may carry.")
    arms: ArmSelection = Field(default="candidates", description="Arms judged.")


class WeightedFloorGate(GateSpec):
    """Volume-weighted accuracy is at least ``min_accuracy``."""

    kind: Literal["weighted_floor"] = Field(description="Gate kind.")
    min_accuracy: float = Field(ge=0, le=1, description="Floor for traffic-weighted accuracy (0.8 = 80%).")
    arms: ArmSelection = Field(default="candidates", description="Arms judged.")


class WeightedDropGate(GateSpec):
    """Volume-weighted accuracy drops no more than ``max_drop_points`` in any declared comparison."""

    kind: Literal["weighted_drop"] = Field(description="Gate kind.")
    max_drop_points: float = Field(gt=0, le=100, description="Largest allowed weighted drop, in points.")


class SliceFloorGate(GateSpec):
    """Accuracy of each named slice is at least its floor (slices are judged apart, never averaged)."""

    kind: Literal["slice_floor"] = Field(description="Gate kind.")
    floors: dict[str, float] = Field(min_length=1, description="Slice name -> floor (0..1).")
    arms: ArmSelection = Field(default="candidates", description="Arms judged.")


class ConfidenceGapGate(GateSpec):
    """For a selector that gives a confidence: the least confident third is at least ``min_gap_points``
    below the most confident third (otherwise its confidence cannot route anything). Arms without a
    confidence are not applicable."""

    kind: Literal["confidence_gap"] = Field(description="Gate kind.")
    min_gap_points: float = Field(ge=0, le=100, description="Smallest allowed gap, in percentage points.")
    arms: ArmSelection = Field(default="candidates", description="Arms judged.")


class FailureRateGate(GateSpec):
    """Invalid, error and empty rows together are at most ``max_rate`` of each slice's rows."""

    kind: Literal["failure_rate"] = Field(description="Gate kind.")
    max_rate: float = Field(ge=0, le=1, description="Largest allowed share of invalid + error + empty rows.")
    arms: ArmSelection = Field(default="all", description="Arms judged.")


class ArgumentDropGate(GateSpec):
    """No tool's argument accuracy drops more than ``max_drop_points`` in any declared comparison, paired on the
    requests labelled with the tool in both arms whose arguments were scored in both (argument accuracy counts
    only calls of the right tool on requests with expected arguments). A tool whose arguments were scored in
    one arm only is NOT JUDGED, and so is a run in which no row's arguments were scored."""

    kind: Literal["argument_drop"] = Field(description="Gate kind.")
    max_drop_points: float = Field(gt=0, le=100, description="Largest allowed drop, in percentage points.")
    min_volume_share: float | None = Field(
        default=None, ge=0, le=1, description="Only tools with at least this share of traffic (needs the run's "
        "production weights); default: every tool with scored arguments.")
    slices: list[str] | None = Field(default=None, description="Slices judged (default: every slice).")


class HallucinatedParameterGate(GateSpec):
    """No parameter a tool's schema does not have is sent in more than ``max_share`` of the tool's scored calls
    (per arm x slice x tool; a tool with none is judged at 0 with its interval). An arm judged in which no row's
    arguments were scored is NOT JUDGED."""

    kind: Literal["hallucinated_parameter_share"] = Field(description="Gate kind.")
    max_share: float = Field(ge=0, le=1, description="Largest share of a tool's scored calls one hallucinated "
                             "parameter may appear in (0.05 = 5%).")
    arms: ArmSelection = Field(default="candidates", description="Arms judged.")
    slices: list[str] | None = Field(default=None, description="Slices judged (default: every slice).")


Gate = Annotated[
    Union[ToolDropGate, ConfusedPairGate, WeightedFloorGate, WeightedDropGate, SliceFloorGate,
          ConfidenceGapGate, FailureRateGate, ArgumentDropGate, HallucinatedParameterGate],
    Field(discriminator="kind"),
]



class SelectionCriteria(CriteriaFile):
    """A selection experiment's acceptance-criteria file, as a team writes it before the run."""

    gates: list[Gate] = Field(min_length=1, description="The gates; every one must PASS for the run to PASS.")
