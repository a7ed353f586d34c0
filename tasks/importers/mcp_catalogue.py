"""Import the tools an MCP server lists as a versioned catalogue of a task set (``tooleval import mcp``).

The server is started over stdio (a command, its args, ``env``, ``cwd``) or reached by URL (streamable HTTP)
through ``tasks.mcp.connection.ServerConnection``; every page of ``tools/list`` is read and written as
``<taskset>/catalogues/NAME-vN.json``, a ``CatalogueFile`` named after its file stem:

- tools: name, description ('' when the server gives none), parameters = the tool's ``inputSchema`` as given;
- annotations: tool name -> the ``McpAnnotations`` the server gave (``readOnlyHint`` ... and the tool's
  title: ``Tool.title``, else ``annotations.title``, as the MCP specification ranks them); tools without
  any are absent;
- source: the server as it was reached (command and args, or the URL: never env values, they may be secrets),
  its ``serverInfo`` name and version, the protocol version, the content hash, when, and ``previous``.

Versions are never overwritten. The content hash is the sha256 of the tools as written (names, descriptions,
schemas, annotations, in the server's order) as canonical JSON. Importing again writes nothing when the hash
equals the latest version's (a moved ``serverInfo.version`` is said), else ``NAME-v(K+1).json`` with
``previous: NAME-vK`` and one line per kind of change (``catalogue_changes``).

Bad input is an ``InputError`` before anything is written: a name that is not plain, a missing task-set
folder, a malformed env pair, neither or both of a command and a URL, a server that cannot start or list its
tools (``ServerFailed``'s reason quoted), a server with no tools, a tool name given twice or not allowed, a
bad line of the ``expected_arguments`` file (tasks/importers/argument_file.py: its rules, and the label
checks of the version it makes, against the listed tools).
``{state_dir}`` in a command, its env values or ``cwd`` is an empty temporary folder for the import.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from schemas.catalogue import Catalogue, CatalogueFile, ToolSpec, rule_of
from schemas.mcp import McpAnnotations, McpServer, McpSource
from tasks.files.atomic_write import write_exclusive
from tasks.files.input_errors import InputError, Problem
from tasks.files.owned_folders import owned_temporary_folder
from tasks.mcp.connection import START_TIMEOUT_S, ServerConnection, ServerFailed, ServerInfo, resolved_env
from tasks.mcp.tool_listing import annotations_of, catalogue_changes, tool_spec, tools_hash
from tasks.taskset.load_taskset import read_json_model, validation_message

WHERE = "tooleval import mcp"
"""The 'file' an InputError names for a problem in the command's own options."""

_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_VERSION_SUFFIX = re.compile(r"-v\d+$")
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# -- the command's options --------------------------------------------------------------------------------

def parse_env_options(pairs: Sequence[str]) -> dict[str, str]:
    """``--env KEY=VALUE`` options as a dict; a pair without '=', a key that is not a variable name, or a key
    given twice is an InputError (the value is never quoted back: it may be a secret)."""
    env: dict[str, str] = {}
    for position, pair in enumerate(pairs, start=1):
        key, eq, value = pair.partition("=")
        if not eq or not _ENV_KEY.match(key):
            raise InputError.one(WHERE, f"--env number {position}", "env-pair",
                                 "--env takes KEY=VALUE, KEY a variable name (letters, digits, '_'; not a digit "
                                 "first); a secret can be read from this environment with KEY='$NAME'")
        if key in env:
            raise InputError.one(WHERE, f"--env {key}", "env-once", f"{key} is given twice; give it once")
        env[key] = value
    return env


def check_name(name: str) -> None:
    """NAME is the catalogue's base name: letters, digits, '_' and '-', and no '-vN' ending (the import adds
    the version)."""
    if not _PLAIN_NAME.match(name):
        raise InputError.one(WHERE, f"NAME {name!r}", "plain-name",
                             "NAME is the catalogue's base name: letters, digits, '_' or '-', starting with a "
                             "letter or digit (e.g. memory)")
    if _VERSION_SUFFIX.search(name):
        raise InputError.one(WHERE, f"NAME {name!r}", "plain-name",
                             f"NAME ends in a version; give the base name ({_VERSION_SUFFIX.sub('', name)}): "
                             "the import adds -v1, -v2, ...")


def server_from_options(command: Sequence[str], url: str | None, cwd: str | None,
                        env: Mapping[str, str]) -> McpServer:
    """The server the options describe: a command (its first word, then its args) or a URL, exactly one."""
    if bool(command) == (url is not None):
        raise InputError.one(WHERE, "", "command-or-url",
                             "give the server's command after `--` (stdio, e.g. -- node server.js) or --url URL "
                             "(streamable HTTP), exactly one" + (": both were given" if command else ""))
    if url is not None and not re.match(r"^https?://[^/\s]+", url):
        raise InputError.one(WHERE, "--url", "url-http", f"{url!r} is not an http:// or https:// URL")
    if url is not None and (cwd or env):
        raise InputError.one(WHERE, "--url", "url-alone", "--cwd and --env belong to a command the import "
                             "starts, not to a server reached by URL")
    try:
        return McpServer(command=command[0] if command else None, args=tuple(command[1:]), env=dict(env),
                         cwd=cwd, url=url)
    except ValidationError as error:
        raise InputError.one(WHERE, "", "server", validation_message(error)) from None


# -- versions ---------------------------------------------------------------------------------------------

def catalogue_versions(catalogues_dir: Path, name: str) -> list[int]:
    """The version numbers N of ``NAME-vN.json`` files in the folder, in order."""
    pattern = re.compile(re.escape(name) + r"-v([1-9][0-9]*)")
    return sorted(int(found.group(1)) for path in catalogues_dir.glob(f"{name}-v*.json")
                  if (found := pattern.fullmatch(path.stem)))


def version_name(name: str, number: int) -> str:
    return f"{name}-v{number}"


# -- the tools ----------------------------------------------------------------------------------------------

def tools_of(listed: Sequence[Any], where: str) -> tuple[list[ToolSpec], dict[str, McpAnnotations]]:
    """The listed ``mcp_types.Tool``s as catalogue tools and their annotations; InputError for no tools, a
    name given twice or a name a catalogue cannot hold ('none', empty)."""
    if not listed:
        raise InputError.one(where, "", "server-has-tools", "the server lists no tools: nothing to import")
    problems: list[Problem] = []
    tools: list[ToolSpec] = []
    annotations: dict[str, McpAnnotations] = {}
    for tool in listed:
        try:
            tools.append(tool_spec(tool))
        except ValidationError as error:
            problems.append(Problem(where, f"tool {tool.name!r}", rule_of(error, "tool-name"), validation_message(error)))
            continue
        if (given := annotations_of(tool)) is not None:
            annotations[tool.name] = given
    repeated = [name for name, count in Counter(tool.name for tool in listed).items() if count > 1]
    if repeated:
        problems.append(Problem(where, "", "tool-names-unique",
                                f"the server lists two tools under one name: {', '.join(repeated)}"))
    if problems:
        raise InputError(problems)
    return tools, annotations


def list_server_tools(server: McpServer, base_dir: Path, start_timeout_s: float = START_TIMEOUT_S
                      ) -> tuple[ServerInfo, list[Any]]:
    """Start (or reach) the server, list every tool, stop it; a server that fails is an InputError quoting
    ``ServerFailed``'s reason."""
    from mcp.shared.exceptions import MCPError  # the SDK is imported only by imports that reach a server

    where = server.describe()
    with owned_temporary_folder("mcp-import") as state_dir:  # a killed import's is removed by the next run
        connection = ServerConnection(server, base_dir=base_dir, state_dir=state_dir)
        try:
            try:
                connection.start(start_timeout_s)
            except ServerFailed as failed:
                hint = ("check that the URL serves MCP over streamable HTTP" if server.url is not None
                        else "check its spelling and PATH" if "command not found" in str(failed)
                        else "run the command by hand to see all it says")
                raise InputError.one(where, "", "server-starts", f"the MCP server {failed}; {hint}") from None
            try:
                return connection.info, connection.list_tools()
            except ServerFailed as failed:
                raise InputError.one(where, "", "server-lists-tools", f"tools/list failed: {failed}") from None
            except MCPError as error:
                raise InputError.one(where, "", "server-lists-tools",
                                     f"the server answered tools/list with an error: {error}") from None
        finally:
            connection.close()


# -- the import ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class McpImportSummary:
    """What an MCP import wrote (or found unchanged), for the CLI to print."""

    taskset: Path
    version: str
    """The catalogue written ('memory-v2'), or the latest one when nothing changed."""
    written: bool
    source: McpSource
    """The new version's source (when nothing was written: what the server gave now)."""
    n_tools: int
    n_annotated: int
    """Tools the server gave annotations for."""
    n_read_only: int
    n_destructive: int
    """Tools marked destructive and not read-only."""
    changes: tuple[str, ...] = ()
    """One line per kind of change from the previous version."""
    server_version_before: str | None = None
    """The previous version's ``serverInfo.version``."""
    seconds: float = 0.0
    """Starting (or reaching) the server, listing its tools and stopping it."""
    arguments: str | None = None
    """What ``--expected-arguments`` wrote (``ArgumentVersion.line``)."""

    @property
    def path(self) -> Path:
        return self.taskset / "catalogues" / f"{self.version}.json"

    def lines(self) -> list[str]:
        """What was written (or that nothing was) and why, then the server, then what to do next."""
        short = self.source.content_hash[:12]
        where = f"catalogues/{self.version}.json"
        moved = self.server_version_before != self.source.server_version and self.server_version_before is not None
        if not self.written:
            lines = [(f"unchanged: {where} (hash {short}): the server lists the same {self.n_tools} tools; "
                      "nothing written")]
            if moved:
                lines.append(f"  server version moved: {self.server_version_before} -> {self.source.server_version} "
                             "(its tools are the same)")
            return lines + ([self.arguments] if self.arguments else [])
        replacing = f", replacing {self.source.previous}" if self.source.previous else ""
        lines = [f"wrote: {where} in {self.taskset} ({self.n_tools} tools, hash {short}){replacing}"]
        lines += [f"  {change}" for change in self.changes]
        if moved:
            lines.append(f"  server version moved: {self.server_version_before} -> {self.source.server_version}")
        server = " ".join(str(part) for part in (self.source.server_name, self.source.server_version) if part)
        lines += [(f"  server: {server or 'no serverInfo'}, MCP {self.source.protocol_version or 'unknown'}: "
                   f"{self.source.server} (started, listed and stopped in {self.seconds:.2f} s)"),
                  (f"  annotations: {self.n_annotated} of {self.n_tools} tools ({self.n_read_only} read-only, "
                   f"{self.n_destructive} destructive)")]
        if self.n_tools and not self.n_annotated:
            lines.append("  warning: no tool is annotated: on a surface each counts as MCP's defaults say, every "
                         "executed call the server does not refuse a write, an irreversible action and one upstream "
                         "read, until the surface file marks it (mcp.marks: {TOOL: {read_only: true}}); see "
                         "docs/surface/mcp.md")
        if self.arguments:
            lines.append(self.arguments)
        lines.append(f"next: `catalogue: {self.version}` in an experiment of {self.taskset}")
        return lines


def import_mcp_catalogue(name: str, taskset_dir: Path, *, command: Sequence[str] = (), url: str | None = None,
                         cwd: str | None = None, env: Mapping[str, str] | None = None, base_dir: Path | None = None,
                         start_timeout_s: float = START_TIMEOUT_S,
                         expected_arguments: Path | None = None) -> McpImportSummary:
    """List the tools of an MCP server (``command`` over stdio, or ``url``) and write them as the next version
    of catalogue ``name`` in ``taskset_dir``, unless they are the latest version's (see the module docstring).
    A relative command path and ``cwd`` are read from ``base_dir`` (default: this process's working folder).
    ``expected_arguments``: a file of expected arguments (tasks/importers/argument_file.py) checked against the
    listed tools, written as the set's next version of requests once the catalogue is."""
    taskset_dir = Path(taskset_dir)
    check_name(name)
    if not taskset_dir.is_dir():
        raise InputError.one(str(taskset_dir), "", "taskset-exists",
                             "a file, not a task-set folder" if taskset_dir.exists() else "no such task-set folder: "
                             "give an existing one (e.g. tasksets/mcp_office), or create it first")
    server = server_from_options(command, url, cwd, env or {})
    try:
        resolved_env(server, None)  # a secret named with '$NAME' that this environment does not hold
    except ServerFailed as failed:
        raise InputError.one(WHERE, "--env", "env-set", f"{failed}: set it, or give the value") from None
    catalogues_dir = taskset_dir / "catalogues"
    numbers = catalogue_versions(catalogues_dir, name) if catalogues_dir.is_dir() else []
    latest = (read_json_model(catalogues_dir / f"{version_name(name, numbers[-1])}.json", CatalogueFile)
              if numbers else None)

    if expected_arguments is not None:  # it needs a version of requests: said before a server starts
        from tasks.importers.argument_file import argument_version, latest_version

        latest_version(taskset_dir, expected_arguments)
    started = time.perf_counter()
    info, listed = list_server_tools(server, Path(base_dir) if base_dir is not None else Path.cwd(), start_timeout_s)
    seconds = time.perf_counter() - started
    tools, annotations = tools_of(listed, server.describe())
    content_hash = tools_hash(tools, annotations)
    previous = version_name(name, numbers[-1]) if latest is not None else None
    source = McpSource(server=server.describe(), server_name=info.name, server_version=info.version,
                       protocol_version=info.protocol_version, content_hash=content_hash,
                       imported_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), previous=previous)
    counts = {"n_tools": len(tools), "n_annotated": len(annotations),
              "n_read_only": sum(1 for a in annotations.values() if a.read_only),
              "n_destructive": sum(1 for a in annotations.values() if a.destructive and not a.read_only)}
    version_before = latest.source.server_version if latest is not None and latest.source is not None else None
    unchanged = latest is not None and tools_hash(latest.tools, latest.annotations) == content_hash
    version = (previous or "") if unchanged else version_name(name, numbers[-1] + 1 if numbers else 1)
    arguments = (argument_version(taskset_dir, expected_arguments, [Catalogue(name=version, tools=tuple(tools))],
                                  f"Expected arguments from {Path(expected_arguments).name}, checked against "
                                  f"catalogue {version}.")
                 if expected_arguments is not None else None)
    if unchanged:
        return McpImportSummary(taskset_dir, version, False, source, **counts, server_version_before=version_before,
                                seconds=seconds, arguments=arguments and arguments.line(*arguments.publish()))

    server_label = " ".join(part for part in (info.name, info.version) if part) or server.describe()
    file = CatalogueFile(name=version, description=f"The {len(tools)} tools MCP server {server_label} lists.",
                         tools=tools, source=source, annotations=annotations or None)
    path = catalogues_dir / f"{version}.json"
    if not write_exclusive(path, file.model_dump_json(indent=2, exclude_none=True) + "\n"):
        raise InputError.one(str(path), "", "version-immutable",
                             f"{version} was written by another import meanwhile (versions are never "
                             "overwritten): run the import again")
    changes = catalogue_changes(latest.tools, tools, latest.annotations, annotations) if latest is not None else []
    return McpImportSummary(taskset_dir, version, True, source, **counts, changes=tuple(changes),
                            server_version_before=version_before, seconds=seconds,
                            arguments=arguments and arguments.line(*arguments.publish()))
