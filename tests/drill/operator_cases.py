"""The failure drill's cases for what operators trip on: a runaway `tooleval sql` query, a toolkit tool that
never returns, a disk that fills mid-run. Each runs real ``tooleval`` processes and returns its figures and
the problems it found (none when it held)."""

from __future__ import annotations

import errno
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from tests.drill.bad_inputs import root_can_mount
from tests.drill.harness import (FINISHED, DrillExperiment, FrozenOutcome, Running, census, cli_env, orphans,
                                 points_log, run_id_of, tooleval)
from tests.factories import ROOT


@dataclass
class SqlOutcome:
    case: str
    exit_code: int
    seconds: float
    peak_mib: float
    message: str
    problems: list[str] = field(default_factory=list)


def runaway_sql(workdir: Path) -> list[SqlOutcome]:
    """The cross join with the default limits and with a 5 s time limit, and memory-hungry strings under a
    400 MB memory limit: each must stop at a limit with exit 2 and a message naming it."""
    from tests.factories.rows import KnownRun, tool_rows
    from tests.report.test_sql_limits import BIG_STRINGS, CROSS_JOIN, run_sql

    warehouse = workdir / "wh-sql"
    warehouse.mkdir(parents=True, exist_ok=True)
    KnownRun(warehouse / "tooleval.duckdb").add(tool_rows("refund", 4, [1, 1, 1, 0])).finish().close()
    cases = [("cross join, the default limits", [CROSS_JOIN], "stopped by the", 300),
             ("cross join, --time-limit 5", [CROSS_JOIN, "--time-limit", "5"], "stopped by the", 5 + 30),
             ("150 kB strings a row, --memory-limit 400MB", [BIG_STRINGS, "--memory-limit", "400MB"],
              "stopped by the memory limit", 120)]
    outcomes = []
    for case, args, expected, within_s in cases:
        done, seconds, peak = run_sql(warehouse, *args)
        message = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
        problems = []
        if done.returncode != 2 or expected not in done.stderr:
            problems.append(f"expected exit 2 and '{expected}', got {done.returncode}: {done.stderr[-800:]}")
        if seconds > within_s:
            problems.append(f"took {seconds:.0f} s")
        if "Traceback" in done.stderr:
            problems.append("a traceback reached the terminal")
        outcomes.append(SqlOutcome(case, done.returncode, seconds, float(peak), message, problems))
    return outcomes


@dataclass
class HungToolOutcome:
    tasks: int
    exit_code: int
    seconds: float
    timed_out_calls: int
    given_up_calls: int
    stop_reasons: dict[str, int]
    problems: list[str] = field(default_factory=list)


def hung_tool_run(workdir: Path, prefect_home: Path, n_tasks: int = 30, timeout_s: float = 2.0) -> HungToolOutcome:
    """`tooleval run` over a toolkit whose tool sleeps forever (a thread Python cannot stop), every task calling
    it: the run must end in about GIVE_UP_AFTER timeouts, not one a task, every task landing as not carried
    out, and the process must exit with its stuck threads."""
    from flows.evaluate import MAX_WORKERS
    from tasks.surface.hung_tools import GIVE_UP_AFTER
    from tests.surface.test_given_up_tools import STUBBORN, star_tasks
    from tests.surface.test_hung_calls import hung_desk, hung_experiment

    root = workdir / "hung"
    root.mkdir(parents=True, exist_ok=True)
    experiment = hung_experiment(hung_desk(root, timeout=timeout_s, tasks=star_tasks(n_tasks), spin=STUBBORN))
    warehouse = root / "wh"
    result = tooleval(["run", str(experiment), "--warehouse", str(warehouse)], cli_env(prefect_home), root, "hung",
                      timeout=900)
    problems = []
    stops: dict[str, int] = {}
    timed_out = given_up = 0
    run_id = run_id_of(result)
    if (warehouse / "tooleval.duckdb").is_file() and run_id:
        con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
        try:
            stops = dict(con.execute("SELECT stop_reason, count(*) FROM task_runs WHERE run_id = ? GROUP BY 1",
                                     [run_id]).fetchall())
            details = [d for (d,) in con.execute("SELECT error_detail FROM task_calls WHERE run_id = ? AND error",
                                                 [run_id]).fetchall()]
        finally:
            con.close()
        timed_out = sum("call_timeout_s (" in d for d in details)
        given_up = sum("given up for the rest of the run" in d for d in details)
    else:
        problems.append(f"no run registered (exit {result.returncode}): {result.stderr[-1500:]}")
    if stops != {"surface_error": n_tasks}:
        problems.append(f"expected every task stopped by the surface, got {stops}")
    in_flight = MAX_WORKERS - 1  # units run side by side: their calls may be waiting when the count is reached
    if timed_out > GIVE_UP_AFTER + in_flight or given_up < n_tasks - GIVE_UP_AFTER - in_flight:
        problems.append(f"{timed_out} calls timed out and {given_up} were given up")
    if result.seconds > (GIVE_UP_AFTER + 2) * timeout_s + 120:
        problems.append(f"the run took {result.seconds:.0f} s")
    if "Traceback" in result.output:
        problems.append("a traceback reached the terminal")
    problems += [f"process {pid} outlived tooleval" for pid in orphans(result)]
    return HungToolOutcome(n_tasks, result.returncode, result.seconds, timed_out, given_up, stops, problems)


@dataclass
class FullDiskOutcome(FrozenOutcome):
    """As for a frozen warehouse, with how the disk filled, how soon the run ended and what had landed."""

    how: str = ""
    seconds_after_full: float = 0.0
    units_landed: int = 0


def _fill(folder: Path) -> Path:
    """Write zeros into ``folder`` until its file system is full; the filler file."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError as error:
            if error.errno != errno.ENOSPC:
                raise
    return filler


def fill_the_disk(experiment: DrillExperiment, workdir: Path, prefect_home: Path, at: str = "unit-landed:3",
                  size: str = "64m") -> FullDiskOutcome:
    """The warehouse's disk fills once the run reaches ``at``: a real tmpfs filled to its last block where root
    may mount one, else the drill's hook (every landing fails with ENOSPC). The run must stop at once with exit
    6 and one line naming the full disk, start no other unit, and, once there is room, the rerun must resume
    with nothing lost or duplicated."""
    warehouse, log = workdir / "wh-full", workdir / "full.points"
    warehouse.mkdir(parents=True, exist_ok=True)
    real = root_can_mount()
    args = ["run", str(experiment.path), "--warehouse", str(warehouse)]
    extra = {"TOOLEVAL_DRILL_LOG": str(log)} if real else {"TOOLEVAL_DRILL_DISK_FULL_AFTER": at}
    filler = None
    if real:
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(warehouse)], check=True)
    try:
        running = Running(args, cli_env(prefect_home, **extra), workdir, "full")
        if real:
            point, _, nth = at.partition(":")
            running.wait_for(lambda: sum(p == point for p, _ in points_log(log)) >= int(nth or 1), 1200,
                             f"the run reaching {at}")
            filler = _fill(warehouse)
        full_at = time.monotonic()
        result = running.finish()
        seconds = time.monotonic() - full_at
        landed = len(list((warehouse / "rows").rglob("part-*.parquet")))
        if filler is not None:
            filler.unlink()
        rerun = tooleval(args, cli_env(prefect_home), workdir, "full-rerun")
        after = census(warehouse)
    finally:
        if real:
            subprocess.run(["umount", str(warehouse)], capture_output=True)
    lost = sum(max(0, experiment.planned_rows - n) for n in after.registered.values())
    duplicated = after.duplicated_duckdb + after.duplicated_parquet
    said = [line for line in result.stderr.splitlines() if line.startswith("tooleval:")]
    problems = []
    if result.returncode != 6 or len(said) != 1 or "the disk is full" not in said[0]:
        problems.append(f"expected exit 6 and one line saying the disk is full, got {result.returncode}: "
                        f"{result.stderr[-1500:]}")
    if "ERROR" in result.output or "Traceback" in result.output:
        problems.append("ERROR records or a traceback reached the terminal")
    if landed >= experiment.units // 2:
        problems.append(f"{landed} of {experiment.units} units landed: the run went on after the disk filled")
    if rerun.returncode not in FINISHED or run_id_of(rerun) not in after.registered:
        problems.append(f"the rerun did not complete (exit {rerun.returncode}): {rerun.stderr[-1500:]}")
    problems += [f"{what}: {n}" for what, n in (("rows lost", lost), ("duplicated rows", duplicated)) if n]
    problems += [f"process {pid} outlived tooleval" for pid in orphans(result) + orphans(rerun)]
    return FullDiskOutcome(result.returncode, said, rerun.returncode, lost, duplicated, problems,
                           how="a tmpfs filled to its last block" if real else "the drill's ENOSPC hook",
                           seconds_after_full=seconds, units_landed=landed)


@dataclass
class FailedDeploymentOutcome:
    state: str
    message: str
    error_records: int
    traceback_lines: int
    seconds: float
    problems: list[str] = field(default_factory=list)


def failed_deployment(workdir: Path) -> FailedDeploymentOutcome:
    """The pre-change deployment, run by a process worker against a local server, failing its gates: Failed
    with the verdict as its message, and no ERROR record and no traceback in its log read through the API."""
    from tests.deployments.test_deploy_local_server import run_failed_deployment

    started = time.monotonic()
    (workdir / "deployed").mkdir(parents=True, exist_ok=True)
    state, logs, alive, worker = run_failed_deployment(workdir / "deployed")
    errors = sum(r["level"] >= 40 for r in logs)
    tracebacks = sum("Traceback" in r["message"] or "RunFailed" in r["message"] for r in logs)
    problems = [] if state["type"] == "FAILED" else [f"ended {state['type']}: {worker[-1500:]}"]
    problems += [f"{errors} ERROR records"] if errors else []
    problems += [f"{tracebacks} records with a traceback"] if tracebacks else []
    problems += [f"processes {alive} outlived the test's stop"] if alive else []
    return FailedDeploymentOutcome(state["type"], state.get("message") or "", errors, tracebacks,
                                   time.monotonic() - started, problems)
