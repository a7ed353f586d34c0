"""MCP servers as tool surfaces users already have: how tooleval reaches one, what it keeps of a server's
tools, and how a tool's annotations become the tool marks the counters hang on.

A server is reached over stdio (a command tooleval starts, with its args, env and working directory: the
task-set folder unless ``cwd`` says otherwise) or over streamable HTTP (a URL). ``{state_dir}`` in a
command, its args, env values or working directory is the directory of the server instance's state, which
tooleval empties and fills with a task's fixture files before every task (tasks/surface/mcp_backend.py);
``{taskset_dir}`` is the task-set folder.

Annotations (MCP ``ToolAnnotations``) are hints a server gives; how they become the tool marks (and
what an unannotated tool counts as) is tasks/surface/mcp_backend.py's ``marks_from_annotations``.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

STATE_DIR = "{state_dir}"
"""Placeholder, in a server's args, env values or cwd, for the directory of its instance's state."""
BASE_DIR = "{taskset_dir}"
"""Placeholder for the task-set folder (where a relative command path is found when ``cwd`` is elsewhere)."""


class McpServer(BaseModel):
    """How to reach one MCP server: ``command`` (+ ``args``, ``env``, ``cwd``) over stdio, or ``url``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = Field(default=None, description="Executable started over stdio (e.g. node, npx, a path; "
                                                          "'{taskset_dir}' is the task-set folder, e.g. for a "
                                                          "server installed in the project's venv).")
    args: tuple[str, ...] = Field(default=(), description="Its arguments; '{state_dir}' is the instance's state, "
                                                          "'{taskset_dir}' the task-set folder.")
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
