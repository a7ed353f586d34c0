"""The Selector protocol every way of picking a tool implements (offline routers, hosted chat models)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from schemas.catalogue import ToolSpec
from schemas.selection.rows import Selection
from schemas.taskset import Message, last_user_text


@dataclass(frozen=True)
class SelectionInput:
    """One request as a selector sees it: the conversation and the tools in the seed's order."""

    request_id: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    prompt: str

    @property
    def text(self) -> str:
        """The last user turn."""
        return last_user_text(self.messages)


class Selector(Protocol):
    """Picks the first tool (or 'none') for each request of a batch.

    ``select`` never raises for a bad reply or a failed call: it returns a ``Selection`` whose
    ``outcome_hint`` says invalid / error / empty, so failures land as rows.
    """

    kind: str
    """Selector kind, as in the experiment file ('lexical', 'embedding', 'openai', 'anthropic')."""

    model_id: str
    """The pinned model id this selector answers with."""

    def select(self, batch: Sequence[SelectionInput]) -> list[Selection]:
        """One Selection per input, in input order."""
        ...
