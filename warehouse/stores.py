"""What an instrument keeps in a warehouse (``InstrumentStore``): names only, so a reader finds a run's tables
without importing the tables' pydantic models and pyarrow. Each instrument declares its store in its card
(tasks/instrument_card.py); every registered instrument's stores are tasks/instrument_registry.py
``stores``."""

from __future__ import annotations

from dataclasses import dataclass, field


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

