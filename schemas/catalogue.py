"""Tool catalogues: the tools an agent is offered, with their descriptions and JSON-schema parameters."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

NONE_LABEL = "none"
"""The label of a request where no offered tool fits: the right answer is to call no tool."""


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


class CatalogueFile(BaseModel):
    """A catalogue file on disk: its own tools, optionally on top of another catalogue (a ladder rung)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Catalogue name; equals the file stem.")
    extends: str | None = Field(default=None, description="Name of the catalogue this one adds to, if any.")
    description: str = Field(default="", description="What this catalogue or rung adds, for the report.")
    tools: list[ToolSpec] = Field(description="Tools this file adds (all tools when it extends nothing).")


class Catalogue(BaseModel):
    """A resolved catalogue: every tool, inherited ones first, in file order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Catalogue name.")
    tools: tuple[ToolSpec, ...] = Field(description="All tools, inherited first.")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(tool.name for tool in self.tools)

    def tool(self, name: str) -> ToolSpec:
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(name)
