"""Task experiment files: arms (surface x prompt x pinned model x agent x task-set version) run over every
task of a frozen task set under several seeds. The one-change rule holds as for selection experiments;
docs/surface/experiments.md shows a file."""

from typing import Literal

from pydantic import Field

from schemas.experiment import ArmSpec, Comparison, ExperimentFile

AgentKind = Literal["baseline", "openai", "anthropic"]
"""baseline: the offline agent (a router and schema-guided argument filling; it does not read prompts);
openai / anthropic: hosted models through their official SDKs (any OpenAI-compatible server via base_url)."""

SurfaceRespect = Literal["surface", "prompt", "model", "agent", "version"]
SURFACE_RESPECTS: tuple[SurfaceRespect, ...] = ("surface", "prompt", "model", "agent", "version")


class SurfaceArmSpec(ArmSpec):
    """One arm: one complete configuration of the agent and its tool surface (``model`` defaults to the
    baseline agent's own id for the baseline)."""

    surface: str | None = Field(default=None, description="Surface name: surfaces/<name>.yaml in the task set.")
    agent: AgentKind | None = Field(default=None, description="baseline, openai or anthropic.")


class SurfaceComparison(Comparison):
    declare: list[SurfaceRespect] = Field(default_factory=list, description="Respects knowingly changed together.")


class SurfaceExperimentFile(ExperimentFile):
    """A task experiment file (YAML)."""

    batch_size: int = Field(default=25, ge=1, description=(
        "Tasks per unit of work; more when an arm x seed would need over 16 units (then 16)."))
    defaults: SurfaceArmSpec | None = Field(default=None, description="Values every arm takes unless it sets its own.")
    arms: list[SurfaceArmSpec] = Field(min_length=1, description="The arms, in order (A, B, C, D, ...).")
    comparisons: Literal["ladder"] | list[SurfaceComparison] = Field(
        default="ladder", description="'ladder' compares each arm with the one before; or explicit pairs.")
