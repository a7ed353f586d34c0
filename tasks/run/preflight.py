"""Checks a run makes before Prefect starts and before any model call: everything that would otherwise
fail only after selections were paid for. Each problem is an InputError naming the path and the rule.

- the run has work: at least one request (or task) under at least one seed;
- what the run's instrument asks besides, once the checks above pass (``Instrument.check_before_run``:
  selection refuses provisional labels unless the run allows them; the surface instrument checks each MCP server
  pinned to a catalogue against the tools it lists now, tasks/surface/catalogue_drift.py);
- the warehouse folder is a folder (or can be made) and is writable, and so are the folders and files a run
  writes inside it (the DuckDB file, the result caches and their SQLite journal files, the landed tables'
  folders, registrations/, reports/): a read-only warehouse (a read-only mount, files of another user) is
  refused here, before any model call, instead of failing at registration or inside SQLite;
- an existing DuckDB file opens (a file held by another process is fine: registration waits for it);
- there is room on the disk for the planned rows (a rough bound, with a margin), their probability maps
  and what registering them spills (below);
- Prefect's home folder is writable when a temporary server will be started (its SQLite database).

Registration's memory does not grow with the run (warehouse/register_run.py streams the Parquet into DuckDB
in batches under a fixed memory limit), so nothing here refuses a run for its size in memory. What does grow is disk: the rows in Parquet and in the DuckDB file, and the spill files DuckDB
writes beside the file (``tooleval.duckdb.tmp/``) for what it cannot keep under the limit; ``disk_needed``
counts all three, per probability-map entry for the maps that dominate a wide catalogue's rows.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tasks.files.input_errors import InputError, Problem
from tasks.files.write_probe import nearest_existing, write_refusal
from tasks.instrument_api import PreparedRun
from tasks.instrument_registry import landed_folders, stores
from warehouse.connect import WarehouseBusy, WarehouseUnreadable, connect
from warehouse.location import Warehouse

BYTES_PER_ROW = 400
"""A generous bound on what one row costs on disk: Parquet (~10 B compressed), the DuckDB table, the cache."""
DISK_MARGIN_BYTES = 16 * 2**20
"""Room for a new DuckDB file, its write-ahead log, the cache and the report files."""


MAP_ENTRY_BYTES = 48
"""A bound on what one probability-map entry (an option and its probability) costs on disk while a run lands
and registers: in Parquet, in the DuckDB table and in registration's spill files (benchmarks/register_memory.py)."""


def disk_needed(rows: int, db_path: Path, map_entries: int = 0) -> int:
    """Bytes a run needs free: its rows, their ``map_entries`` probability-map entries (Parquet, table and
    registration's spill files), the margin, and room to rewrite the DuckDB file once (a checkpoint may write
    every block anew before the old ones are freed)."""
    existing = db_path.stat().st_size if db_path.is_file() else 0
    return rows * BYTES_PER_ROW + map_entries * MAP_ENTRY_BYTES + DISK_MARGIN_BYTES + existing


def _writable(directory: Path, what: str, rule: str) -> list[Problem]:
    """Can ``directory`` be written (or made)? Writes nothing that stays: the nearest existing folder is
    tried with a temporary file that is removed at once."""
    if directory.exists() and not directory.is_dir():
        return [Problem(str(directory), "", rule, f"{what} is a file, not a folder: give a folder")]
    existing = nearest_existing(directory)
    if not existing.is_dir():
        return [Problem(str(directory), "", rule, f"{what} cannot be made: {existing} is a file")]
    if (error := write_refusal(existing)) is not None:
        return [Problem(str(directory), "", rule, f"{what} is not writable ({error.strerror or error}): choose "
                                                  "another folder or fix its permissions")]
    return []


def warehouse_folders() -> tuple[str, ...]:
    """Folders a run writes in, checked when they exist; ``tooleval.duckdb.tmp`` holds registration's spill
    files."""
    return (*dict.fromkeys(landed_folders().values()), "registrations", "reports", "cache", "tooleval.duckdb.tmp")


def warehouse_files() -> tuple[str, ...]:
    """Files a run writes, checked when they exist: the DuckDB file and every instrument's result cache."""
    return ("tooleval.duckdb", "tooleval.duckdb.wal",
            *(f"cache/{store.cache_file}{end}" for store in stores().values() for end in ("", "-wal", "-shm")))


def _read_only(path: Path) -> str | None:
    """Why an existing file cannot be written, or None (access(2) also says so for a read-only mount)."""
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "it is on a read-only file system"
    except OSError:
        return None
    if not os.access(path, os.W_OK):
        return "no permission to write it"
    return None


def warehouse_writable(warehouse: Warehouse) -> list[Problem]:
    """The warehouse folder, and what a run writes inside it, can be written."""
    problems = _writable(warehouse.root, "the warehouse folder", "warehouse-writable")
    if problems or not warehouse.root.is_dir():
        return problems
    for name in warehouse_folders():
        folder = warehouse.root / name
        if folder.exists():
            problems += _writable(folder, f"the warehouse's {name}/ folder", "warehouse-writable")
    for name in warehouse_files():
        path = warehouse.root / name
        if path.is_file() and (why := _read_only(path)):
            problems.append(Problem(str(path), "", "warehouse-writable",
                                    f"a run writes this file but {why}: fix its permissions or give --warehouse DIR"))
    return problems


def check_before_run(prepared: PreparedRun, warehouse: Warehouse, starts_prefect_server: bool,
                     allow_provisional: bool = False) -> int:
    """Raise InputError listing every problem; return the number of rows the run plans. The instrument's own
    checks come last: they may take seconds (the surface instrument starts pinned MCP servers to list their tools)."""
    rows = prepared.planned_items
    problems: list[Problem] = []
    if rows == 0:
        problems.append(Problem(str(prepared.experiment.path), "", "run-has-work",
                                "the run plans no rows (an empty task-set version, or no seeds): nothing to measure"))
    problems += warehouse_writable(warehouse)
    if not problems and warehouse.db_path.exists():
        if not warehouse.db_path.is_file():
            problems.append(Problem(str(warehouse.db_path), "", "warehouse-readable", "not a file"))
        else:
            try:
                connect(warehouse.db_path, read_only=True, wait_s=0).close()
            except WarehouseBusy:
                pass  # held by a reader or another run: registration waits for it
            except WarehouseUnreadable as error:
                problems.append(Problem(str(warehouse.db_path), "", "warehouse-readable",
                                        f"not a DuckDB file this tooleval can open ({error}); move it away (it is "
                                        "rebuilt from nothing: earlier runs' Parquet rows stay in rows/) or give "
                                        "--warehouse DIR"))
    if not problems:
        free = shutil.disk_usage(nearest_existing(warehouse.root)).free
        entries = prepared.instrument.extra_disk_entries(prepared)
        needed = disk_needed(rows, warehouse.db_path, entries)
        if free < needed:
            maps = f" with {entries:,} probability-map entries" if entries else ""
            problems.append(Problem(str(warehouse.root), "", "disk-space",
                                    f"{free / 2**20:,.0f} MiB free, about {needed / 2**20:,.0f} MiB needed for "
                                    f"{rows:,} rows{maps} (landed, registered and spilled while registering): "
                                    "free some space or give --warehouse on another disk"))
    if starts_prefect_server:
        home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
        problems += [Problem(p.file, p.where, "prefect-home-writable",
                             p.message + " (PREFECT_HOME: the temporary Prefect server keeps its database there; "
                             "set PREFECT_HOME to a writable folder or PREFECT_API_URL to a running server)")
                     for p in _writable(home, "PREFECT_HOME", "prefect-home-writable")]
    if problems:
        raise InputError(problems)
    prepared.instrument.check_before_run(prepared, allow_provisional)
    return rows
