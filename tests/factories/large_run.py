"""A large landed selection run, as the flow lands it: one Parquet file per (arm, seed, batch) written by
warehouse/parquet_store.py, every row carrying a probability map over the offered options (MetaTool's
hold-out offers 199 tools and 'none', 200 options). Used by the registration test at scale and by
benchmarks/register_memory.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from schemas.arrow import arrow_schema, to_arrow_table
from schemas.selection.rows import SelectionRow
from tests.factories.rows import selection_row
from warehouse.parquet_store import write_partition


def option_names(n_options: int) -> list[str]:
    """MetaTool-like tool names (and 'none'), 200 by default."""
    return [f"tool_{i:03d}_Finder" for i in range(n_options - 1)] + ["none"]


def _probability_maps(rng: np.random.Generator, n_rows: int, keys: pa.Array) -> pa.MapArray:
    """A probability map per row over every option: random weights normalised to sum to 1 (full-mantissa
    floats that compress like a real router's)."""
    n_options = len(keys)
    weights = rng.random((n_rows, n_options))
    weights /= weights.sum(axis=1, keepdims=True)
    offsets = pa.array(np.arange(0, (n_rows + 1) * n_options, n_options, dtype=np.int32))
    map_type = arrow_schema(SelectionRow).field("probabilities").type
    return pa.MapArray.from_arrays(offsets, pa.concat_arrays([keys] * n_rows), pa.array(weights.ravel()),
                                   type=map_type)


def land_large_run(rows_dir: Path, run_id: str, n_requests: int, arms: tuple[str, ...] = ("a", "b", "c"),
                   seeds: tuple[int, ...] = (1, 2, 3), n_options: int = 200, batch_size: int = 200,
                   random_seed: int = 28) -> int:
    """Land ``n_requests`` x arms x seeds rows under ``rows_dir`` (the warehouse's rows/ folder); returns the
    number of rows landed."""
    rng = np.random.default_rng(random_seed)
    names = option_names(n_options)
    keys = pa.array(names)
    landed = 0
    for rung, arm in enumerate(arms, start=1):
        for seed in seeds:
            for batch_index, start in enumerate(range(0, n_requests, batch_size)):
                ids = range(start, min(start + batch_size, n_requests))
                rows = [selection_row(f"q{i:06d}", names[i % (n_options - 1)], (i + seed) % 5 != 0, run_id=run_id,
                                      arm=arm, rung=rung, seed=seed, n_tools=n_options - 1, confidence=0.5)
                        for i in ids]
                table = to_arrow_table(SelectionRow, rows)
                column = table.schema.get_field_index("probabilities")
                table = table.set_column(column, table.schema.field(column),
                                         _probability_maps(rng, len(rows), keys))
                write_partition(rows_dir, run_id, arm, seed, batch_index, table)
                landed += len(rows)
    return landed
