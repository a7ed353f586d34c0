"""What crashed runs leave behind, found and dealt with by the next run (and reported):

- ``.tmp-*`` files under ``rows/`` older than a few minutes: a Parquet partition whose writer died mid-write
  (a live writer's temporary file exists for milliseconds). Removed.
- ``rows/run_id=X`` folders of a run that died before it saved its records (no ``run-records.json``) and
  whose process is gone: its completed selections are in the cache, its Parquet can never be registered.
  Removed. (A run that saved its records registers instead: tasks/run/deferred_registration.py.)
- a run registered in DuckDB but killed before it was judged and published: judged and published now.

A run marks itself live with ``registrations/<run_id>/owner.json`` (pid and host) before it selects, so a
concurrent run's folders are never taken for leftovers.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from tasks.experiment.criteria import read_registration
from tasks.files.atomic_write import write_atomic
from tasks.report.publish import VERDICT_FILE, judge_and_publish
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

    def lines(self) -> list[str]:
        out = []
        if self.temporary_files:
            out.append(f"removed {self.temporary_files} half-written Parquet file(s) left by a crashed run")
        for run_id in self.removed_runs:
            out.append(f"removed the unregistrable rows of run {run_id}, which died before saving its records "
                       "(its completed selections stay in the cache)")
        for run_id in self.published_runs:
            out.append(f"judged and published run {run_id}, which was registered but died before its report")
        return out


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
        os.kill(int(record["pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, KeyError, ValueError):
        return True
    return True


def clean_leftovers(warehouse: Warehouse, registered: set[str], own_run_id: str | None = None,
                    now: float | None = None) -> Leftovers:
    """Remove or finish what crashed runs left; ``registered`` are the run ids DuckDB holds."""
    now = time.time() if now is None else now
    found = Leftovers()
    if warehouse.rows_dir.is_dir():
        for temporary in warehouse.rows_dir.rglob(".tmp-*"):
            try:
                if now - temporary.stat().st_mtime > STALE_TEMPORARY_S:
                    temporary.unlink()
                    found.temporary_files += 1
            except FileNotFoundError:
                pass
        for folder in sorted(warehouse.rows_dir.glob("run_id=*")):
            run_id = folder.name.removeprefix("run_id=")
            records = warehouse.registrations_dir / run_id
            if run_id == own_run_id or run_id in registered or (records / RUN_RECORDS_FILE).is_file():
                continue
            if _alive(records / OWNER_FILE):
                continue
            shutil.rmtree(folder, ignore_errors=True)
            found.removed_runs.append(run_id)
    for run_id in sorted(registered - {own_run_id}):
        criteria_registered = read_registration(warehouse.registrations_dir, run_id) is not None
        if criteria_registered and not (warehouse.registrations_dir / run_id / VERDICT_FILE).is_file():
            judge_and_publish(warehouse, run_id)
            found.published_runs.append(run_id)
    return found


def tidy_after_run(warehouse: Warehouse, run_id: str) -> tuple[list[LateRegistration], Leftovers]:
    """After a run registered: register earlier runs that landed without registering, then clean what
    crashed runs left. Skipped quietly while another process holds the DuckDB file (the next run retries)."""
    late = register_waiting_runs(warehouse, wait_s=0)
    try:
        registered = registered_run_ids(warehouse, wait_s=0)
    except WarehouseBusy:
        return late, Leftovers()
    return late, clean_leftovers(warehouse, registered, own_run_id=run_id)
