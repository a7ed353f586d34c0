"""Tool surfaces: a toolkit (typed Python tools over a state model, in the task set's ``backend/`` package)
seen through an optional transform (namespace prefixes, renames, rewritten descriptions, a subset).

``surfaces/<name>.yaml`` in a task-set folder::

    name: legacy-namespaced
    description: the legacy tools under support. / kb. prefixes
    toolkit: legacy:LegacySupport          # backend/legacy.py, class LegacySupport
    transform:
      prefix: {kb.: [search_kb, lookup_article, get_article], support.: [create_ticket, ...]}
      rename: {list_open_tickets: list_tickets}
      describe: {get_ticket: "Read one ticket by its id (T-1234)."}
      include: [search_kb, get_article]    # offer only these (default: every tool)

A transform changes what the model *sees* (names, descriptions, which tools); the backend, the calls it
executes and the assertions (written against backend tool names) stay the same, so two arms whose surfaces
differ only by a transform differ in exactly one respect.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


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


class SurfaceFile(BaseModel):
    """``surfaces/<name>.yaml``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Surface name; equals the file stem.")
    description: str = Field(default="", description="What this surface is, for the report.")
    toolkit: str = Field(description="'module:Class' in the task set's backend/ package.")
    transform: SurfaceTransform = Field(default_factory=SurfaceTransform, description="Names and descriptions offered.")


class ToolMarks(BaseModel):
    """A backend tool's marks, declared with ``@tool(...)`` in the toolkit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    writes: bool = Field(default=False, description="Changes the state (a WRITE tool); else it only reads.")
    irreversible: bool = Field(default=False, description="Cannot be undone (pages on-call, sends, pays): counted "
                                                          "as an irreversible action when executed.")
    handoff: bool = Field(default=False, description="Puts the case on a human's desk (a ticket, an escalation).")
