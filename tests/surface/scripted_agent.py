"""An in-process agent that plays a script of turns (for the loop's own tests; the hosted agents are tested
against the loopback server)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from schemas.catalogue import ToolSpec
from schemas.surface.task import SurfaceTask
from tasks.surface.agent_types import AgentTurn, ProposedCall, ToolResult


def calls(*pairs: tuple[str, Any], text: str = "", tokens: int | None = None) -> AgentTurn:
    return AgentTurn(calls=[ProposedCall(f"c{i}", name, arguments) for i, (name, arguments) in enumerate(pairs)],
                     text=text, input_tokens=tokens, output_tokens=0 if tokens is not None else None)


def say(text: str) -> AgentTurn:
    return AgentTurn(text=text)


@dataclass
class ScriptedSession:
    turns: list[AgentTurn]
    seen: list[list[ToolResult]] = field(default_factory=list)

    def next_turn(self) -> AgentTurn:
        return self.turns.pop(0) if self.turns else say("done")

    def feed(self, results: Sequence[ToolResult]) -> None:
        self.seen.append(list(results))


class ScriptedAgent:
    kind = "scripted"
    model_id = "script-1"
    reads_prompt = True

    def __init__(self, script: Callable[[SurfaceTask], list[AgentTurn]]):
        self.script = script
        self.sessions: list[ScriptedSession] = []

    def start(self, task: SurfaceTask, tools: tuple[ToolSpec, ...], prompt: str) -> ScriptedSession:
        session = ScriptedSession(self.script(task))
        self.sessions.append(session)
        return session
