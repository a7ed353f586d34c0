"""The preflight counts what a run with probability maps needs on disk: registration's memory is
bounded whatever the run's size, so the one figure that grows is disk (landed Parquet, the DuckDB table and
the spill files DuckDB writes while registering), and a run is refused before it selects when it does not fit."""

from __future__ import annotations

import shutil
from collections import namedtuple
from pathlib import Path

import pytest

from tasks.files.input_errors import InputError
from tasks.run.prepare_run import prepare_run
from tasks.run.preflight import MAP_ENTRY_BYTES, check_before_run, disk_needed
from warehouse.location import Warehouse

ROOT = Path(__file__).resolve().parents[2]
LADDER = ROOT / "tasksets" / "support" / "experiments" / "ladder.yaml"
OFFICE = ROOT / "tasksets" / "mcp_office" / "experiments" / "four_arms.yaml"


def test_each_probability_map_entry_adds_its_bytes(tmp_path):
    db = tmp_path / "tooleval.duckdb"
    assert disk_needed(1_000, db, map_entries=200_000) - disk_needed(1_000, db) == 200_000 * MAP_ENTRY_BYTES
    # a MetaTool hold-out run: 166,113 rows x 200 entries -> about 1.5 GiB beside the rows
    assert 1.4 * 2**30 < disk_needed(166_113, db, 166_113 * 200) < 1.7 * 2**30


def test_entries_are_one_per_offered_option_and_none_for_every_row():
    ladder = prepare_run(LADDER, checked=False)
    # 540 requests x 3 seeds on rungs of 18, 22, 26 and 30 tools, each map also holding 'none'
    assert ladder.instrument.extra_disk_entries(ladder) == 540 * 3 * (19 + 23 + 27 + 31)
    office = prepare_run(OFFICE, checked=False)
    assert office.instrument.extra_disk_entries(office) == 0  # tasks on a surface land no maps


def test_a_run_whose_maps_do_not_fit_is_refused_before_it_selects(tmp_path, monkeypatch):
    prepared = prepare_run(LADDER, checked=False)
    rows, entries = prepared.planned_items, prepared.instrument.extra_disk_entries(prepared)
    free = disk_needed(rows, tmp_path / "tooleval.duckdb", entries) - 1
    assert free > disk_needed(rows, tmp_path / "tooleval.duckdb")  # enough for the rows alone
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(free * 2, free, free))
    with pytest.raises(InputError) as refused:
        check_before_run(prepared, Warehouse(tmp_path / "warehouse"), starts_prefect_server=False)
    (problem,) = [p for p in refused.value.problems if p.rule == "disk-space"]
    assert f"{entries:,} probability-map entries" in problem.message and "spilled" in problem.message
