"""Tool catalogues: the tools an agent is offered, with their descriptions and JSON-schema parameters.

A catalogue imported from an MCP server (``tooleval import mcp``) also records where its tools came from
(``CatalogueFile.source``) and the annotations the server gave (``CatalogueFile.annotations``). Both stay in
the file: the resolved ``Catalogue`` (what is offered, hashed and cached) holds the tools alone.
"""

import json
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from schemas.mcp import McpAnnotations, McpSource

NONE_LABEL = "none"
"""The label of a request where no offered tool fits: the right answer is to call no tool."""

PARAMETERS_RULE = "tool-parameters-schema"
"""The rule a tool's ``parameters`` break when they are not a JSON Schema of an object."""

PARAMETERS_PASSED = "parameters_passed"
"""Validation context key (``model_validate_json(..., context={PARAMETERS_PASSED: True})``): these very bytes
passed the parameters check under the same rules before (tasks/taskset/catalogue_memo.py), so it is not run
again; every other field is validated as always."""


class ToolParametersError(ValueError):
    """A tool's ``parameters`` are not a JSON Schema of an object; pydantic keeps it as the error's
    ``ctx["error"]``, so a loader can name ``PARAMETERS_RULE`` (``rule_of``)."""


def rule_of(error: Any, default: str = "schema") -> str:
    """``PARAMETERS_RULE`` when a pydantic ``ValidationError`` comes from a tool's parameters, else ``default``."""
    for item in error.errors():
        if isinstance((item.get("ctx") or {}).get("error"), ToolParametersError):
            return PARAMETERS_RULE
    return default


@lru_cache(maxsize=4096)
def _schema_problem(schema_json: str) -> str | None:
    import jsonschema  # here, not at the top: an import a remembered catalogue (tasks/taskset/catalogue_memo.py) never pays
    from jsonschema.exceptions import SchemaError

    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as error:
        where = "/".join(str(p) for p in error.path) or "(top level)"
        return f"not a valid JSON Schema at {where}: {error.message[:160]}"
    if schema.get("type") != "object":
        return f"not a schema of an object: the top level must say 'type: object', it says {schema.get('type')!r}"
    return None


def parameters_problem(parameters: dict[str, Any]) -> str | None:
    """Why ``parameters`` cannot be a tool's argument schema (None when they can): it must pass jsonschema's
    check against its metaschema (the draft it declares, default 2020-12) and have ``type: object`` at the top."""
    try:
        text = json.dumps(parameters, sort_keys=True)
    except (TypeError, ValueError):
        return "not JSON-serialisable"
    return _schema_problem(text)


class ToolSpec(BaseModel):
    """One tool as the model sees it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="The tool's name, unique within a catalogue; never 'none'.")
    description: str = Field(description="What the tool does, as written for the model.")
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="JSON schema of the tool's arguments.",
    )

    @field_validator("name")
    @classmethod
    def _name_is_not_none_label(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("tool name is empty")
        if value == NONE_LABEL:
            raise ValueError(f"'{NONE_LABEL}' is reserved for 'no tool fits' and cannot name a tool")
        return value

    @model_validator(mode="after")
    def _parameters_are_a_json_schema(self, info: ValidationInfo) -> "ToolSpec":
        if (info.context or {}).get(PARAMETERS_PASSED):
            return self
        problem = parameters_problem(self.parameters)
        if problem:
            raise ToolParametersError(f"tool '{self.name}': parameters are {problem}")
        return self


class CatalogueFile(BaseModel):
    """A catalogue file on disk: its own tools, optionally on top of another catalogue (a ladder rung)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Catalogue name; equals the file stem.")
    extends: str | None = Field(default=None, description="Name of the catalogue this one adds to, if any.")
    description: str = Field(default="", description="What this catalogue or rung adds, for the report.")
    tools: list[ToolSpec] = Field(description="Tools this file adds (all tools when it extends nothing).")
    source: McpSource | None = Field(default=None, description="The MCP server the tools were listed from, when "
                                     "imported by `tooleval import mcp` (its version, content hash, previous version).")
    annotations: dict[str, McpAnnotations] | None = Field(
        default=None,
        description="Tool name -> the MCP annotations its server gave (tools it gave none for are absent).")
    offered_as: dict[str, str] | None = Field(
        default=None,
        description="Label -> the name this file offers that tool as, for tools offered under another name "
                    "than the one requests are labelled with (written by `tooleval tasks catalogue` from a "
                    "surface's prefix or rename: `git_status` -> `git.git_status`). A request labelled "
                    "`git_status` then expects `git.git_status` of an arm offering this catalogue. A tool of the "
                    "file no label maps to is labelled by its own name.")

    @model_validator(mode="after")
    def _annotations_name_tools(self) -> "CatalogueFile":
        unknown = sorted(set(self.annotations or {}) - {tool.name for tool in self.tools})
        if unknown:
            raise ValueError(f"annotations name tools that are not in the file: {', '.join(unknown)}")
        return self

    @model_validator(mode="after")
    def _offered_as_names_tools(self) -> "CatalogueFile":
        offered_as = self.offered_as or {}
        unknown = sorted(set(offered_as.values()) - {tool.name for tool in self.tools})
        if unknown:
            raise ValueError(f"offered_as maps labels to names that are not tools of the file: {', '.join(unknown)}")
        if NONE_LABEL in offered_as:
            raise ValueError(f"offered_as cannot map '{NONE_LABEL}': it is the label of 'no tool fits'")
        twice = sorted(name for name in set(offered_as.values()) if list(offered_as.values()).count(name) > 1)
        if twice:
            raise ValueError(f"offered_as maps two labels to the same tool: {', '.join(twice)}")
        return self


def resolved_offered_as(files: "list[CatalogueFile]") -> dict[str, str]:
    """Label -> offered name for every tool of a chain of files (inherited first) when one of them has
    ``offered_as``: a file's own map, and its other tools under their own name; empty when none has one."""
    if not any(file.offered_as for file in files):
        return {}
    resolved: dict[str, str] = {}
    for file in files:
        own = file.offered_as or {}
        mapped = set(own.values())
        resolved.update(own)
        resolved.update({tool.name: tool.name for tool in file.tools if tool.name not in mapped})
    return resolved


class Catalogue(BaseModel):
    """A resolved catalogue: every tool, inherited ones first, in file order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Catalogue name.")
    tools: tuple[ToolSpec, ...] = Field(description="All tools, inherited first.")
    offered_as: dict[str, str] = Field(
        default_factory=dict,
        description="Label -> the name a tool is offered as, for every tool, when a file of the chain has "
                    "``offered_as`` (``resolved_offered_as``); empty when none has (every tool is labelled by its "
                    "own name).")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(tool.name for tool in self.tools)

    @property
    def label_names(self) -> tuple[str, ...]:
        """The names a request's label uses for the tools of this catalogue: the labels of ``offered_as`` when
        it has one, else the tools' names."""
        return tuple(self.offered_as) if self.offered_as else self.names

    def content_json(self) -> str:
        """The catalogue as JSON for its hash: ``offered_as`` only when it maps something, so a catalogue
        without one hashes as it did before the field existed."""
        return self.model_dump_json(exclude=None if self.offered_as else {"offered_as"})

    def tool(self, name: str) -> ToolSpec:
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(name)
