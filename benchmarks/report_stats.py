"""Speed of the statistics behind the report and the gates: figures (views + intervals + paired tests +
bootstraps), the verdict, and the three renderings, on one run.

    python benchmarks/report_stats.py [--requests 540 5000 20000] [--warehouse DIR [--run RUN_ID]]

For each ``--requests`` N: one synthetic run (``benchmarks/synthetic.py``: the support ladder's 4 arms x
3 seeds x N requests, ~80% correct) in a fresh .duckdb file, the ladder's comparisons, weights and arms;
then, best of ``--repeats``: ``load_figures`` (every view the report reads, the clustered intervals,
paired changes with 2,000-resample request bootstraps, weighted contributions, calibration, positions),
``judge`` with the bundled criteria, ``build_report_from``, and the terminal / markdown / HTML renderings.
``--warehouse`` times the same on a real warehouse's run (default: its latest). Prints seconds and the
load average.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from tasks.report.terminal import Terminal  # noqa: E402
from synthetic import LADDER, ladder_tools, selection_row_batches, warehouse_records  # noqa: E402

from schemas.arrow import to_arrow_table  # noqa: E402
from schemas.selection.rows import SelectionArmRecord  # noqa: E402
from tasks.experiment.criteria import load_criteria  # noqa: E402
from tasks.selection.figures import load_figures  # noqa: E402
from tasks.report.judge import judge  # noqa: E402
from tasks.report.publish import open_read_only  # noqa: E402
from tasks.report.render import render_html, render_markdown, render_terminal  # noqa: E402
from tasks.selection.tables import build_report_from  # noqa: E402
from tasks.report.publish import latest_runs  # noqa: E402
from tasks.selection.gates import JUDGES  # noqa: E402
from schemas.selection.criteria import SelectionCriteria  # noqa: E402
from warehouse.connect import connect  # noqa: E402
from warehouse.tables import tables  # noqa: E402

CRITERIA = ROOT / "tasksets" / "support" / "experiments" / "criteria.yaml"


def synthetic_warehouse(directory: Path, n_requests: int) -> tuple[Path, str]:
    db = directory / f"bench-{n_requests}.duckdb"
    con = connect(db)
    run_id = None
    for table in selection_row_batches(n_requests * len(LADDER) * 3, 1, seed=1):
        con.register("_rows", table)
        con.execute("INSERT INTO landed_rows BY NAME SELECT * FROM _rows")
        con.unregister("_rows")
        run_id = table.column("run_id")[0].as_py()
    records = warehouse_records(1)
    names, widths = ladder_tools()
    records["arms"] = [SelectionArmRecord(run_id=run_id, arm=arm, rung=i + 1, catalogue=catalogue, catalogue_hash=catalogue,
                                 prompt="default", prompt_hash="p", model_id="m", selector="lexical",
                                 taskset_version="v1", taskset_hash="t", n_tools=widths[i], seeds=[1, 2, 3])
                       for i, (arm, catalogue) in enumerate(LADDER)]
    for table, items in records.items():
        if table == "runs":
            items = [r.model_copy(update={"run_id": run_id}) for r in items]
        if table == "comparisons":
            items = [r.model_copy(update={"run_id": run_id}) for r in items]
        arrow: pa.Table = to_arrow_table(tables()[table], [r.model_dump() for r in items])
        con.register("_incoming", arrow)
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
        con.unregister("_incoming")
    n = con.execute("SELECT count(*) FROM landed_rows").fetchall()[0][0]
    con.close()
    print(f"  synthetic run {run_id}: {n:,} rows ({n_requests:,} requests x 4 arms x 3 seeds)")
    return db, run_id


def best(repeats: int, work) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return min(times), result


def time_run(db: Path, run_id: str | None, repeats: int) -> None:
    con = open_read_only(db)
    run_id = run_id or latest_runs(con, "selection")[0]
    criteria = load_criteria(CRITERIA, SelectionCriteria)
    t_fig, figures = best(repeats, lambda: load_figures(con, run_id))
    t_judge, verdict = best(repeats, lambda: judge(figures, criteria, JUDGES))
    t_build, report = best(repeats, lambda: build_report_from(figures, verdict))
    t_term, _ = best(repeats, lambda: render_terminal(report, Terminal(file=io.StringIO(), width=100, colour=True)))
    t_md, _ = best(repeats, lambda: render_markdown(report))
    t_html, html = best(repeats, lambda: render_html(report))
    con.close()
    print(f"  load_figures {t_fig:6.2f} s | judge {t_judge:5.3f} s | tables {t_build:5.3f} s | terminal "
          f"{t_term:5.3f} s | markdown {t_md:5.3f} s | html {t_html:5.3f} s ({len(html) / 1e3:,.0f} kB) | "
          f"verdict {verdict.status}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, nargs="*", default=[540, 5000, 20000])
    parser.add_argument("--warehouse", type=Path, default=None)
    parser.add_argument("--run", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    if args.warehouse:
        print(f"warehouse {args.warehouse}")
        time_run(args.warehouse / "tooleval.duckdb", args.run, args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.requests:
            db, run_id = synthetic_warehouse(Path(tmp), n)
            time_run(db, run_id, args.repeats)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
