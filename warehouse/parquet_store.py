"""Parquet landing: one file per (run, arm, seed, batch), written atomically, named deterministically.

A crash leaves at most a hidden ``.tmp-*`` file that no reader globs; rewriting a batch replaces its
file whole, so a landed row is never lost or duplicated. Any number of processes may land at once.
pyarrow is imported by the writer, when a batch lands, not by this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tasks.drill_points import check_space
from tasks.files.atomic_write import write_atomic

if TYPE_CHECKING:
    import pyarrow as pa


def partition_dir(rows_dir: Path, run_id: str, arm: str, seed: int) -> Path:
    return Path(rows_dir) / f"run_id={run_id}" / f"arm={arm}" / f"seed={seed}"


def write_partition(rows_dir: Path, run_id: str, arm: str, seed: int, batch_index: int, table: pa.Table) -> Path:
    import pyarrow.parquet as pq

    directory = partition_dir(rows_dir, run_id, arm, seed)
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"part-{batch_index:05d}.parquet"
    check_space(final)  # the failure drill's full disk (tasks/drill_points.py); nothing otherwise
    return write_atomic(final, lambda temporary: pq.write_table(table, temporary, compression="zstd"))


def run_files(rows_dir: Path, run_id: str) -> list[Path]:
    """The landed Parquet files of a run (never the temporary ones)."""
    root = Path(rows_dir) / f"run_id={run_id}"
    return sorted(root.glob("arm=*/seed=*/part-*.parquet"))
