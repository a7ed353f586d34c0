"""Crash leftovers: stale temporary files and unregistrable rows are removed, live runs are left alone."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

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


def mark_dead(warehouse: Warehouse, run_id: str) -> None:
    owner = warehouse.registrations_dir / run_id / OWNER_FILE
    owner.parent.mkdir(parents=True, exist_ok=True)
    owner.write_text(json.dumps({"pid": dead_pid(), "host": socket.gethostname()}))


def test_records_of_dead_runs_that_landed_nothing_go_and_live_or_fresh_ones_stay(tmp_path):
    warehouse = Warehouse(tmp_path)
    mark_dead(warehouse, "died-early")  # killed before its first unit landed: an owner mark, criteria, no rows
    (warehouse.registrations_dir / "died-early" / "criteria.yaml").write_text("name: x\n")
    mark_owner(warehouse, "running")
    (warehouse.registrations_dir / "unmarked-new").mkdir()  # a run between mkdir and its owner mark
    found = clean_leftovers(warehouse, registered=set())
    assert found.removed_records == ["died-early"] and not (warehouse.registrations_dir / "died-early").exists()
    assert (warehouse.registrations_dir / "running").is_dir() and (warehouse.registrations_dir / "unmarked-new").is_dir()
    later = clean_leftovers(warehouse, registered=set(), now=time.time() + 3600)  # past a live run's first moments
    assert later.removed_records == ["unmarked-new"] and (warehouse.registrations_dir / "running").is_dir()


def test_registered_runs_without_reports_are_published_when_their_process_is_gone(tmp_path, monkeypatch):
    import tasks.run.leftovers as leftovers

    warehouse = Warehouse(tmp_path)
    published = []
    monkeypatch.setattr(leftovers, "judge_and_publish", lambda wh, run_id: published.append(run_id))
    for run_id in ("killed-before-report", "killed-after-verdict", "live", "reported", "benchmark"):
        (warehouse.registrations_dir / run_id).mkdir(parents=True)
        if run_id != "benchmark":  # registered by other means: no saved records, not ours to publish
            (warehouse.registrations_dir / run_id / "run-records.json").write_text("{}")
        mark_owner(warehouse, run_id) if run_id == "live" else mark_dead(warehouse, run_id)
    (warehouse.registrations_dir / "killed-after-verdict" / "verdict.json").write_text("{}")
    for name in ("report.md", "report.html"):
        (warehouse.reports_dir / "reported").mkdir(parents=True, exist_ok=True)
        (warehouse.reports_dir / "reported" / name).write_text("x")
    (warehouse.reports_dir / "killed-after-verdict").mkdir(parents=True)
    (warehouse.reports_dir / "killed-after-verdict" / "report.html").write_text("x")  # the markdown never came

    found = clean_leftovers(warehouse, registered={"killed-before-report", "killed-after-verdict", "live",
                                                   "reported", "benchmark"})

    assert published == ["killed-after-verdict", "killed-before-report"] == found.published_runs
    assert all("died before its report" in line for line in found.lines())


def test_a_warehouse_that_holds_only_this_run_needs_no_tidying(tmp_path):
    from tasks.run.leftovers import only_this_run

    warehouse = Warehouse(tmp_path)
    assert only_this_run(warehouse, "mine")  # nothing at all yet
    make_rows(warehouse, "mine")
    mark_owner(warehouse, "mine")
    assert only_this_run(warehouse, "mine")
    temporary = warehouse.rows_dir / "run_id=mine" / "arm=a" / "seed=1" / ".tmp-abc-part-00001.parquet"
    temporary.write_bytes(b"x")
    assert not only_this_run(warehouse, "mine")  # a temporary file may be stale: cleaned by the tidying
    temporary.unlink()
    make_rows(warehouse, "earlier")
    assert not only_this_run(warehouse, "mine")  # another run's rows: registered or cleaned by the tidying
    other = Warehouse(tmp_path / "other")
    (other.registrations_dir / "waiting").mkdir(parents=True)
    assert not only_this_run(other, "mine")  # another run's saved records
