"""Where a warehouse keeps tasks done on a tool surface: two Parquet tables and the per-task cache."""

from __future__ import annotations

from pathlib import Path

from warehouse.location import Warehouse


def task_runs_dir(warehouse: Warehouse) -> Path:
    """Parquet of ``task_runs``: run_id=/arm=/seed=/part-*.parquet, one file per work unit."""
    return warehouse.root / "task_runs"


def task_calls_dir(warehouse: Warehouse) -> Path:
    """Parquet of ``task_calls``, partitioned like ``task_runs``."""
    return warehouse.root / "task_calls"


def task_cache_path(warehouse: Warehouse) -> Path:
    """The per-task outcome cache (SQLite)."""
    return warehouse.root / "cache" / "task_outcomes.sqlite"
