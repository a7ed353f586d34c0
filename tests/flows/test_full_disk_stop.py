"""A disk that fills mid-run used to let every remaining unit run, fail to land, be retried twice and fail
again (minutes of progress lines with a growing ETA, an ERROR record a unit) before exit 6. The run now stops
at the first failed write: no other unit starts, one line says what (the disk is full), where (the file) and
what to do, exit 6; the rows landed stay and the rerun resumes from the cache, nothing lost or duplicated.

The disk fills through the failure drill's hook (``TOOLEVAL_DRILL_DISK_FULL_AFTER``, tasks/drill_points.py):
from the third landed unit on, every landing fails with ENOSPC, as on a full disk (the drill,
benchmarks/failure_drill.py, fills a real tmpfs where root may mount one)."""

from __future__ import annotations

from flows.evaluate import MAX_WORKERS
from flows.exit_codes import EXIT_CRASHED
from tests.drill.harness import FINISHED, census, cli_env, drill_experiment, run_id_of, tooleval

LANDED_BEFORE = 3


def test_a_full_disk_stops_the_run_at_its_first_failed_write_with_one_line_and_the_rerun_resumes(tmp_path):
    experiment = drill_experiment(tmp_path / "shop")
    warehouse = tmp_path / "wh"
    args = ["run", str(experiment.path), "--warehouse", str(warehouse)]
    full = tooleval(args, cli_env(tmp_path / "prefect", TOOLEVAL_DRILL_DISK_FULL_AFTER=f"unit-landed:{LANDED_BEFORE}"),
                    tmp_path, "full", timeout=600)
    assert full.returncode == EXIT_CRASHED, full.stderr[-2000:]
    said = [line for line in full.stderr.splitlines() if line.startswith("tooleval:")]
    assert len(said) == 1 and said[0].startswith("tooleval: stopped: the disk is full"), full.stderr[-2000:]
    assert ".parquet" in said[0] and "free space" in said[0] and "rerun" in said[0]
    assert "ERROR" not in full.output and "Traceback" not in full.output
    landed = list((warehouse / "rows").rglob("part-*.parquet"))
    # no unit started after the failed write: at most the ones already running beside it landed
    assert LANDED_BEFORE <= len(landed) < LANDED_BEFORE + MAX_WORKERS
    assert experiment.units > 4 * (LANDED_BEFORE + MAX_WORKERS)  # many units were left: they did not run

    rerun = tooleval(args, cli_env(tmp_path / "prefect"), tmp_path, "rerun", timeout=600)
    assert rerun.returncode in FINISHED, rerun.stderr[-2000:]
    after = census(warehouse)
    run_id = run_id_of(rerun)
    assert after.registered == {run_id: experiment.planned_rows}
    assert after.duplicated_duckdb == 0 and after.duplicated_parquet == 0
    assert after.cache_hits[run_id] >= LANDED_BEFORE * experiment.batch_size  # the landed work was not redone
