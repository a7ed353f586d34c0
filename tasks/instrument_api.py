"""What an instrument says to the core, as one typed record (``Instrument``): with its card
(tasks/instrument_card.py), the only place the core and an instrument meet. Each instrument declares one
(``INSTRUMENT`` in its package's instrument.py) from functions of its own modules; ``instrument`` finds it
by name in the registry (tasks/instrument_registry.py). The records both sides pass are
tasks/core_records.py; the prepared run (``PreparedRun``) is here, since it knows its instrument. What is the
core's and what an instrument's: docs/reference/layout.md.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

from pydantic import BaseModel

from schemas.criteria import CriteriaFile, GateResult, Verdict
from schemas.experiment import ExperimentFile
from schemas.run_records import ArmRecord, RunRecord
from schemas.taskset import ProductionWeights
from tasks.core_records import ArmContext, Loaded, ResolvedArm, ResolvedExperiment, RunContext, UnitResult, WorkUnit
from tasks.instrument_card import InstrumentCard, InstrumentStore
from tasks.instrument_registry import package_of
from tasks.report_types import Report

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection


def _nothing(*args: Any) -> None:
    return None


def on_call(module: str, name: str) -> Callable[..., Any]:
    """``module.name``, imported when first called: what only a run (its units, its report) calls is not
    imported with the instrument, so a check of an experiment (``tooleval validate``) does without it."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.target = (module, name)  # type: ignore[attr-defined]
    return call


def called(function: Callable[..., Any]) -> Callable[..., Any]:
    """The function ``function`` calls: itself, or what an ``on_call`` stands for (imported now)."""
    target = getattr(function, "target", None)
    return getattr(importlib.import_module(target[0]), target[1]) if target else function


class Spending(Protocol):
    """What a run spent on hosted models, as the run's summary says it."""

    calls: int
    """HTTP requests sent (retries included)."""
    spend_usd: float
    refused: int
    """Requests not sent because a cap was reached."""
    unknown_cost_calls: int
    """Replies without token counts (charged at their estimate)."""
    halts: Mapping[str, str]
    """Models no longer called because the served model differed from the pin: model -> reason."""


@dataclass(frozen=True)
class NothingSpent:
    """The spending of an instrument whose units call no hosted model."""

    calls: int = 0
    spend_usd: float = 0.0
    refused: int = 0
    unknown_cost_calls: int = 0
    halts: Mapping[str, str] = field(default_factory=dict)


class Forecast(Protocol):
    """What a run will cost before its first call (an instrument's own figures): printed by ``tooleval validate``
    and the first lines of a run, registered with the run."""

    def lines(self) -> list[str]:
        """What the commands print, each line fitting 80 columns; none when nothing is paid for."""

    def records(self, run_id: str) -> dict[str, list[BaseModel]]:
        """Table -> records registered with run ``run_id`` (tables of its card's store ``records``)."""

    def error_lines(self, db_path: Path, run_id: str) -> list[str]:
        """After run ``run_id`` registered in the DuckDB file ``db_path``: how far the forecast was from what
        it cost, as printed (none when nothing was forecast)."""


@dataclass(frozen=True)
class NoForecast:
    """The forecast of an instrument that forecasts nothing."""

    def lines(self) -> list[str]:
        return []

    def records(self, run_id: str) -> dict[str, list[BaseModel]]:
        return {}

    def error_lines(self, db_path: Path, run_id: str) -> list[str]:
        return []


class Figures(Protocol):
    """What the core reads of an instrument's figures (the rest is the instrument's own)."""

    @property
    def run_id(self) -> str: ...

    @property
    def run(self) -> dict[str, Any]:
        """The run record, as registered."""


@dataclass(frozen=True)
class Words:
    """How an instrument's items are counted in a run's summary and progress lines."""

    items: str
    """'rows' / 'task runs'."""
    ok: str
    """What a good item is: 'correct' / 'succeeded'."""
    failed: str
    """What a failed item is: 'invalid/error/empty' / 'could not be carried out (provider, budget, surface)'."""
    counted: str = "rows"
    """The items as the progress line counts them, short: 'rows' / 'runs'."""
    doing: str = "selecting"
    """What the units are doing, as the progress line says before the first one is done."""


@dataclass(frozen=True)
class Instrument:
    """What one instrument says to the core: one object each (``INSTRUMENT`` in its module)."""

    name: str
    card: InstrumentCard
    """What the core reads of it without importing it: its store, row models, report reader, run words."""
    experiment_file: type[ExperimentFile]
    """The experiment file's schema, with the instrument's arms, comparisons and defaults."""
    criteria_file: type[CriteriaFile]
    """The criteria file's schema, with the instrument's gate kinds."""
    respects: tuple[str, ...]
    """The respects two arms can differ in (the one-change rule), in the order they are named."""
    arm_fields: tuple[str, ...]
    """What every arm must have once merged with the experiment's defaults."""
    run_record: type[RunRecord]
    """The run record's schema: the core's fields and the instrument's own (schemas/run_records.py)."""
    words: Words
    # -- the experiment and what it reads, before the run --------------------------------------------------
    resolve_arm: Callable[[str, int, dict[str, Any], ArmContext], ResolvedArm]
    """(name, rung, merged fields, context) -> the arm with its artefact read and checked; raises
    ``ArmRefused`` (rule, message pairs) or InputError."""
    load: Callable[[ResolvedExperiment], Loaded]
    """Each task-set version the arms use, loaded and given its cheap checks (parse, schema, rules in Python;
    nothing is called, nothing written)."""
    work_items: Callable[[Any], Sequence[Any]]
    """What a loaded version's work units are batches of: its labelled requests, its tasks (sliceable)."""
    # -- the run -------------------------------------------------------------------------------------------
    run_unit: Callable[[WorkUnit, RunContext], UnitResult]
    """Run one unit (its cache first) and land its rows as Parquet; failures are rows, never raised."""
    arm_record: Callable[[ResolvedArm, dict[str, Any]], ArmRecord]
    """The arm's record; the dict holds the fields every instrument's arm record has."""
    # -- the report ----------------------------------------------------------------------------------------
    load_figures: Callable[[DuckDBPyConnection, str], Figures]
    """A registered run's figures, read from its views: what the gates judge and the report shows."""
    judges: Mapping[str, Callable[..., GateResult]]
    """Gate kind -> the function that judges it on the instrument's figures."""
    build_report: Callable[[Any, Verdict | None], Report]
    """The report's tables from the figures, the verdict first."""
    not_carried_out: Callable[[Any], Mapping[str, tuple[int, int]]] = lambda figures: {}
    """Per arm of the figures, (units that could not be carried out, units): the verdict counts them per arm, and
    an arm most of whose units could not be carried out is not judged (tasks/report/judge.py)."""
    # -- what only some instruments need -------------------------------------------------------------------
    fill_arm: Callable[[dict[str, Any]], None] = _nothing
    """Fill what an arm may leave out, once the experiment's defaults are merged in."""
    check_loaded: Callable[[ResolvedExperiment, Loaded], dict[str, Any]] = lambda experiment, loaded: {}
    """The checks that cost seconds (selection: the label checks, Great Expectations), run last, once every
    cheap check of the run has passed (tasks/run/prepare_run.py): version -> what they found."""
    check_before_run: Callable[[PreparedRun, bool], None] = _nothing
    """(prepared run, allow provisional labels): what must hold beyond the core's checks (InputError if not)."""
    records: Callable[[PreparedRun, Sequence[WorkUnit], str], dict[str, list[BaseModel]]] = \
        lambda prepared, units, run_id: {}
    """Records the run registers besides the run, its arms and its comparisons: table -> records."""
    run_fields: Callable[[PreparedRun], dict[str, Any]] = lambda prepared: {}
    """Fields of the run record that are the instrument's own (e.g. the weights window)."""
    item_count: Callable[[Any], int] | None = None
    """How many work items a loaded version has, counted without building them (None: ``len(work_items)``)."""
    units_done: Callable[[], None] = _nothing
    """Called once every unit of the run has finished (in the process that ran them): release what the units
    kept warm across tasks (e.g. MCP server instances)."""
    check_lines: Callable[[Any], list[str]] = lambda found: [str(found)]
    """What a version's checks found (``Loaded.checks``), as ``tooleval validate`` says it: one line, then
    its details."""
    validate_notes: Callable[[Sequence[ResolvedArm]], list[str]] = lambda arms: []
    """Lines ``tooleval validate`` adds about the arms (warnings, what was pinned), each indented by two."""
    unpinned: Callable[[ResolvedArm], str | None] = lambda arm: None
    """Why an arm's model may answer differently under the same id from one run to the next (None: pinned):
    the run warns of its results that came from the cache (tasks/run/unpinned_cache.py)."""
    spent: Callable[[Path | None, str], Spending] = lambda ledger, run_id: NothingSpent()
    """(the run's budget ledger, run id) -> what the run spent on hosted models."""
    forecast: Callable[..., Forecast] = lambda prepared, warehouse, use_cache=True: NoForecast()
    """(prepared run, warehouse folder or None, use_cache=True) -> what the run will cost before its first call,
    from the warehouse's history where it has one, less what its result cache answers when the run uses it."""
    sends_batches: bool = False
    """Whether its hosted calls can go through the providers' batch APIs (``batch:``, ``tooleval run --batch``);
    a run of another instrument given ``--batch`` is refused as bad input."""
    extra_disk_entries: Callable[[PreparedRun], int] = lambda prepared: 0
    """At most how many map entries (e.g. probability maps) the run's rows carry beyond their columns: the
    disk the preflight asks for counts them (tasks/run/preflight.py)."""

    @property
    def store(self) -> InstrumentStore:
        """The tables, folders and cache it keeps in a warehouse (its card's)."""
        return self.card.store


def instrument(name: str) -> Instrument:
    """The ``Instrument`` called ``name`` (tasks/instrument_registry.py), its module imported on first use."""
    return importlib.import_module(f"{package_of(name)}.instrument").INSTRUMENT


@dataclass(frozen=True)
class PreparedRun:
    """A run resolved, loaded and checked (tasks/run/prepare_run.py): what the core plans, runs and registers,
    and what an instrument's run hooks are given."""

    experiment: ResolvedExperiment
    versions: dict[str, Any]
    checks: dict[str, Any]
    """What the instrument's checks found per version (the costly ones once ``checked``)."""
    criteria: tuple[Path, CriteriaFile] | None
    weights: ProductionWeights | None = None
    checked: bool = True
    """False until the checks that cost seconds ran (tasks/run/prepare_run.py ``check_prepared``)."""

    @property
    def instrument(self) -> Instrument:
        """The experiment's ``Instrument``."""
        return instrument(self.experiment.instrument)

    @property
    def taskset(self) -> str:
        return next(iter(self.versions.values())).taskset

    @property
    def planned_items(self) -> int:
        """Rows the run will land: each arm's work items under every seed."""
        kind = self.instrument
        count = kind.item_count or (lambda version: len(kind.work_items(version)))
        return sum(count(self.versions[arm.version]) for arm in self.experiment.arms) * len(self.experiment.seeds)
