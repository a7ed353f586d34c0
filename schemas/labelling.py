"""The labelling queue: one line per provisional request of a resampled version, for a person to decide.

``queue/<version>.queue.jsonl`` is written with the decision fields empty; the labeller fills ``label``,
``decided_by``, ``decided_at`` and ``reason`` (a reason may be left out when the hint is confirmed) and
``tooleval queue import`` turns the decided queue into a new, adjudicated version.
"""

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from schemas.taskset import Message


class QueueItem(BaseModel):
    """One request to label: what the user said (masked), what production did, and the decision."""

    model_config = ConfigDict(extra="forbid")

    request_id: str = Field(description="The request in the provisional version.")
    taskset: str = Field(description="Task-set name.")
    version: str = Field(description="The provisional version the request belongs to.")
    messages: tuple[Message, ...] = Field(description="The conversation as the request holds it (personal data masked).")
    hint: str = Field(description="The provisional label: the tool production called first (or 'none').")
    hint_counts: dict[str, int] = Field(
        description="How often production called each first tool for this same (masked) text in the window.")
    occurrences: int = Field(description="Turns in the window with this same masked text.")
    slice: str = Field(description="Slice the request was given.")
    turn_id: str = Field(description="The production turn the request was drawn from.")
    turn_time: datetime = Field(description="When that turn happened.")
    user_retried: bool | None = Field(description="Production signal on that turn: the user retried.")
    handed_to_human: bool | None = Field(description="Production signal on that turn: handed to a human.")
    empty_reply: bool | None = Field(description="Production signal on that turn: the reply was empty.")
    review_first: bool = Field(
        description="The hint is doubtful (a retry, a hand-off, an empty reply, or production disagreed with itself).")
    labels_file: str | None = Field(
        default=None, description="The valid labels (every tool of the task set's catalogues, and 'none', with "
                                  "descriptions), a file beside the queue: queue/<version>.labels.csv.")
    label: str | None = Field(default=None, description="Decision: the right first tool, or 'none'. Empty = undecided.")
    decided_by: str | None = Field(default=None, description="Decision: who decided.")
    decided_at: datetime | None = Field(default=None, description="Decision: when (ISO 8601 with zone).")
    reason: str | None = Field(default=None, description="Decision: why; required when the label differs from the hint.")


class QueueImport(BaseModel):
    """What ``tooleval queue import`` did."""

    model_config = ConfigDict(extra="forbid")

    queue_file: str = Field(description="The queue file read.")
    taskset: str = Field(description="Task-set name.")
    from_version: str = Field(description="The provisional version the queue belongs to.")
    version: str = Field(description="The adjudicated version written (or found identical).")
    reused: bool = Field(description="An identical version already existed: nothing was written.")
    n_decided: int = Field(description="Requests decided in the queue.")
    n_changed: int = Field(description="Decisions that changed the provisional label.")
    n_still_provisional: int = Field(description="Undecided requests kept provisional (only with --partial).")
    rest_queue: str | None = Field(
        default=None, description="The queue of the requests still provisional, for the version written "
                                  "(a partial import): label it and import it next.")
