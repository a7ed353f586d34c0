"""Selection experiment files: arms of catalogue x prompt x pinned model x selector x task-set version, read
over labelled requests, with the production weights window the weighted figures use."""

from typing import Literal

from pydantic import Field

from schemas.experiment import ArmSpec, Comparison, ExperimentFile

Respect = Literal["catalogue", "prompt", "model", "selector", "version"]
"""The respects in which two arms can differ; a comparison may change exactly one unless declared."""

RESPECTS: tuple[Respect, ...] = ("catalogue", "prompt", "model", "selector", "version")

SelectorKind = Literal["lexical", "embedding", "trained", "position_biased", "openai", "anthropic"]
"""``position_biased`` is a simulation of position sensitivity over an offline router (tests and examples), not a
model (``tasks/selectors/routers/position_biased.py``)."""

PER_REQUEST_CATALOGUE = "per_request"
"""Catalogue name meaning: offer each request its own tools (BFCL style)."""


class SelectionArmSpec(ArmSpec):
    """One arm (a rung when arms form a ladder): one complete configuration of the selector."""

    catalogue: str | None = Field(default=None, description="Catalogue name, or 'per_request'.")
    selector: SelectorKind | None = Field(default=None, description="Which selector implementation runs the arm.")
    batch: bool | None = Field(default=None, description=(
        "Send the arm's chat requests through the provider's batch API (openai, anthropic; about half the "
        "price, results within 24 hours); unset: the experiment's `batch`. Routed and judged arms send "
        "synchronous calls whatever it says."))


class SelectionComparison(Comparison):
    declare: list[Respect] = Field(
        default_factory=list,
        description="Respects beyond the first that are knowingly changed together (e.g. [catalogue, selector]).",
    )


class SelectionExperimentFile(ExperimentFile):
    """A selection experiment file (YAML)."""

    weights: str | None = Field(default=None, description="Production weights window id: weights/<id>.json.")
    defaults: SelectionArmSpec | None = Field(default=None, description="Values every arm takes unless it sets its own.")
    arms: list[SelectionArmSpec] = Field(min_length=1, description="The arms, in ladder order.")
    batch: bool = Field(default=False, description=(
        "Send every hosted arm's chat requests through the provider's batch API (an arm's own `batch` wins; "
        "`tooleval run --batch` turns it on for the run)."))
    batch_wait: Literal["hold", "detach"] = Field(default="hold", description=(
        "How a run waits on its batches: 'hold' (each work unit waits in its task until its batches end) or "
        "'detach' (submit, poll once; if a batch still runs, the run stops before registering with exit 8 and "
        "a rerun of the same command picks the batches up); `tooleval run --batch-wait` overrides it."))
    comparisons: Literal["ladder"] | list[SelectionComparison] = Field(
        default="ladder",
        description="'ladder' compares each arm with the one before it; or an explicit list of pairs.",
    )
