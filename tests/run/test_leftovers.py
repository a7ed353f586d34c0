"""Crash leftovers: stale temporary files and unregistrable rows are removed, live runs are left alone."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

from tasks.run.leftovers import OWNER_FILE, clean_leftovers, mark_owner
from warehouse.location import Warehouse


def make_rows(warehouse: Warehouse, run_id: str) -> None:
    part = warehouse.rows_dir / f"run_id={run_id}" / "arm=a" / "seed=1"
    part.mkdir(parents=True)
    (part / "part-00000.parquet").write_bytes(b"x")


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_temporaries_and_dead_runs_go_live_and_registered_runs_stay(tmp_path):
    warehouse = Warehouse(tmp_path)
    for run_id in ("dead", "live", "registered", "saved"):
        make_rows(warehouse, run_id)
    mark_owner(warehouse, "live")  # this process: alive
    dead_owner = warehouse.registrations_dir / "dead" / OWNER_FILE
    dead_owner.parent.mkdir(parents=True)
    dead_owner.write_text(json.dumps({"pid": dead_pid(), "host": socket.gethostname()}))
    (warehouse.registrations_dir / "saved").mkdir(parents=True)
    (warehouse.registrations_dir / "saved" / "run-records.json").write_text("{}")  # registers instead
    stale = warehouse.rows_dir / "run_id=live" / "arm=a" / "seed=1" / ".tmp-abc-part-00001.parquet"
    fresh = stale.with_name(".tmp-def-part-00002.parquet")
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")
    os.utime(stale, (0, 0))

    found = clean_leftovers(warehouse, registered={"registered"})

    assert found.removed_runs == ["dead"] and found.temporary_files == 1
    assert not (warehouse.rows_dir / "run_id=dead").exists() and not stale.exists() and fresh.exists()
    for kept in ("live", "registered", "saved"):
        assert (warehouse.rows_dir / f"run_id={kept}").is_dir()
    assert any("died before saving its records" in line for line in found.lines())
