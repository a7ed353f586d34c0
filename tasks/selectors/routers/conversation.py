"""The text an offline router reads from a conversation: the last user turn, after ``context_turns`` earlier
turns of the conversation (the user's and the assistant's, oldest first, one a line).

"yes, that's right" says nothing about a tool; the turns before it do. The lexical, embedding and trained
routers read the same text, and a trained model records the ``context_turns`` it learned from so it scores
with the same (docs/routing/decision-models.md, "Conversations").
"""

from __future__ import annotations

from typing import Any, Sequence

from schemas.taskset import Message

CONTEXT_OPTION = "context_turns"
DEFAULT_CONTEXT_TURNS = 2
"""Turns the lexical and embedding routers read before the last user turn unless ``context_turns`` says
otherwise: the whole of a question-answer-confirmation exchange."""
CONTEXT_ROLES = ("user", "assistant")
"""The roles whose turns count as context (a system message is not a turn)."""


def parse_context_turns(value: Any) -> int:
    """A ``context_turns`` option as an int; ValueError unless a whole number >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{CONTEXT_OPTION} must be a whole number >= 0 (earlier turns read before the last user "
                         f"turn; 0 reads the last user turn alone), got {value!r}")
    return value


def conversation_text(messages: Sequence[Message], context_turns: int) -> str:
    """The last user turn, after the ``context_turns`` turns before it (non-empty ones, oldest first, one a
    line); '' when the user never spoke."""
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)
    if last is None:
        return ""
    if context_turns == 0:
        return messages[last].content
    earlier = [m.content for m in messages[:last] if m.role in CONTEXT_ROLES and m.content.strip()]
    return "\n".join([*earlier[max(len(earlier) - context_turns, 0):], messages[last].content])


def is_conversation(messages: Sequence[Message]) -> bool:
    """Whether a request holds turns (the user's or the assistant's) before its last user turn."""
    return conversation_text(messages, 1) != conversation_text(messages, 0)
