"""Task experiment files: arms (surface x prompt x pinned model x agent x task-set version) run over every
task of a frozen task set under several seeds. The one-change rule holds as for selection experiments.

    name: support-surface-four-arms
    taskset: ..
    version: t1
    seeds: [1, 2, 3]
    criteria: criteria.yaml
    defaults: {agent: baseline, model: baseline-lexical-1}
    arms:
      - {name: A-baseline, surface: legacy, prompt: default}
      - {name: B-prompt, surface: legacy, prompt: chaining}
      - {name: C-surface, surface: redesigned, prompt: default}
      - {name: D-both, surface: redesigned, prompt: chaining}
    comparisons:
      - {from: A-baseline, to: B-prompt}
      - {from: A-baseline, to: C-surface}
      - {from: A-baseline, to: D-both, declare: [prompt]}
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.experiment import Declarations, RunBudget, TracingSpec

AgentKind = Literal["baseline", "openai", "anthropic"]
"""baseline: the offline agent (a router and schema-guided argument filling; it does not read prompts);
openai / anthropic: hosted models through their official SDKs (any OpenAI-compatible server via base_url)."""

TaskRespect = Literal["surface", "prompt", "model", "agent", "version"]
TASK_RESPECTS: tuple[TaskRespect, ...] = ("surface", "prompt", "model", "agent", "version")


class TaskArmSpec(BaseModel):
    """One arm: one complete configuration of the agent and its tool surface."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Arm name, unique in the experiment.")
    surface: str | None = Field(default=None, description="Surface name: surfaces/<name>.yaml in the task set.")
    prompt: str | None = Field(default=None, description="Prompt name: prompts/<name>.md in the task set.")
    model: str | None = Field(default=None, description="Pinned model id (the baseline agent's own id for baseline).")
    agent: AgentKind | None = Field(default=None, description="baseline, openai or anthropic.")
    version: str | None = Field(default=None, description="Task-set version; defaults to the experiment's.")
    options: dict[str, Any] = Field(default_factory=dict, description="Agent settings (base_url, temperature, ...).")


class TaskComparison(BaseModel):
    """Two arms read against each other: they differ in one respect unless the rest is declared."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    baseline: str = Field(alias="from", description="The arm compared from.")
    arm: str = Field(alias="to", description="The arm compared to.")
    declare: list[TaskRespect] = Field(default_factory=list, description="Respects knowingly changed together.")


class TaskExperimentFile(BaseModel):
    """A task experiment file (YAML)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Experiment name.")
    description: str = Field(default="", description="What the experiment asks.")
    taskset: str = Field(description="Path of the task-set folder, relative to the experiment file.")
    version: str = Field(description="Default task-set version for every arm (t1, ...).")
    seeds: list[int] = Field(description="Seeds: each one recorded permutation of the tool order.")
    batch_size: int = Field(default=25, ge=1, description="Tasks per Prefect task.")
    criteria: str | None = Field(default=None, description="Acceptance-criteria file, relative to the experiment file.")
    defaults: TaskArmSpec | None = Field(default=None, description="Values every arm takes unless it sets its own.")
    arms: list[TaskArmSpec] = Field(min_length=1, description="The arms, in order (A, B, C, D, ...).")
    comparisons: Literal["ladder"] | list[TaskComparison] = Field(
        default="ladder", description="'ladder' compares each arm with the one before; or explicit pairs.")
    declared: Declarations = Field(default_factory=Declarations, description="Knowing departures from the rules.")
    budget: RunBudget | None = Field(default=None, description="Spend and call caps of the run (hosted agents).")
    tracing: TracingSpec | None = Field(
        default=None, description="Send one OpenInference trace per task run to an OTLP collector such as Phoenix.")

    @model_validator(mode="before")
    @classmethod
    def _defaults_need_a_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("defaults"), dict):
            data = dict(data)
            data["defaults"] = {"name": "defaults", **data["defaults"]}
        return data
