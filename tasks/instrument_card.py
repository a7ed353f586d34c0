"""What the core reads of an instrument without importing it (``InstrumentCard``): its store in a warehouse
(``InstrumentStore``: names only, so a reader finds a run's tables without importing the tables' pydantic
models and pyarrow), its row models, the words its runs are called by, its report reader and how an old
experiment file that names no instrument is recognised as its own. Each instrument's ``card.py`` declares
one (``CARD``); reading a card costs no import of the instrument's modules (their functions are imported
when first called)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from pydantic import BaseModel

    from tasks.report_types import Report


@dataclass(frozen=True)
class InstrumentStore:
    """What one instrument keeps in a warehouse: registration writes these tables in one transaction."""

    run_table: str
    """One row per registered run (the run record)."""
    arm_table: str
    comparison_table: str
    landed: dict[str, str]
    """Tables of rows landed as Parquet by the work units -> the warehouse folder holding their partitions."""
    counts: dict[str, str]
    """Run-record columns filled at registration -> the landed table whose rows of the run they count."""
    cache_file: str
    """The per-item result cache under the warehouse's ``cache/`` folder (SQLite)."""
    records: tuple[str, ...] = ()
    """Other tables of a run's records, keyed by run (e.g. the seed orders)."""
    shared: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Tables that are not keyed by run -> the columns a registration replaces them by."""

    @property
    def run_tables(self) -> tuple[str, ...]:
        """Every table holding rows of a run: what registering it again replaces."""
        return (*self.landed, self.run_table, self.arm_table, self.comparison_table, *self.records)


@dataclass(frozen=True)
class ReportReader:
    """An instrument's parts that read a registered run's report: ``Instrument.load_figures`` and
    ``Instrument.build_report``, the same functions."""

    name: str
    load_figures: Callable[..., object]
    build_report: Callable[..., Report]


@dataclass(frozen=True)
class InstrumentCard:
    """What one instrument keeps in a warehouse and says of its runs, readable without importing it."""

    name: str
    store: InstrumentStore
    """Its tables, landed folders and result cache."""
    row_models: Callable[[], dict[str, type[BaseModel]]]
    """Table -> the pydantic model each of its store's tables is derived from (imported when called)."""
    report_parts: Callable[[], tuple[Callable[..., object], Callable[..., Report]]]
    """Its figures reader and its report builder (imported when called): what ``tooleval report`` needs."""
    run_kind: str
    """What one of its runs is called in a message: 'selection run', 'task run'."""
    report_command: str
    """The command that reads one of its runs' report: 'tooleval report', 'tooleval tasks report'."""
    arm_marks: tuple[str, ...] = ()
    """Arm fields only this instrument has: how an experiment file that does not say ``instrument:`` is
    recognised (files written before it was required)."""
    views: Path | None = None
    """Its folder of report views (``*.sql``, file name = view name)."""
    trace_builder: Callable[[], Callable[..., None]] | None = None
    """What builds a traced unit's spans and annotations in the trace process (tasks/tracing/trace_process.py),
    imported when called; None: its runs are not traced."""

    def report_reader(self) -> ReportReader:
        return ReportReader(self.name, *self.report_parts())
