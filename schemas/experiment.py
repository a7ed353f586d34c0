"""Experiment files as every instrument writes them: a task set and its version, seeds, arms that differ in
one declared respect, acceptance criteria, a budget and tracing.

What an arm is made of is the instrument's own (schemas/selection/experiment.py: catalogue x selector;
schemas/surface/experiment.py: surface x agent); each subclasses ``ArmSpec``, ``Comparison`` and
``ExperimentFile`` below with its fields and its respects.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ArmSpec(BaseModel):
    """One arm (a rung when arms form a ladder): one complete configuration."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Arm name, unique in the experiment.")
    prompt: str | None = Field(default=None, description="Prompt name: prompts/<name>.md in the task set.")
    model: str | None = Field(default=None, description="Pinned model id (a dated snapshot for hosted models).")
    version: str | None = Field(default=None, description="Task-set version; defaults to the experiment's.")
    options: dict[str, Any] = Field(default_factory=dict, description="Settings (temperature, base_url, ...).")


class Comparison(BaseModel):
    """Two arms read against each other; they must differ in one respect unless the rest is declared."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    baseline: str = Field(alias="from", description="The arm compared from.")
    arm: str = Field(alias="to", description="The arm compared to.")
    declare: list[str] = Field(
        default_factory=list,
        description="Respects beyond the first that are knowingly changed together (e.g. [catalogue, selector]).",
    )


class Declarations(BaseModel):
    """Departures from the defaults that the experiment knowingly makes."""

    model_config = ConfigDict(extra="forbid")

    few_seeds: str | None = Field(default=None, description="Why fewer than three seeds are enough here.")


class RunBudget(BaseModel):
    """Caps on one run's calls to hosted models; reaching one stops new calls (what is left lands as errors
    'budget reached', uncached) and a rerun resumes from the cache."""

    model_config = ConfigDict(extra="forbid")

    max_spend_usd: float | None = Field(default=None, ge=0, description="Spend cap in US dollars (price file).")
    max_calls: int | None = Field(default=None, ge=0, description="Cap on provider calls (router and judge included).")


class TracingSpec(BaseModel):
    """Export the run as OpenInference traces (off unless given; ``--trace`` overrides it)."""

    model_config = ConfigDict(extra="forbid")

    endpoint: str = Field(description="OTLP/HTTP collector as otlp://HOST:PORT (Phoenix: otlp://127.0.0.1:6006).")
    project: str | None = Field(default=None, description="Phoenix project the spans land in (default 'tooleval').")


class ExperimentFile(BaseModel):
    """An experiment file (YAML) as written by a person."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Experiment name.")
    instrument: str | None = Field(
        default=None, description="What it measures with: 'selection' (which tool is picked per request) or "
                                  "'surface' (tasks done on a tool surface). A file without it is read by its "
                                  "arms' fields, with a note.")
    description: str = Field(default="", description="What the experiment asks.")
    taskset: str = Field(description="Path of the task-set folder, relative to the experiment file.")
    version: str = Field(description="Default task-set version for every arm.")
    seeds: list[int] = Field(description="Seeds: each one recorded permutation of the tool order.")
    batch_size: int = Field(default=200, ge=1, description=(
        "Requests (or tasks) per unit of work; more when an arm x seed would need over 16 units (then 16)."))
    criteria: str | None = Field(default=None, description="Acceptance-criteria file, relative to the experiment file.")
    defaults: ArmSpec | None = Field(default=None, description="Values every arm takes unless it sets its own.")
    arms: list[ArmSpec] = Field(min_length=1, description="The arms, in ladder order.")
    comparisons: Literal["ladder"] | list[Comparison] = Field(
        default="ladder",
        description="'ladder' compares each arm with the one before it; or an explicit list of pairs.",
    )
    declared: Declarations = Field(default_factory=Declarations, description="Knowing departures from the rules.")
    budget: RunBudget | None = Field(
        default=None, description="Spend and call caps per run (the CLI's --max-spend-usd / --max-calls override).")
    tracing: TracingSpec | None = Field(
        default=None, description="Send the run's OpenInference traces to an OTLP collector such as Phoenix.")

    @model_validator(mode="before")
    @classmethod
    def _defaults_need_a_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("defaults"), dict):
            data = dict(data)
            data["defaults"] = {"name": "defaults", **data["defaults"]}
        return data
