"""How long `tooleval sql` holds the warehouse file to take its snapshot, against the file's size.

A run registering while an analyst's session starts waits at most this long (it retries the file every
0.1-2 s, warehouse/connect.py). Builds a warehouse of N synthetic selection rows (the project's tables,
realistic columns), then takes the snapshot R times and reports the median and largest hold:

    PYTHONPATH=. .venv/bin/python benchmarks/sql_snapshot.py --rows 1000000 --repeats 5
    PYTHONPATH=. .venv/bin/python benchmarks/sql_snapshot.py --db warehouse/tooleval.duckdb   # an existing file
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from warehouse.snapshot import take_snapshot
from warehouse.tables import create_tables
from warehouse.views import create_views

SYNTHETIC = """
INSERT INTO landed_rows BY NAME
SELECT 'run' || (i // 50000) AS run_id, 'bench' AS experiment, 'arm' || (i % 4) AS arm, 1 + i % 4 AS rung,
       1 + (i // 4) % 3 AS seed, 'bench' AS taskset, 'v1' AS taskset_version, 'r' || (i // 12) AS request_id,
       CASE WHEN i % 5 = 0 THEN 'new_tools' ELSE 'existing' END AS slice, 'adjudicated' AS label_status,
       'c' AS catalogue, 'ts' AS tool_set_id, 30 AS n_tools, 'tool_' || (i % 31) AS expected,
       'tool_' || ((i * 7) % 31) AS chosen, (i * 7) % 31 = i % 31 AS correct,
       CASE WHEN (i * 7) % 31 = i % 31 THEN 'correct' ELSE 'wrong_tool' END AS outcome,
       false AS invalid, false AS error, false AS empty, random() * 50 AS latency_ms, 'bm25-okapi' AS model_id,
       'lexical' AS selector, 'default' AS prompt, false AS cache_hit, 0 AS retries, random() AS confidence
FROM range(?) t(i)
"""


def build(path: Path, rows: int) -> None:
    con = duckdb.connect(str(path))
    create_tables(con)
    create_views(con)
    con.execute(SYNTHETIC, [rows])
    con.execute("CHECKPOINT")
    con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--db", type=Path, default=None, help="measure this file instead of building one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tooleval-bench-") as work:
        db = args.db
        if db is None:
            db = Path(work) / "tooleval.duckdb"
            started = time.monotonic()
            build(db, args.rows)
            print(f"built {args.rows:,} rows in {time.monotonic() - started:.1f} s")
        holds = []
        for n in range(args.repeats):
            target = Path(work) / f"snap{n}"
            target.mkdir()
            snapshot = take_snapshot(db, target)
            holds.append(snapshot.held_s)
            (target / db.name).unlink()
        size = db.stat().st_size / 1e6
        print(f"{db}: {size:,.1f} MB; file held to copy it: median {statistics.median(holds) * 1000:.0f} ms, "
              f"largest {max(holds) * 1000:.0f} ms over {args.repeats} snapshots")


if __name__ == "__main__":
    main()
