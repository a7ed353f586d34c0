"""What crashed runs leave behind, found and dealt with by the next run of any instrument (and reported):

- ``.tmp-*`` files under a landed table's folder (``rows/``, ``task_runs/``, ``task_calls/``) older than a
  few minutes: a Parquet partition whose writer died mid-write (a live writer's temporary file exists for
  milliseconds). Removed.
- ``run_id=X`` folders of a run that died before it saved its records (no ``run-records.json``) and whose
  process is gone: its completed work is in the cache, its Parquet can never be registered. Removed, with
  its ``registrations/X`` folder (owner mark, registered criteria). (A run that saved its records registers
  instead: tasks/run/deferred_registration.py.)
- a run registered in DuckDB but killed before its reports were written (before it was judged, or after
  its verdict was saved): judged (or its saved verdict kept) and published now.
- scratch folders in the temporary folder named after a process that is gone (an MCP surface's server state
  folders, ``tooleval-mcp-<pid>-...``: tasks/files/owned_folders.py): removed, also while another process
  holds the DuckDB file.

A run marks itself live with ``registrations/<run_id>/owner.json`` (pid and host) before its first model
call, so a concurrent run's folders are never taken for leftovers; a run registered in any instrument's
run table is never one.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from tasks.files.atomic_write import write_atomic
from tasks.files.owned_folders import RemovedFolders, owner_gone, remove_orphaned_folders
from tasks.instrument_registry import landed_folders
from tasks.report.publish import judge_and_publish
from tasks.run.deferred_registration import LateRegistration, register_waiting_runs, registered_run_ids
from warehouse.connect import WarehouseBusy
from warehouse.location import Warehouse
from warehouse.register_run import RUN_RECORDS_FILE

OWNER_FILE = "owner.json"
STALE_TEMPORARY_S = 600.0


@dataclass
class Leftovers:
    temporary_files: int = 0
    removed_runs: list[str] = field(default_factory=list)
    published_runs: list[str] = field(default_factory=list)
    removed_records: list[str] = field(default_factory=list)
    """``registrations/X`` folders of dead runs that landed no rows and saved no records."""
    scratch: RemovedFolders = field(default_factory=lambda: RemovedFolders((), 0))
    """Scratch folders (MCP server state) of processes that are gone."""

    def lines(self) -> list[str]:
        out = []
        if self.temporary_files:
            out.append(f"removed {self.temporary_files} half-written Parquet file(s) left by a crashed run")
        for run_id in self.removed_runs:
            out.append(f"removed the unregistrable rows of run {run_id}, which died before saving its records "
                       "(its completed work stays in the cache)")
        for run_id in self.published_runs:
            out.append(f"judged and published run {run_id}, which was registered but died before its report")
        if self.removed_records:
            out.append(f"removed the records of {len(self.removed_records)} run(s) that died before landing any "
                       f"row: {', '.join(self.removed_records)}")
        return out + self.scratch.lines()


def mark_owner(warehouse: Warehouse, run_id: str) -> Path:
    """Record that this process owns ``run_id`` while it runs."""
    directory = warehouse.registrations_dir / run_id
    directory.mkdir(parents=True, exist_ok=True)
    return write_atomic(directory / OWNER_FILE, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                                            "started": time.time()}))


def _alive(owner: Path) -> bool:
    """Is the run's process still running? Unknown owners (another host, unreadable) count as alive."""
    try:
        record = json.loads(owner.read_text())
    except (OSError, ValueError):
        return False
    if record.get("host") != socket.gethostname():
        return True
    try:
        return not owner_gone(int(record["pid"]), 0)
    except (KeyError, ValueError):
        return True


def _owner_gone(records: Path, now: float) -> bool:
    """Is the run that owns ``registrations/<run_id>`` dead? A folder whose owner mark is missing counts as
    dead only once it is older than a live run's first moments (it marks itself first thing)."""
    owner = records / OWNER_FILE
    if owner.is_file():
        return not _alive(owner)
    try:
        return now - records.stat().st_mtime > STALE_TEMPORARY_S
    except FileNotFoundError:
        return False


def published(warehouse: Warehouse, run_id: str) -> bool:
    """Were the run's reports written (the last thing a run does with its own data)?"""
    from tasks.report.render import report_files

    return all(path.is_file() for path in report_files(warehouse.reports_dir / run_id).values())


def only_this_run(warehouse: Warehouse, run_id: str) -> bool:
    """Are the landed rows, temporary files and saved records in the warehouse all ``run_id``'s (nothing of
    another run to register, finish or clean)?"""
    runs: set[str] = set()
    for folder in (warehouse.root / name for name in landed_folders().values()):
        if folder.is_dir():
            if next(folder.rglob(".tmp-*"), None) is not None:
                return False
            runs.update(run_folder.name.removeprefix("run_id=") for run_folder in folder.glob("run_id=*"))
    if warehouse.registrations_dir.is_dir():
        runs.update(records.name for records in warehouse.registrations_dir.iterdir())
    return runs <= {run_id}


def clean_leftovers(warehouse: Warehouse, registered: set[str], own_run_id: str | None = None,
                    now: float | None = None) -> Leftovers:
    """Remove or finish what crashed runs left; ``registered`` are the run ids DuckDB holds (every instrument's)."""
    now = time.time() if now is None else now
    found = Leftovers()
    folders = [warehouse.root / folder for folder in landed_folders().values()]
    landed: dict[str, list[Path]] = {}
    for folder in (f for f in folders if f.is_dir()):
        for temporary in folder.rglob(".tmp-*"):
            try:
                if now - temporary.stat().st_mtime > STALE_TEMPORARY_S:
                    temporary.unlink()
                    found.temporary_files += 1
            except FileNotFoundError:
                pass
        for run_folder in folder.glob("run_id=*"):
            landed.setdefault(run_folder.name.removeprefix("run_id="), []).append(run_folder)
    for run_id, run_folders in sorted(landed.items()):
        records = warehouse.registrations_dir / run_id
        if run_id == own_run_id or run_id in registered or (records / RUN_RECORDS_FILE).is_file():
            continue
        if not _owner_gone(records, now):
            continue
        for run_folder in run_folders:
            shutil.rmtree(run_folder, ignore_errors=True)
        shutil.rmtree(records, ignore_errors=True)
        found.removed_runs.append(run_id)
    if warehouse.registrations_dir.is_dir():
        for records in sorted(warehouse.registrations_dir.iterdir()):
            run_id = records.name
            if (not records.is_dir() or run_id == own_run_id or run_id in registered or run_id in landed
                    or (records / RUN_RECORDS_FILE).is_file() or not _owner_gone(records, now)):
                continue
            shutil.rmtree(records, ignore_errors=True)
            found.removed_records.append(run_id)
    for run_id in sorted(registered - {own_run_id}):
        records = warehouse.registrations_dir / run_id
        # only runs a flow registered (their records are saved) and whose process is gone: a run registered
        # by other means (a benchmark) is not ours to publish, a live one publishes itself
        if published(warehouse, run_id) or not (records / RUN_RECORDS_FILE).is_file() or not _owner_gone(records, now):
            continue
        judge_and_publish(warehouse, run_id)  # judged again on the same rows and registered criteria
        found.published_runs.append(run_id)
    return found


def tidy_after_run(warehouse: Warehouse, run_id: str) -> tuple[list[LateRegistration], Leftovers]:
    """After a run registered: register earlier runs that landed without registering, then clean what
    crashed runs left. Skipped quietly while another process holds the DuckDB file (the next run retries),
    and without opening it when the warehouse holds no other run's files."""
    if only_this_run(warehouse, run_id):
        return [], Leftovers(scratch=remove_orphaned_folders())
    late = register_waiting_runs(warehouse, wait_s=0)
    scratch = remove_orphaned_folders()
    try:
        registered = registered_run_ids(warehouse, wait_s=0)
    except WarehouseBusy:
        return late, Leftovers(scratch=scratch)
    found = clean_leftovers(warehouse, registered, own_run_id=run_id)
    found.scratch = scratch
    return late, found
