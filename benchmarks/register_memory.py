"""Registration memory: peak RSS of registering one large selection run whose every row carries a
probability map (the MetaTool hold-out's shape: 18,457 requests x 3 arms x 3 seeds, 200 options).

    python benchmarks/register_memory.py [--requests 19000] [--options 200] [--workdir DIR] [--keep]
        [--twice]

1. Lands ``--requests`` x 3 arms x 3 seeds rows (default 171,000) with ``--options``-entry probability maps
   under ``WORKDIR/rows`` with the project's own writer (tests/factories/large_run.py), unless that run is
   already there (``--workdir`` + ``--keep`` reuse it).
2. Registers it with ``warehouse.register_run.register_run`` into a new ``WORKDIR/tooleval.duckdb``, in a
   child process (so its peak RSS is registration's alone), and with ``--twice`` registers it again (the
   transaction then first deletes the run's earlier rows).
Prints rows, Parquet MB, seconds, the child's peak RSS (getrusage ru_maxrss), the DuckDB file's size, the
largest the spill folder grew to, and the load average beside them. Not a timed test: a figure to read.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUN_ID = "register-memory"

CHILD = """
import json, resource, sys, threading, time
from datetime import datetime, timezone
from pathlib import Path
from schemas.selection.rows import SelectionRunRecord
from warehouse.register_run import RunRegistration, register_run

root, run_id, times = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
now = datetime.now(timezone.utc)
run = SelectionRunRecord(run_id=run_id, experiment="e", experiment_path="e.yaml", experiment_hash="h", taskset="t",
                         started_at=now, finished_at=now, n_rows=0, criteria_hash=None, criteria_registered_at=None,
                         weights_window=None, tooleval_version="benchmark")
spill = {"max": 0}
def watch():
    while True:
        size = 0
        for p in (root / "tooleval.duckdb.tmp").glob("*"):
            try:
                size += p.stat().st_size
            except OSError:
                pass
        spill["max"] = max(spill["max"], size)
        time.sleep(0.2)
threading.Thread(target=watch, daemon=True).start()
results = []
for _ in range(times):
    started = time.perf_counter()
    n = register_run(root, RunRegistration("selection", {"runs": [run]}))
    results.append({"rows": n, "seconds": time.perf_counter() - started,
                    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
print(json.dumps({"results": results, "spill_mb": spill["max"] / 2**20}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=19_000)
    parser.add_argument("--options", type=int, default=200)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the work folder (and reuse its landed run)")
    parser.add_argument("--twice", action="store_true", help="register the same run a second time")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="register-memory-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        rows_dir = workdir / "rows"
        if not (rows_dir / f"run_id={RUN_ID}").is_dir():
            from tests.factories.large_run import land_large_run
            started = time.perf_counter()
            landed = land_large_run(rows_dir, RUN_ID, args.requests, n_options=args.options)
            print(f"landed {landed:,} rows in {time.perf_counter() - started:.1f} s", flush=True)
        parquet_mb = sum(p.stat().st_size for p in rows_dir.rglob("*.parquet")) / 2**20
        for stale in (workdir / "tooleval.duckdb", workdir / "tooleval.duckdb.wal"):
            stale.unlink(missing_ok=True)
        started = time.perf_counter()
        child = subprocess.run([sys.executable, "-c", CHILD, str(workdir), RUN_ID, "2" if args.twice else "1"],
                               cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
        if child.returncode != 0:
            print(child.stderr[-3000:], file=sys.stderr)
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            print(f"registration FAILED (exit {child.returncode}) after {time.perf_counter() - started:.1f} s; "
                  f"Parquet {parquet_mb:,.0f} MB, peak RSS {peak:,.0f} MB")
            return 1
        report = json.loads(child.stdout.strip().splitlines()[-1])
        db_mb = (workdir / "tooleval.duckdb").stat().st_size / 2**20
        for i, result in enumerate(report["results"], start=1):
            print(f"registration {i}: {result['rows']:,} rows, {args.options} options, Parquet {parquet_mb:,.0f} MB, "
                  f"{result['seconds']:.1f} s, peak RSS {result['peak_rss_mb']:,.0f} MB")
        print(f"DuckDB file {db_mb:,.0f} MB; spill files at most {report['spill_mb']:,.0f} MB; "
              f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
