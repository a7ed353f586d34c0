"""MCP servers as tool surfaces users already have: how tooleval reaches one, what it keeps of a server's
tools, and how a tool's annotations become seed 001's marks.

A server is reached over stdio (a command tooleval starts, with its args, env and working directory) or
over streamable HTTP (a URL). ``{state_dir}`` in a command's args, env values or working directory is the
directory of the server instance's state, which tooleval empties and fills with a task's fixture files
before every task (tasks/surface/mcp_surface.py).

Annotations (MCP ``ToolAnnotations``) are hints a server gives; a tool without them is counted as the MCP
specification presumes it to be: not read-only, destructive, open-world. ``marks_from_annotations`` is the
one place that turns them into the counters' marks; a surface file can override any tool's marks.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

STATE_DIR = "{state_dir}"
"""Placeholder, in a server's args, env values or cwd, for the directory of its instance's state."""


class McpServer(BaseModel):
    """How to reach one MCP server: ``command`` (+ ``args``, ``env``, ``cwd``) over stdio, or ``url``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = Field(default=None, description="Executable started over stdio (e.g. node, npx, a path).")
    args: tuple[str, ...] = Field(default=(), description="Its arguments; '{state_dir}' is the instance's state.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables (values may use "
                                                                  "'{state_dir}'); secrets belong in the environment "
                                                                  "tooleval runs in, named with '$NAME'.")
    cwd: str | None = Field(default=None, description="Working directory (default: the task-set folder).")
    url: str | None = Field(default=None, description="A streamable-HTTP endpoint instead of a command.")

    @model_validator(mode="after")
    def _one_way_in(self) -> "McpServer":
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server is a `command` (stdio) or a `url` (streamable HTTP), exactly one")
        if self.url is not None and (self.args or self.env or self.cwd):
            raise ValueError("`args`, `env` and `cwd` belong to a `command`, not to a `url`")
        return self

    def describe(self) -> str:
        """The server as a person would type it (no env values: they may hold secrets)."""
        return self.url if self.url is not None else " ".join([self.command or "", *self.args])


class McpAnnotations(BaseModel):
    """A tool's MCP annotations as the server gave them (null: not given)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str | None = None
    read_only: bool | None = Field(default=None, description="readOnlyHint: the tool does not change its environment.")
    destructive: bool | None = Field(default=None, description="destructiveHint: it may destroy or overwrite.")
    idempotent: bool | None = Field(default=None, description="idempotentHint: calling it again changes nothing more.")
    open_world: bool | None = Field(default=None, description="openWorldHint: it reaches beyond the server.")


class ToolMarkOverride(BaseModel):
    """A surface file's marks for one tool, over what its annotations say (each field: null keeps it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    writes: bool | None = None
    irreversible: bool | None = None
    handoff: bool | None = None
    upstream_reads: int | None = Field(default=None, ge=0, description="Upstream reads one executed call counts.")


class McpMarks(BaseModel):
    """What one executed call of a tool counts (``marks_from_annotations``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    writes: bool
    irreversible: bool
    handoff: bool = False
    upstream_reads: int = 0


def marks_from_annotations(annotations: McpAnnotations | None, override: ToolMarkOverride | None = None) -> McpMarks:
    """Seed 001's marks of a tool from its annotations, with the MCP specification's defaults for what the
    server did not say (not read-only, destructive, open-world):

    - writes: not read-only;
    - irreversible: writes and destructive (destructiveHint counts only for tools that write);
    - upstream reads: one per executed call of a tool that reads (read-only) or reaches beyond the server
      (open-world); MCP servers report no pages, so a call is one read;
    - handoff: never from annotations (MCP has no such hint): a surface file says so.
    """
    a = annotations or McpAnnotations()
    read_only = bool(a.read_only)
    writes = not read_only
    destructive = True if a.destructive is None else a.destructive
    open_world = True if a.open_world is None else a.open_world
    marks = {"writes": writes, "irreversible": writes and destructive, "handoff": False,
             "upstream_reads": 1 if (read_only or open_world) else 0}
    if override is not None:
        marks.update({k: v for k, v in override.model_dump().items() if v is not None})
    return McpMarks(**marks)


class McpSource(BaseModel):
    """Where an imported catalogue's tools came from: recorded in the catalogue file."""

    model_config = ConfigDict(extra="forbid")

    server: str = Field(description="The server as it was reached (command and args, or the URL; never env values).")
    server_name: str | None = Field(default=None, description="serverInfo.name the server gave.")
    server_version: str | None = Field(default=None, description="serverInfo.version the server gave.")
    protocol_version: str | None = Field(default=None, description="The MCP protocol version negotiated.")
    content_hash: str = Field(description="sha256 over the tools (names, descriptions, schemas, annotations).")
    imported_at: str = Field(description="When the tools were listed (UTC, ISO 8601).")
    previous: str | None = Field(default=None, description="The catalogue version this one replaces, if any.")


ResetMode = Literal["files", "restart", "none"]
"""How a server instance starts a task with fresh state:

- files: its ``{state_dir}`` is emptied and the task's fixture files written there (the server keeps its
  state in files it reads on every call: the reference memory and filesystem servers);
- restart: the server is started anew for every task (state kept in its memory; slow: start-up per task);
- none: the server's state is not reset (a URL server, or one without state): tasks may see each other's
  writes, and the report says nothing more about it.
"""
