"""The instruments tooleval measures with, by name: one line each in ``INSTRUMENTS``, name -> its package.
``selection`` (tasks/selection: which tool a model picks for each labelled request) and ``surface``
(tasks/surface: tasks done by an agent on a tool surface).

An instrument's package brings two modules: ``card.py`` (``CARD``, tasks/instrument_card.py: its store in a
warehouse, its row models, its report reader, the words its runs are called by; cheap to read) and
``instrument.py`` (``INSTRUMENT``, tasks/instrument_api.py ``instrument``: everything a run of it takes).
Nothing else of the core names an instrument: it asks this registry, which imports a package's module when
it is first asked for, so nothing of an instrument loads before it is used.

An experiment file says which instrument it is for (``instrument:``); a file written before that was
required is recognised by the arm fields only one instrument has (``instrument_of``), with a note.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Mapping

from tasks.files.input_errors import InputError

if TYPE_CHECKING:
    from tasks.instrument_card import InstrumentCard, InstrumentStore, ReportReader

INSTRUMENTS: dict[str, str] = {
    "selection": "tasks.selection",
    "surface": "tasks.surface",
}
"""Instrument name -> the package holding its ``card.py`` and ``instrument.py``."""

DEFAULT = "selection"
"""The instrument of an old experiment file whose arms use no instrument's own fields (its schema then says
what is missing)."""


def register(name: str, package: str) -> None:
    """Add instrument ``name`` (its package's dotted name) for this process: how an instrument that is not
    part of tooleval (a test's, a plug-in's) is measured with, without an edit to the registry."""
    INSTRUMENTS[name] = package


def names() -> list[str]:
    return list(INSTRUMENTS)


def card(name: str) -> InstrumentCard:
    """The ``InstrumentCard`` of instrument ``name``: its ``card.py`` alone is imported."""
    return importlib.import_module(f"{package_of(name)}.card").CARD


def cards() -> dict[str, InstrumentCard]:
    """Every instrument's card, by name, in the registry's order."""
    return {name: card(name) for name in INSTRUMENTS}


def stores() -> dict[str, InstrumentStore]:
    """Every instrument's store in a warehouse (its tables, folders and cache), by name."""
    return {name: found.store for name, found in cards().items()}


def store(name: str) -> InstrumentStore:
    return card(name).store


def landed_folders() -> dict[str, str]:
    """Every landed table of every instrument -> its folder."""
    return {table: folder for found in stores().values() for table, folder in found.landed.items()}


def report_reader(name: str) -> ReportReader:
    """What reading a registered run's report takes of instrument ``name`` (its figures and its report tables),
    without the experiment and task-set machinery or the work units that the whole ``Instrument`` brings."""
    return card(name).report_reader()


def package_of(name: str) -> str:
    """The dotted name of instrument ``name``'s package."""
    try:
        return INSTRUMENTS[name]
    except KeyError:
        raise InputError.one("", "instrument", "instrument-known",
                             f"no instrument called '{name}' (known: {', '.join(INSTRUMENTS)})") from None


def instrument_of(data: Mapping[str, Any], file: str) -> tuple[str, str | None]:
    """The instrument an experiment file (as parsed YAML) is for, and a note when the file does not say so
    and it was inferred from the arm fields only one instrument has."""
    named = data.get("instrument")
    if named is not None:
        if not isinstance(named, str) or named not in INSTRUMENTS:
            raise InputError.one(file, "instrument", "instrument-known",
                                 f"'{named}' is no instrument: one of {', '.join(INSTRUMENTS)}")
        return named, None
    arms = [data.get("defaults"), *(data.get("arms") or [])] if isinstance(data.get("arms"), list) else []
    used = {key for arm in arms if isinstance(arm, dict) for key in arm}
    marks = {name: set(card(name).arm_marks) for name in INSTRUMENTS}
    found = [name for name, own in marks.items() if used & own]
    if len(found) > 1:
        fields = ", ".join(sorted(used & set().union(*marks.values())))
        each = "; ".join(f"{name}: " + ", ".join(sorted(marks[name])) for name in found)
        raise InputError.one(file, "arms", "one-instrument",
                             f"the arms use {fields}: an experiment measures with one instrument ({each}), "
                             "not both")
    name = found[0] if found else DEFAULT
    return name, (f"{file} does not say which instrument it is for: read as 'instrument: {name}' from its "
                  "arms; add that line to the file")
