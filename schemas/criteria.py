"""Acceptance criteria (a YAML file versioned with the experiment) and the verdict a run gets against them.

The criteria are written before the run and registered (sha256 + UTC time) before its first model call;
each gate names the figure it reads, the limit, and the decision rule that turns the figure and its 95%
interval into PASS or FAIL, so nobody can move a gate after seeing the numbers. The gate kinds are each
instrument's own (schemas/selection/criteria.py, schemas/surface/criteria.py); the verdict is one record.
"""

from datetime import datetime
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field

Rule = Literal["point", "confident", "demonstrated"]
"""How a gate reads a figure against its limit.

- point: FAIL when the measured figure is beyond the limit (the interval is shown as evidence);
- confident: FAIL only when the whole 95% interval is beyond the limit (harm shown beyond the noise);
- demonstrated: PASS only when the whole 95% interval is within the limit (safety shown; needs data).
"""

ArmSelection = Union[Literal["all", "candidates", "final"], list[str]]
"""Which arms a gate judges: every arm; 'candidates' = every arm compared to a baseline (the changes
under test); 'final' = the last rung; or a list of arm names."""


class GateSpec(BaseModel):
    """What every gate of a criteria file has; each instrument adds its gate kinds."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Short name printed beside PASS / FAIL.")
    why: str = Field(default="", description="Why the team holds this line (printed in the report).")
    rule: Rule = Field(default="point", description="Decision rule: point, confident or demonstrated.")


class CriteriaFile(BaseModel):
    """An acceptance-criteria file as a team writes it, before the run."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Name of the criteria set.")
    description: str = Field(default="", description="What the gates protect.")
    written_by: str | None = Field(default=None, description="Who wrote the gates.")
    written_on: str | None = Field(default=None, description="When they were written (before any run judged).")
    gates: list[GateSpec] = Field(min_length=1, description="The gates; every one must PASS for the run to PASS.")


GateStatus = Literal["PASS", "FAIL", "SKIP", "NOT JUDGED"]
"""PASS / FAIL; SKIP when the gate does not apply to any judged arm by its own definition (e.g. a
confidence gate where no selector gives a confidence); NOT JUDGED when the run lacks what the gate
needs (e.g. production weights)."""

VerdictStatus = Literal["PASS", "FAIL", "NOT JUDGED", "NO CRITERIA"]


class GateResult(BaseModel):
    """One gate's outcome with the evidence that decided it."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    name: str = Field(description="The gate's name.")
    kind: str = Field(description="The gate's kind.")
    status: GateStatus = Field(description="PASS, FAIL, SKIP or NOT JUDGED.")
    statement: str = Field(description="The gate in words, with its limit and rule.")
    evidence: list[str] = Field(default_factory=list, description="Figures that decided it: failing cases, or the closest one.")
    n_checked: int = Field(default=0, description="Cases (tool x comparison, arm, arm x slice, ...) the gate checked.")
    n_failed: int = Field(default=0, description="Cases beyond the limit under the gate's rule.")
    why: str = Field(default="", description="The gate's reason, as written in the criteria file.")
    not_judged: dict[str, str] = Field(
        default_factory=dict, description="Arms the gate could not judge, each with why: its figure is undefined (no "
                                          "run completed, no call executed) or most of its units could not be "
                                          "carried out (provider errors, a dead server). A gate with such an arm and "
                                          "no failure is NOT JUDGED.")


class Verdict(BaseModel):
    """A run's verdict against its registered criteria."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    run_id: str = Field(description="The run judged.")
    status: VerdictStatus = Field(description="PASS, FAIL, NOT JUDGED (criteria changed or unreadable) or NO CRITERIA.")
    reason: str = Field(default="", description="Why the run was not judged, or a one-line summary.")
    criteria_path: str | None = Field(default=None, description="The criteria file as the experiment names it.")
    criteria_hash: str | None = Field(default=None, description="sha256 of the criteria registered before selection.")
    registered_at: datetime | None = Field(default=None, description="When the criteria were registered (UTC).")
    judged_at: datetime | None = Field(default=None, description="When the gates were judged (UTC).")
    gates: list[GateResult] = Field(default_factory=list, description="Every gate's outcome, in file order.")

    @property
    def failed(self) -> list[GateResult]:
        return [g for g in self.gates if g.status == "FAIL"]
