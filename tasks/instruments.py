"""The instruments tooleval measures with, found by name: ``selection`` (tasks/selection: which tool a model
picks for each labelled request) and ``surface`` (tasks/surface: tasks done by an agent on a tool surface,
seed 001). What an instrument says to the core is an ``Instrument`` (tasks/instrument.py).

An experiment file belongs to the instrument whose arm fields it uses (``instrument_of``). ``instrument``
imports an instrument's module when it is first asked for: the core (tasks/experiment, tasks/run,
tasks/report) imports no instrument, and nothing of an instrument loads before it is used.

``report_reader`` is what reading a registered run's report takes of an instrument (its figures and its report
tables), from those two modules alone: ``tooleval report`` of a judged run imports neither the experiment and
task-set machinery nor the work units (~0.7 CPU s) that the whole ``Instrument`` brings.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from tasks.files.input_errors import InputError

MODULES = {"selection": "tasks.selection.instrument", "surface": "tasks.surface.instrument"}
"""Instrument name -> the module whose ``INSTRUMENT`` it is."""

REPORT_PARTS = {"selection": (("tasks.selection.figures", "load_figures"), ("tasks.selection.tables", "build_report_from")),
                "surface": (("tasks.surface.figures", "load_surface_figures"),
                            ("tasks.surface.tables", "build_surface_report"))}
"""Instrument name -> where its ``Instrument.load_figures`` and ``Instrument.build_report`` are defined (a test
keeps them the same functions)."""

ARM_MARKS = {"selection": ("catalogue", "selector"), "surface": ("surface", "agent")}
"""The arm fields only one instrument has: how an experiment file says which instrument it is for."""


def instrument(name: str) -> Any:
    """The ``Instrument`` (tasks/instrument.py) called ``name``, its module imported on first use."""
    return importlib.import_module(MODULES[name]).INSTRUMENT


@dataclass(frozen=True)
class ReportReader:
    """An instrument's parts that read a registered run's report: ``Instrument.load_figures`` and
    ``Instrument.build_report``, the same functions."""

    name: str
    load_figures: Callable[..., Any]
    build_report: Callable[..., Any]


def report_reader(name: str) -> ReportReader:
    """The ``ReportReader`` of instrument ``name``, importing its figures and tables modules only."""
    parts = [getattr(importlib.import_module(module), function) for module, function in REPORT_PARTS[name]]
    return ReportReader(name, *parts)


def instrument_of(data: Mapping[str, Any], file: str) -> str:
    """The instrument an experiment file (as parsed YAML) is for: the one whose arm fields its arms and
    defaults use (selection when they use neither: its schema then says what is missing)."""
    arms = [data.get("defaults"), *(data.get("arms") or [])] if isinstance(data.get("arms"), list) else []
    used = {key for arm in arms if isinstance(arm, dict) for key in arm}
    named = [name for name, marks in ARM_MARKS.items() if used & set(marks)]
    if len(named) > 1:
        fields = ", ".join(sorted(used & {m for marks in ARM_MARKS.values() for m in marks}))
        raise InputError.one(file, "arms", "one-instrument",
                             f"the arms use {fields}: an experiment measures tool selection (catalogue, selector) "
                             "or tasks on a surface (surface, agent), not both")
    return named[0] if named else "selection"
