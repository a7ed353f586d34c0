"""A task's fixtures read once as the state a toolkit starts from, for the read-only checks (fixtures-schema,
assert-state-path): ``check_tasks`` builds one ``ToolkitStart`` per task and ``ToolkitBackend.state_key``
and asks it for every surface that shares the key."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Sequence

from pydantic import BaseModel


@dataclass
class ToolkitStart:
    """A task's fixtures built into a fresh state of ``model`` (None when they are not a valid one)."""

    model: type[BaseModel]
    state: BaseModel | None
    problems: list[str] = field(default_factory=list)
    """Why the fixtures are not a valid state (fixtures-schema); empty when ``state`` was built."""

    @cached_property
    def start(self) -> Any:
        """The state the task starts from as JSON (what state paths are read against), None without one."""
        return self.state.model_dump(mode="json") if self.state is not None else None

    def state_path_problem(self, parts: Sequence[str]) -> str | None:
        """Why a state assertion's path can name no value of this state (tasks/surface/state_paths.py), or None."""
        from tasks.surface.state_paths import TYPES_FIRST, NeedsStart, state_path_problem

        try:  # most paths are answered by the state model's types: the state's JSON is not needed for them
            return state_path_problem(self.model, TYPES_FIRST, parts)
        except NeedsStart:
            return state_path_problem(self.model, self.start, parts)
