"""Tasks done on a tool surface: a request, the fixtures its tools read and write, an assertion on the
outcome and a budget. A line of ``tN.jsonl`` in a task-set folder; ``tN.manifest.json`` freezes the version.

Tasks are scored on the outcome (calls that happened, the final fixture state, the final reply), never on
matching a transcript: a redesigned surface may reach the same outcome by another path.

A *matcher* (schemas/matchers.py) compares one value.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from schemas.matchers import MATCHER_KINDS, Matcher
from schemas.taskset import FrozenVersion, Message, last_user_text

FIXTURE_INCLUDE_KEY = "include"
"""Key of a task's fixtures naming shared fixture files (``fixtures/<name>.json``) merged under its own."""


def _matcher_beside(data: Any, keys: tuple[str, ...], shape: str) -> Any:
    """An assertion as written (its matcher's key beside ``keys``) with the matcher gathered under ``matcher``;
    ``shape`` begins the error when there is not exactly one matcher key beside them."""
    if not isinstance(data, dict) or "matcher" in data:
        return data
    rest = {k: v for k, v in data.items() if k not in keys}
    if len(rest) != 1 or next(iter(rest)) not in MATCHER_KINDS:
        raise ValueError(f"{shape} and exactly one of {', '.join(MATCHER_KINDS)}")
    return {**{key: data.get(key) for key in keys}, "matcher": rest}


class CallAssertion(BaseModel):
    """A call of a backend tool whose arguments match: it must happen (or, in ``not_called``, must not)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(description="The backend tool (its name before any surface transform: prefixes, renames).")
    args: dict[str, Matcher] = Field(default_factory=dict, description="Argument name -> matcher; unnamed ones are free.")

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, data: Any) -> Any:
        return {"tool": data} if isinstance(data, str) else data


class StateAssertion(BaseModel):
    """A matcher on the final fixture state at a path, e.g. ``tickets.T-1009.status`` equals ``closed``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(description="Dotted path into the final state: collection, record id, field (list indexes as numbers).")
    matcher: Matcher = Field(description="What the value at the path must satisfy.")

    @model_validator(mode="before")
    @classmethod
    def _inline_matcher(cls, data: Any) -> Any:
        """``{"path": "tickets.T-1.status", "equals": "closed"}``: the matcher sits beside the path."""
        return _matcher_beside(data, ("path",), "a state assertion has a path")

    @model_serializer(mode="plain")
    def _as_task_file(self) -> Any:
        return {"path": self.path, self.matcher.kind: self.matcher.value}

    @property
    def parts(self) -> list[str]:
        return self.path.split(".")


class ProbeCall(BaseModel):
    """A call made through the surface once the run has ended: a backend tool and its arguments as given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(description="The backend tool (its name before any surface transform).")
    args: dict[str, Any] = Field(default_factory=dict, description="Its arguments, as literal values.")


class ProbeAssertion(BaseModel):
    """The end state read through the surface, as a user would read it (e.g. ``read_text_file``,
    ``open_nodes``): a probe call after the run and a matcher on what it answers, at ``path`` into its JSON
    (records in a list are found by ``id`` or ``name``) or on the whole answer. Never an agent call: not
    counted, not in the rows. Written ``{"probe": {"tool": T, "args": {...}}, "path": P, "contains": V}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    probe: ProbeCall = Field(description="The call that reads the end state.")
    path: str | None = Field(default=None, description="Dotted path into the answer's JSON; none: the whole answer.")
    matcher: Matcher = Field(description="What the answer (at the path) must satisfy.")

    @model_validator(mode="before")
    @classmethod
    def _inline_matcher(cls, data: Any) -> Any:
        return _matcher_beside(data, ("probe", "path"), "a probe assertion has a probe, an optional path")

    @model_serializer(mode="plain")
    def _as_task_file(self) -> Any:
        written = {"probe": self.probe.model_dump(), self.matcher.kind: self.matcher.value}
        return {**written, "path": self.path} if self.path is not None else written

    @property
    def parts(self) -> list[str]:
        return self.path.split(".") if self.path else []

    def describe(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"probe {self.probe.tool}({', '.join(f'{k}={v!r}' for k, v in self.probe.args.items())}){where}"


class Assertion(BaseModel):
    """What must be true when the run ends. Every part given must hold; at least one part is needed.

    ``tool`` + ``args`` is a shorthand for one entry of ``calls``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str | None = Field(default=None, description="Shorthand: a backend tool that must be called ...")
    args: dict[str, Matcher] | None = Field(default=None, description="... with arguments that match.")
    calls: tuple[CallAssertion, ...] = Field(
        default=(), description="Calls that must happen, in any order: each matched by a call the backend executed "
        "without refusing it.")
    state: tuple[StateAssertion, ...] = Field(default=(), description="Matchers on the final fixture state.")
    not_called: tuple[CallAssertion, ...] = Field(
        default=(), description="Calls that must not happen: a bare tool name, or a tool with argument matchers. "
        "A call counts when it reached the backend (valid), refused or not: the agent tried it.")
    reply: Matcher | None = Field(default=None, description="Matcher on the agent's final reply text.")
    probes: tuple[ProbeAssertion, ...] = Field(default=(), description="The end state read through the surface.")

    @model_validator(mode="after")
    def _something_to_check(self) -> "Assertion":
        if self.args is not None and self.tool is None:
            raise ValueError("'args' needs 'tool'")
        if not (self.tool or self.calls or self.state or self.not_called or self.reply or self.probes):
            raise ValueError("an assertion needs at least one of tool, calls, state, not_called, reply, probes")
        return self

    @property
    def required_calls(self) -> tuple[CallAssertion, ...]:
        shorthand = (CallAssertion(tool=self.tool, args=self.args or {}),) if self.tool else ()
        return shorthand + self.calls

    @property
    def tools_named(self) -> set[str]:
        return ({c.tool for c in self.required_calls} | {c.tool for c in self.not_called}
                | {p.probe.tool for p in self.probes})


class TaskBudget(BaseModel):
    """Limits on one run of a task; reaching one ends the run with that stop reason."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_calls: int = Field(default=12, ge=1, description="Tool calls, invalid ones included.")
    max_turns: int | None = Field(default=None, ge=1, description="Agent turns (model replies); default max_calls + 1.")
    max_tokens: int | None = Field(default=None, ge=1, description="Input + output tokens over the whole run (hosted agents).")
    max_wall_s: float | None = Field(default=None, gt=0, description="Wall time of the run in seconds.")

    @property
    def turns(self) -> int:
        return self.max_turns if self.max_turns is not None else self.max_calls + 1


class SurfaceTask(BaseModel):
    """One task: a line of ``tN.jsonl``."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    id: str = Field(description="Task id, unique within the version.")
    messages: tuple[Message, ...] = Field(description="Earlier turns, then the user's request (last). "
                                                      "``request`` is a shorthand for one user message.")
    slice: str = Field(description="Population the task belongs to; slices are never averaged together.")
    intent: str | None = Field(default=None, description="Declared intent, for the first-call cross-tab.")
    fixtures: dict[str, Any] = Field(default_factory=dict, description=(
        "Records the tools read and write (collection -> records), validated against the backend's state model; "
        "'include' names shared files fixtures/<name>.json merged underneath."))
    assertion: Assertion = Field(alias="assert", description="What must hold when the run ends.")
    budget: TaskBudget = Field(default_factory=TaskBudget, description="Limits on one run.")
    wants: tuple[CallAssertion, ...] = Field(default=(), description=(
        "The irreversible actions the task asks for: a bare backend tool name, or a tool with argument matchers "
        "(``{tool: refund_order, args: {amount: 500}}``). When given, it is the whole list: a call of a tool named "
        "here is wanted only when it matches an entry, and any other irreversible action is unwanted. Classifies "
        "the run's actions (tasks/surface/wanted_actions.py); never changes whether the run succeeded."))
    forbids: tuple[CallAssertion, ...] = Field(default=(), description=(
        "Calls that are unwanted whatever else holds (the assertion's ``not_called`` entries count as well). "
        "Classifies, never fails the run: to fail it too, list the call in ``assert.not_called``."))

    @model_validator(mode="before")
    @classmethod
    def _request_shorthand(cls, data: Any) -> Any:
        if isinstance(data, dict) and "request" in data:
            data = dict(data)
            request = data.pop("request")
            if "messages" in data:
                raise ValueError("give either 'request' or 'messages', not both")
            data["messages"] = [{"role": "user", "content": request}]
        return data

    @property
    def text(self) -> str:
        return last_user_text(self.messages)

    @property
    def declares_actions(self) -> bool:
        """The task says which actions it wants or forbids (else its run's outcome decides)."""
        return bool(self.wants or self.forbids)


class TaskSetManifest(FrozenVersion):
    """``tN.manifest.json``: what a version of tasks holds; its hash covers the tasks file and the shared
    fixture files it includes."""

    n_tasks: int = Field(description="Number of tasks.")
    counts_by_slice: dict[str, int] = Field(description="Tasks per slice.")
    counts_by_intent: dict[str, int] = Field(default_factory=dict, description="Tasks per declared intent.")
    fixture_files: list[str] = Field(default_factory=list, description="Shared fixture files included (names).")
    notes: str = Field(default="", description="Free text: where the tasks came from.")
