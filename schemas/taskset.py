"""Task-set versions: labelled requests, adjudications, manifests and production volume weights."""

from datetime import datetime
from typing import Collection, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.catalogue import NONE_LABEL, ToolSpec
from schemas.expected_arguments import ExpectedArgument


class Message(BaseModel):
    """One conversation turn sent to the selector."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["user", "assistant", "system"] = Field(description="Who spoke.")
    content: str = Field(description="What was said.")


def last_user_text(messages: Sequence[Message]) -> str:
    """What the user said last ('' when the user never spoke): the request a selector answers."""
    for message in reversed(messages):
        if message.role == "user":
            return message.content
    return ""


def effective_label(expected: str, fallback: str | None, offered: Collection[str],
                    offered_as: Mapping[str, str] | None = None) -> str:
    """The right answer for the tools an arm offers (a request's ``expected`` and ``fallback``): the label,
    else the fallback, else 'none'; each spelled as the arm offers it when its catalogue maps labels to other
    names (``Catalogue.offered_as``: a prefix or rename), where a label it does not map is not offered."""
    return labelled_answer(expected, fallback, offered, offered_as)[1]


def labelled_answer(expected: str, fallback: str | None, offered: Collection[str],
                    offered_as: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(the right answer as the version labels it, the same as the arm offers it): ``effective_label`` with
    the label it was spelled from."""
    if expected == NONE_LABEL:
        return expected, expected
    for label in (expected, fallback):
        name = offered_as.get(label) if offered_as and label is not None else label
        if label is not None and name is not None and name in offered:
            return label, name
    return NONE_LABEL, NONE_LABEL


class LabelledRequest(BaseModel):
    """One labelled request: a line of ``<version>.jsonl``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="Request id, unique within the version.")
    messages: tuple[Message, ...] = Field(description="Earlier turns, then the user's request (last).")
    expected: str = Field(description="The right first tool when every tool of the version is offered, or 'none'.")
    fallback: str | None = Field(
        default=None,
        description=(
            "The right first tool when `expected` is not offered (an earlier rung of a ladder). "
            "Absent means 'none'. A request with a fallback is a relabel and needs an adjudication."
        ),
    )
    slice: str = Field(description="Population the request belongs to; slices are never averaged together.")
    intent: str | None = Field(default=None, description="Free-text intent tag, for reading results.")
    tools: tuple[ToolSpec, ...] | None = Field(
        default=None,
        description="Tools offered with this request only (BFCL style); absent means the arm's catalogue.",
    )
    label_status: Literal["adjudicated", "provisional"] = Field(
        default="adjudicated",
        description="'provisional' labels come from production hints and are not yet decided by a person.",
    )
    expected_arguments: dict[str, ExpectedArgument] | None = Field(
        default=None,
        description=(
            "What the `expected` tool's call must hold, per parameter (schemas/expected_arguments.py); "
            "parameters not named are free. Absent: the arguments are not scored."
        ),
    )

    @model_validator(mode="after")
    def _arguments_need_a_tool(self) -> "LabelledRequest":
        if self.expected_arguments is not None and self.expected == NONE_LABEL:
            raise ValueError("expected_arguments on a request labelled 'none': no call to compare them with")
        return self

    @property
    def text(self) -> str:
        """The last user turn: the request itself."""
        return last_user_text(self.messages)


class Adjudication(BaseModel):
    """A recorded decision that changed a request's label: a line of ``<version>.adjudications.jsonl``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    request_id: str = Field(description="The relabelled request.")
    previous_label: str = Field(description="The label before the decision (or on the earlier rung).")
    label: str = Field(description="The label decided.")
    reason: str = Field(description="Why the label changed.")
    decided_by: str = Field(description="Who decided.")
    decided_at: datetime = Field(description="When it was decided.")


class FrozenVersion(BaseModel):
    """What every task-set version's manifest starts with (either instrument's): the hash that freezes it."""

    model_config = ConfigDict(extra="forbid")

    taskset: str = Field(description="Task-set name.")
    version: str = Field(description="Version id: v1, v2, ... (requests to select for), t1, t2, ... (tasks).")
    parent: str | None = Field(default=None, description="The version this one was derived from.")
    created_at: datetime = Field(description="When the version was frozen.")
    slices: list[str] = Field(description="The slices its requests (or tasks) may belong to.")
    content_hash: str = Field(description="sha256 over the version's files (see each manifest).")


class VersionManifest(FrozenVersion):
    """``<version>.manifest.json``: what a task-set version holds; its hash covers the requests and
    adjudications files."""

    n_requests: int = Field(description="Number of requests.")
    counts_by_label: dict[str, int] = Field(description="Requests per expected label.")
    window: str | None = Field(default=None, description="Production window the version was sampled from.")
    sampling_seed: int | None = Field(default=None, description="Seed of the sample, for resampled versions.")
    notes: str = Field(default="", description="Free text: where the requests came from.")


class ProductionWeights(BaseModel):
    """``weights/<window>.json``: each tool's share of live traffic in one window."""

    model_config = ConfigDict(extra="forbid")

    window: str = Field(description="Window id, e.g. 2026-W40..2026-W47.")
    source: str = Field(description="Where the shares were measured.")
    weights: dict[str, float] = Field(description="Tool name -> share of traffic; non-negative, sums to 1.")
