"""Experiment files: the arms (catalogue x prompt x pinned model x selector x task-set version) and seeds."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Respect = Literal["catalogue", "prompt", "model", "selector", "version"]
"""The respects in which two arms can differ; a comparison may change exactly one unless declared."""

RESPECTS: tuple[Respect, ...] = ("catalogue", "prompt", "model", "selector", "version")

SelectorKind = Literal["lexical", "embedding", "trained", "openai", "anthropic"]

PER_REQUEST_CATALOGUE = "per_request"
"""Catalogue name meaning: offer each request its own tools (BFCL style)."""


class ArmSpec(BaseModel):
    """One arm (a rung when arms form a ladder): one complete configuration."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Arm name, unique in the experiment.")
    catalogue: str | None = Field(default=None, description="Catalogue name, or 'per_request'.")
    prompt: str | None = Field(default=None, description="Prompt name: prompts/<name>.md in the task set.")
    model: str | None = Field(default=None, description="Pinned model id (a dated snapshot for hosted models).")
    selector: SelectorKind | None = Field(default=None, description="Which selector implementation runs the arm.")
    version: str | None = Field(default=None, description="Task-set version; defaults to the experiment's.")
    options: dict[str, Any] = Field(default_factory=dict, description="Selector settings (temperature, base_url, ...).")

    def respect(self, respect: Respect) -> Any:
        return getattr(self, respect)


class Comparison(BaseModel):
    """Two arms read against each other; they must differ in one respect unless the rest is declared."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    baseline: str = Field(alias="from", description="The arm compared from.")
    arm: str = Field(alias="to", description="The arm compared to.")
    declare: list[Respect] = Field(
        default_factory=list,
        description="Respects beyond the first that are knowingly changed together (e.g. [catalogue, selector]).",
    )


class Declarations(BaseModel):
    """Departures from the defaults that the experiment knowingly makes."""

    model_config = ConfigDict(extra="forbid")

    few_seeds: str | None = Field(default=None, description="Why fewer than three seeds are enough here.")


class RunBudget(BaseModel):
    """Caps on one run's calls to hosted models; reaching one stops new calls (remaining rows land as
    errors 'budget reached', uncached) and a rerun resumes from the selection cache."""

    model_config = ConfigDict(extra="forbid")

    max_spend_usd: float | None = Field(default=None, ge=0, description="Spend cap in US dollars (price file).")
    max_calls: int | None = Field(default=None, ge=0, description="Cap on provider calls (router and judge included).")


class TracingSpec(BaseModel):
    """Export every selection as an OpenInference trace (off unless given; ``--trace`` overrides it)."""

    model_config = ConfigDict(extra="forbid")

    endpoint: str = Field(description="OTLP/HTTP collector as otlp://HOST:PORT (Phoenix: otlp://127.0.0.1:6006).")
    project: str | None = Field(default=None, description="Phoenix project the spans land in (default 'tooleval').")


class ExperimentFile(BaseModel):
    """An experiment file (YAML) as written by a person."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Experiment name.")
    description: str = Field(default="", description="What the experiment asks.")
    taskset: str = Field(description="Path of the task-set folder, relative to the experiment file.")
    version: str = Field(description="Default task-set version for every arm.")
    seeds: list[int] = Field(description="Seeds: each one recorded permutation of the tool order.")
    batch_size: int = Field(default=200, ge=1, description="Requests per selection task.")
    weights: str | None = Field(default=None, description="Production weights window id: weights/<id>.json.")
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
        default=None, description="Send one OpenInference trace per row to an OTLP collector such as Phoenix.")

    @model_validator(mode="before")
    @classmethod
    def _defaults_need_a_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("defaults"), dict):
            data = dict(data)
            data["defaults"] = {"name": "defaults", **data["defaults"]}
        return data
