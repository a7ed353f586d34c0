"""A task-set version's requests as selector inputs, each with the label it is scored against: what
``tooleval train``, ``tooleval fit`` and the router benchmarks read a version as.

A request offers its own tools when it has them (a per-request catalogue, e.g. BFCL), else the shared tools
given; its label is ``effective_label`` (the fallback when the expected tool is not offered)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping, Sequence

import polars as pl

from schemas.catalogue import ToolSpec
from schemas.taskset import effective_label
from tasks.selectors.base import SelectionInput
from tasks.taskset.load_taskset import load_catalogue
from tasks.taskset.request_table import parse_messages, parse_tools


def labelled_inputs(table: pl.DataFrame, shared: Sequence[ToolSpec] = (), prompt: str = "",
                    offered_as: Mapping[str, str] | None = None) -> tuple[list[SelectionInput], list[str]]:
    """One input per request of ``table`` (a version's request table), in file order, and its label (spelled as
    ``shared`` offers it, through its catalogue's ``offered_as``, for a request without its own tools)."""
    inputs, labels = [], []
    for request_id, messages, expected, fallback, own in zip(
            table.get_column("id").to_list(), table.get_column("messages").to_list(),
            table.get_column("expected").to_list(), table.get_column("fallback").to_list(),
            table.get_column("tools").to_list()):
        tools = tuple(parse_tools(own) or ()) if own is not None else tuple(shared)
        inputs.append(SelectionInput(request_id=request_id, messages=parse_messages(messages), tools=tools,
                                     prompt=prompt))
        mapped = offered_as if own is None else None
        labels.append(effective_label(expected, fallback, {t.name for t in tools}, mapped))
    return inputs, labels


def catalogue_union(taskset_dir: Path, names: Iterable[str] | None = None
                    ) -> tuple[tuple[ToolSpec, ...], dict[str, str]]:
    """The tools of the named catalogues of a task set (default: every one in its ``catalogues/``), each name
    once, the first catalogue's definition kept: the tools a request without its own is offered in training;
    and label -> the name they offer it as (each catalogue's ``offered_as``, or its tools under their own
    names; the first catalogue naming a label kept), for ``labelled_inputs``."""
    if names is None:
        names = sorted(p.stem for p in (taskset_dir / "catalogues").glob("*.json"))
    shared: dict[str, ToolSpec] = {}
    spelled: dict[str, str] = {}
    for name in names:
        catalogue = load_catalogue(taskset_dir, name)
        for tool in catalogue.tools:
            shared.setdefault(tool.name, tool)
        for label, offered in (catalogue.offered_as or {n: n for n in catalogue.names}).items():
            spelled.setdefault(label, offered)
    return tuple(shared.values()), spelled
