"""What a task set's backend is written with: a ``Toolkit`` of typed tools over one pydantic state object.

Each ``@tool`` method becomes one tool: its name, its docstring as the description, its JSON schema derived
from the signature by pydantic (unknown arguments refused), its marks (``writes``, ``irreversible``,
``handoff``). A tool refuses a well-formed call by raising ``ToolRefused`` (an error call, its message the
result); ``self.read(n)`` and ``self.paginate`` count upstream reads. Every run builds a fresh state from
the task's fixtures. docs/surface/writing-a-surface.md shows a worked toolkit."""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from schemas.surface.surface_file import ToolMarks

TOOL_MARKS_ATTRIBUTE = "__tooleval_tool__"
CURSOR_PREFIX = "page:"


class ToolRefused(Exception):
    """The backend refuses a well-formed call (missing record, permission, bad state); the message is the
    tool's result for the agent, and the call counts as an error call."""


def tool(function: Callable | None = None, *, writes: bool = False, irreversible: bool = False,
         handoff: bool = False) -> Any:
    """Mark a Toolkit method as a tool (``@tool`` or ``@tool(writes=True, irreversible=True)``)."""
    marks = ToolMarks(writes=writes or irreversible, irreversible=irreversible, handoff=handoff)

    def mark(method: Callable) -> Callable:
        setattr(method, TOOL_MARKS_ATTRIBUTE, marks)
        return method

    return mark(function) if function is not None else mark


class Page(BaseModel):
    """One page of a longer list: ``next_cursor`` asks for the next page while ``has_more`` is true."""

    model_config = ConfigDict(extra="forbid")

    items: list[Any] = Field(description="The records of this page.")
    has_more: bool = Field(description="More records follow.")
    next_cursor: str | None = Field(default=None, description="Pass it as `cursor` for the next page.")


def _strip_titles(schema: Any) -> Any:
    """Pydantic's generated 'title' keys carry nothing for a model: drop them (property names stay)."""
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items()
                if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


@dataclass(frozen=True)
class BackendTool:
    """One tool of a surface's backend: name, description, JSON schema, marks; for a toolkit tool also how
    to call it (its arguments model), for an MCP tool the server it belongs to."""

    name: str
    description: str
    parameters: dict[str, Any]
    marks: ToolMarks
    arguments_model: type[BaseModel] | None = None
    server: str | None = None
    """The MCP server the tool belongs to; None for a toolkit tool."""
    reads_per_call: int = 0
    """Upstream reads an executed call counts besides what the tool counts itself (MCP tools: see
    tasks/surface/mcp_backend.py); a toolkit tool counts its own with ``self.read``."""

    def invoke(self, toolkit: "Toolkit", arguments: dict[str, Any]) -> Any:
        """Run the tool with arguments already valid under ``parameters`` (typed by the arguments model)."""
        assert self.arguments_model is not None, f"{self.name} is not a toolkit tool"
        typed = self.arguments_model.model_validate(arguments)
        values = {name: getattr(typed, name) for name in typed.model_fields_set | set(arguments)}
        return getattr(toolkit, self.name)(**values)


def derive_tool(name: str, method: Callable, marks: ToolMarks) -> BackendTool:
    """A tool's JSON schema and arguments model from its signature (pydantic does the typing)."""
    signature = inspect.signature(method, eval_str=True)  # backends may use `from __future__ import annotations`
    fields: dict[str, Any] = {}
    for parameter in list(signature.parameters.values())[1:]:  # skip self
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"tool {name}: *args / **kwargs cannot be described to a model")
        annotation = parameter.annotation if parameter.annotation is not inspect.Parameter.empty else Any
        default = parameter.default if parameter.default is not inspect.Parameter.empty else ...
        fields[parameter.name] = (annotation, default)
    model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    schema = _strip_titles(model.model_json_schema())
    schema.setdefault("properties", {})
    schema["type"] = "object"
    schema["additionalProperties"] = False
    description = inspect.getdoc(method) or ""
    return BackendTool(name=name, description=description, parameters=schema, marks=marks, arguments_model=model)


def fixture_copy(fixtures: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a task's fixtures, so a run's state never shares a list or dict with the task's: pickled
    and read back (faster than ``copy.deepcopy`` on plain data), else deep-copied."""
    import pickle  # only where a state is built: a run, or a check that was not remembered

    try:
        return pickle.loads(pickle.dumps(fixtures, protocol=pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, TypeError, AttributeError):
        return copy.deepcopy(fixtures)


class Toolkit:
    """Base class of a backend: typed tools (``@tool`` methods) over ``self.state`` (a ``state_model``)."""

    state_model: ClassVar[type[BaseModel]]
    page_size: ClassVar[int] = 5
    """Records per page for ``paginate``."""

    def __init__(self, state: BaseModel):
        self.state = state
        self.upstream_reads = 0

    # -- what tools use -------------------------------------------------------------------------------
    def read(self, n: int = 1) -> None:
        """Count ``n`` upstream reads (records or pages fetched from the services behind the tool)."""
        self.upstream_reads += n

    def paginate(self, items: list[Any], cursor: str | None, page_size: int | None = None) -> Page:
        """One page of ``items`` from ``cursor`` (None = the first page); one upstream read per page."""
        size = page_size or self.page_size
        start = 0
        if cursor:
            if not cursor.startswith(CURSOR_PREFIX) or not cursor[len(CURSOR_PREFIX):].isdigit():
                raise ToolRefused(f"unknown cursor {cursor!r}: pass the next_cursor of the previous page")
            start = int(cursor[len(CURSOR_PREFIX):])
            if start > len(items):
                raise ToolRefused(f"cursor {cursor!r} is past the end of the list")
        self.read()
        end = start + size
        more = end < len(items)
        return Page(items=items[start:end], has_more=more, next_cursor=f"{CURSOR_PREFIX}{end}" if more else None)

    # -- what the harness uses ------------------------------------------------------------------------
    @classmethod
    def tools(cls) -> dict[str, BackendTool]:
        """Every ``@tool`` method, in definition order (base classes first)."""
        cached = cls.__dict__.get("_tooleval_tools")
        if cached is not None:
            return cached
        found: dict[str, BackendTool] = {}
        for klass in reversed(cls.__mro__):
            for name, member in vars(klass).items():
                marks = getattr(member, TOOL_MARKS_ATTRIBUTE, None)
                if marks is not None and callable(member):
                    found[name] = derive_tool(name, member, marks)
        cls._tooleval_tools = found
        return found

    @classmethod
    def fresh_state(cls, fixtures: dict[str, Any]) -> BaseModel:
        """A new state from a task's (merged) fixtures: raises pydantic's ValidationError when they do not fit."""
        return cls.state_model.model_validate(fixture_copy(fixtures))
