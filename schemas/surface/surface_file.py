"""Tool surfaces, ``surfaces/<name>.yaml`` in a task-set folder: a toolkit (typed Python tools over a state model,
in the task set's ``backend/`` package) or the tools of MCP servers (``mcp:``), seen through an optional
transform (namespace prefixes, renames, rewritten descriptions, a subset). A transform changes only what the
model *sees*: the backend, its calls and the assertions (written against backend tool names) stay the same, so
two surfaces that differ only by a transform differ in one respect. docs/surface/writing-a-surface.md and
docs/surface/mcp.md show both kinds of file."""

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from schemas.mcp import McpServer, ResetMode


class SurfaceTransform(BaseModel):
    """What a surface changes about its toolkit's tools as offered to the model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prefix: dict[str, list[str]] = Field(
        default_factory=dict, description="Prefix -> backend tools that get it (e.g. 'crm.': [get_customer]).")
    rename: dict[str, str] = Field(default_factory=dict, description="Backend tool -> name offered (before prefixes).")
    describe: dict[str, str] = Field(default_factory=dict, description="Backend tool -> description offered.")
    include: list[str] | None = Field(default=None, description="Backend tools offered (default: all).")

    @property
    def empty(self) -> bool:
        return not (self.prefix or self.rename or self.describe or self.include is not None)


class ErrorText(BaseModel):
    """How a server says a call was refused when it does not set ``isError``: a regular expression searched
    (Python ``re.search``) in the result's text; a result whose text matches counts as an error call
    (executed, refused), as an ``isError`` result does."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    regex: str = Field(description="Searched in the result's text, e.g. '^(Database )?[Ee]rror' (anchor it with ^).")

    @field_validator("regex")
    @classmethod
    def _compiles(cls, regex: str) -> str:
        try:
            re.compile(regex)
        except re.error as error:
            raise ValueError(f"error_text.regex '{regex}' is not a regular expression: {error}") from None
        if re.search(regex, ""):
            raise ValueError(f"error_text.regex '{regex}' matches an empty text: every result would be an error")
        return regex

    def matches(self, text: str) -> bool:
        return re.search(self.regex, text) is not None


class ToolMarkOverride(BaseModel):
    """A surface file's marks for one tool of an MCP server, over what its annotations say (null keeps it),
    and how that tool signals a refused call in text (over its server's ``error_text``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    read_only: bool | None = Field(default=None, description=(
        "Stands for the tool's readOnlyHint (over or in place of the server's): true counts it as a read (not a "
        "write, not irreversible, one upstream read a call); false as a write, irreversible unless its "
        "destructiveHint is false. `writes` / `irreversible` / `upstream_reads`, when given, win over it."))
    error_text: ErrorText | None = Field(default=None, description=(
        "This tool's refused calls answered as text without isError (over its server's error_text)."))
    writes: bool | None = None
    irreversible: bool | None = None
    handoff: bool | None = None
    upstream_reads: int | None = Field(default=None, ge=0, description="Upstream reads one executed call counts.")


class SurfaceServer(McpServer):
    """One MCP server of a surface: how to reach it, and the imported catalogue its tools are pinned to."""

    catalogue: str | None = Field(default=None, description=(
        "An imported catalogue (catalogues/<name>.json, from `tooleval import mcp`) the server's tools are "
        "pinned to: the surface is resolved from it without starting the server, and a server whose tools "
        "differ from it is a surface error. Default: the tools the server lists when the surface is read."))
    error_text: ErrorText | None = Field(default=None, description=(
        "How this server's tools answer a refused call when they do not set isError (e.g. mcp-server-sqlite's "
        "'Database error: ...'): a result whose text matches counts as an error call. Default: isError alone."))


class ResetCall(BaseModel):
    """One tool call made through a surface's servers to set up or tear down a task's state."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(description="A tool one of the surface's servers lists (its own name, not a transform's).")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Its arguments.")


class ResetCalls(BaseModel):
    """Per-task state through declared calls (a URL server, whose state tooleval cannot empty or restart):
    ``setup`` before each task (a failure: the task is not carried out), ``teardown`` after it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    setup: tuple[ResetCall, ...] = Field(default=(), description="Made in order before each task's own setup and "
                                                                 "its agent; one that fails stops the task "
                                                                 "(surface_error: not carried out).")
    teardown: tuple[ResetCall, ...] = Field(default=(), description=(
        "Made in order after each task (when its server still answers); a failure is recorded in the task's "
        "detail, and the next task is carried out only once the teardown has succeeded."))

    @model_validator(mode="after")
    def _some_call(self) -> "ResetCalls":
        if not (self.setup or self.teardown):
            raise ValueError("reset: {setup: [...], teardown: [...]} declares at least one call")
        return self

    @property
    def tools(self) -> list[str]:
        return [call.tool for call in (*self.setup, *self.teardown)]


class McpSurface(BaseModel):
    """The MCP servers a surface's tools come from, and how each task gets fresh state."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    servers: dict[str, SurfaceServer] = Field(description="Server name -> how to reach it; tool names are unique "
                                                           "across the servers of a surface.")
    reset: ResetMode | ResetCalls = Field(default="files", description=(
        "How each task starts from fresh state: files / restart / none (schemas/mcp.py), or declared calls "
        "{setup: [{tool, arguments}], teardown: [...]} (ResetCalls)."))
    make_dirs: tuple[str, ...] = Field(default=(), description="Folders created under {state_dir} in every fresh "
                                                               "state (a server that serves a folder needs it).")
    call_timeout_s: float = Field(default=30.0, gt=0, description="A call with no answer by then: the server hung "
                                                                  "(a surface error; the server is restarted).")
    marks: dict[str, ToolMarkOverride] = Field(default_factory=dict, description=(
        "Tool -> marks over its annotations (read_only, writes, irreversible, handoff, upstream_reads) and its "
        "error_text."))

    @field_validator("servers")
    @classmethod
    def _some_server(cls, servers: dict[str, SurfaceServer]) -> dict[str, SurfaceServer]:
        if not servers:
            raise ValueError("an MCP surface names at least one server")
        return servers

    @field_validator("make_dirs")
    @classmethod
    def _inside_state(cls, dirs: tuple[str, ...]) -> tuple[str, ...]:
        for folder in dirs:
            if folder.startswith("/") or ".." in folder.split("/"):
                raise ValueError(f"make_dirs: '{folder}' is not a relative folder inside the state")
        return dirs


class SurfaceFile(BaseModel):
    """``surfaces/<name>.yaml``: a toolkit or MCP servers, through a transform."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Surface name; equals the file stem.")
    description: str = Field(default="", description="What this surface is, for the report.")
    toolkit: str | None = Field(default=None, description="'module:Class' in the task set's backend/ package.")
    mcp: McpSurface | None = Field(default=None, description="MCP servers whose tools the surface offers.")
    transform: SurfaceTransform = Field(default_factory=SurfaceTransform, description="Names and descriptions offered.")
    call_timeout_s: float | None = Field(default=None, gt=0, description=(
        "A toolkit surface: how long one tool call is waited for (default 30 s). A call with no answer by then "
        "is an error call and the task stops with surface_error (tasks/surface/surface_session.py). An MCP "
        "surface sets `mcp.call_timeout_s` instead."))

    @model_validator(mode="after")
    def _one_backend(self) -> "SurfaceFile":
        if (self.toolkit is None) == (self.mcp is None):
            raise ValueError("a surface has a `toolkit` (a Python backend) or `mcp` (servers), exactly one")
        if self.mcp is not None and self.call_timeout_s is not None:
            raise ValueError("call_timeout_s is a toolkit surface's; an MCP surface sets mcp.call_timeout_s")
        return self


class ToolMarks(BaseModel):
    """A backend tool's marks, declared with ``@tool(...)`` in the toolkit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    writes: bool = Field(default=False, description="Changes the state (a WRITE tool); else it only reads.")
    irreversible: bool = Field(default=False, description="Cannot be undone (pages on-call, sends, pays): counted "
                                                          "as an irreversible action when executed.")
    handoff: bool = Field(default=False, description="Puts the case on a human's desk (a ticket, an escalation).")
