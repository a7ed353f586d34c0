"""A request's text as a decision model reads it, and its identity as the model's examples record it: what
leakage and cross-fitting compare, readable without the numerical stack."""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

from schemas.taskset import Message
from tasks.selectors.routers.conversation import conversation_text

_SPACES = re.compile(r"\s+")

DEFAULT_CONTEXT_TURNS = 2
"""The turns ``tooleval train`` reads before each conversation's last user turn unless told otherwise (the last
turn is also read alone beside them: ``decision_features.LAST_TURN_TOOL_FEATURES``); docs/measured/
conversations.md."""


def text_hash(text: str) -> str:
    """sha256 of the request text, trimmed, lower case, runs of white space as one space."""
    return hashlib.sha256(_SPACES.sub(" ", text.strip().lower()).encode()).hexdigest()


def example_text(messages: Sequence[Message], context_turns: int) -> str:
    """The text a decision model learns from and scores for a conversation: its last user turn after the
    ``context_turns`` turns before it (the model file's ``context_turns``), as the base routers read it."""
    return conversation_text(messages, context_turns)
