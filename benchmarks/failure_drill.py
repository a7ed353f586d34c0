"""The full failure drill: every bad input of tests/drill/bad_inputs.py (79, a review's fixed
findings among them) as a real ``tooleval`` process, kill -9 at every named point of a run followed by a
rerun, readers and a second writer on the warehouse, a Prefect API lost mid-run, and the warehouse made
immutable mid-run (root and chattr), a runaway `tooleval sql` query, a toolkit tool that never returns,
the warehouse's disk filling mid-run, and a Failed pre-change deployment run's log (a real process worker). Prints one line per case and the figures quoted in
docs/reliability/index.md.

    PYTHONPATH=. .venv/bin/python benchmarks/failure_drill.py                 # everything (~25 min on 2 cores)
    PYTHONPATH=. .venv/bin/python benchmarks/failure_drill.py --only kills --points records-saved,registered
    PYTHONPATH=. .venv/bin/python benchmarks/failure_drill.py --only sql --only hung --only disk --only deployed
    PYTHONPATH=. .venv/bin/python benchmarks/failure_drill.py --json drill.json

Kills are placed with the environment hook TOOLEVAL_DRILL_KILL_AT (tasks/drill_points.py): the run
SIGKILLs itself at a named step, so where it dies does not depend on the machine's load. The fast subset of
the same drill is tests/flows/test_failure_drill.py. Exits non-zero if any case did not hold.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.drill.bad_inputs import BAD_INPUTS, check, root_can_mount, snapshot, unmount_under  # noqa: E402
from tests.drill.harness import (  # noqa: E402
    KILL_POINTS,
    cli_env,
    concurrent_runs,
    can_freeze,
    drill_experiment,
    freeze_the_warehouse,
    hosted_kill_and_resume,
    kill_and_resume,
    lose_the_api,
    orphans,
    report_while_written,
    run_past_the_wait,
    run_while_held,
    tooleval,
)
from tests.drill.operator_cases import failed_deployment, fill_the_disk, hung_tool_run, runaway_sql  # noqa: E402


def bad_inputs(work: Path, prefect_home: Path) -> list[dict]:
    can_mount = root_can_mount()
    results = []
    for number, case in enumerate(BAD_INPUTS, start=1):
        if case.needs_root_mount and not can_mount:
            print(f"  skip  {case.name} (needs root and a tmpfs mount)", flush=True)
            results.append({"name": case.name, "held": None, "problems": ["skipped"]})
            continue
        folder = work / "bad" / f"{number:02d}"
        folder.mkdir(parents=True)
        try:
            built = case.build(folder)
            before = snapshot(built.warehouse)
            env = cli_env(prefect_home, **built.env)
            result = tooleval(built.args, env, folder, "cli", timeout=600)
            checked = check(case, built, before, result.returncode, result.output)
            left = orphans(result)
            if left:
                checked.problems.append(f"processes outlived tooleval: {left}")
        finally:
            unmount_under(folder)
        print(f"  {'held' if checked.held else 'FAIL'}  {case.name}: exit {result.returncode} in {result.seconds:.1f} s"
              + (f"  {checked.problems}" if checked.problems else ""), flush=True)
        results.append({"name": case.name, "held": checked.held, "exit": result.returncode,
                        "seconds": round(result.seconds, 1), "problems": checked.problems,
                        "message": [line for line in result.stderr.splitlines() if "[" in line][:3]})
    return results


PARTS = ["bad", "kills", "shared", "api", "frozen", "sql", "hung", "disk", "deployed"]


def said(problems: list[str], text: str) -> int:
    """Print one case's line (held or FAIL, its figures, its problems); 1 when it did not hold."""
    print(f"  {'held' if not problems else 'FAIL'}  {text}" + (f"  {problems}" if problems else ""), flush=True)
    return int(bool(problems))


def operator_cases(parts: set[str], work: Path, prefect_home: Path, experiment, report: dict) -> int:
    """The runaway query, the tool that never returns, the disk that fills: the number that did not hold."""
    failed = 0
    if "sql" in parts:
        print("a runaway `tooleval sql` query:", flush=True)
        report["sql"] = [asdict(o) for o in runaway_sql(work)]
        for o in report["sql"]:
            failed += said(o["problems"], f"{o['case']}: exit {o['exit_code']} after {o['seconds']:.1f} s, peak "
                                          f"{o['peak_mib']:.0f} MiB: {o['message'][:100]}")
    if "hung" in parts:
        print("a toolkit tool that never returns, called by every task:", flush=True)
        hung = hung_tool_run(work, prefect_home)
        report["hung"] = asdict(hung)
        failed += said(hung.problems, f"{hung.tasks} tasks: exit {hung.exit_code} in {hung.seconds:.1f} s; "
                                      f"{hung.timed_out_calls} calls timed out, {hung.given_up_calls} given up; "
                                      f"{hung.stop_reasons}")
    if "disk" in parts:
        print("the warehouse's disk fills mid-run:", flush=True)
        full = fill_the_disk(experiment, work, prefect_home)
        report["disk"] = asdict(full)
        failed += said(full.problems, f"{full.how}: exit {full.exit_code} {full.seconds_after_full:.1f} s after, "
                                      f"{full.units_landed} units landed, {full.message}; rerun exit "
                                      f"{full.rerun_exit}, lost {full.rows_lost}, duplicated {full.duplicated}")
    if "deployed" in parts:
        print("a pre-change deployment failing its gates on a process worker:", flush=True)
        deployed = failed_deployment(work)
        report["deployed"] = asdict(deployed)
        failed += said(deployed.problems, f"{deployed.state} in {deployed.seconds:.0f} s ({deployed.message[:60]}); "
                                          f"{deployed.error_records} ERROR records, {deployed.traceback_lines} "
                                          "tracebacks in its log read through the API")
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=PARTS, action="append", default=None)
    parser.add_argument("--points", default=",".join(KILL_POINTS), help="comma-separated kill points (POINT[:N])")
    parser.add_argument("--workdir", default=None, help="keep the drill's files here (default: a temporary folder)")
    parser.add_argument("--json", default=None, metavar="FILE", help="write every outcome as JSON")
    args = parser.parse_args(argv)
    parts = set(args.only or PARTS)
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="tooleval-drill-"))
    work.mkdir(parents=True, exist_ok=True)
    prefect_home = work / "prefect-home"
    experiment = drill_experiment(work / "shop")
    started = time.monotonic()
    report: dict = {"experiment": {"requests": experiment.n_requests, "seeds": experiment.seeds, "arms": experiment.arms,
                                   "rows": experiment.planned_rows, "work_units": experiment.units}}
    failed = 0

    if "bad" in parts:
        print(f"bad inputs ({len(BAD_INPUTS)}), each a real `tooleval` process:", flush=True)
        report["bad_inputs"] = bad_inputs(work, prefect_home)
        failed += sum(1 for r in report["bad_inputs"] if r["held"] is False)

    if "kills" in parts:
        points = [p for p in args.points.split(",") if p]
        print(f"kill -9 at {len(points)} points, then rerun ({experiment.planned_rows} rows, {experiment.units} "
              "work units a run):", flush=True)
        kills = []
        for point in points:
            outcome = kill_and_resume(point, experiment, work, prefect_home)
            kills.append(asdict(outcome))
            failed += not outcome.resumed
            print(f"  {'resumed' if outcome.resumed else 'FAIL'}  {point}: killed {outcome.killed_exit}, rerun exit "
                  f"{outcome.rerun_exit}; lost {outcome.rows_lost}, duplicated {outcome.duplicated_duckdb}/"
                  f"{outcome.duplicated_parquet} (DuckDB/Parquet), calls completed before the kill "
                  f"{outcome.calls_in_killed_run}, in flight {outcome.calls_in_flight}, repeated "
                  f"{outcome.calls_repeated}" + (f"  {outcome.problems}" if outcome.problems else ""), flush=True)
            for line in outcome.rerun_said:
                print(f"           rerun: {line.strip()}", flush=True)
        report["kills"] = kills
        hosted = hosted_kill_and_resume(experiment, work, prefect_home)
        report["hosted_kill"] = asdict(hosted)
        failed += bool(hosted.problems)
        print(f"  {'resumed' if not hosted.problems else 'FAIL'}  hosted selector (OpenAI API on loopback, concurrency 2), "
              f"kill -9 at its {hosted.killed_after_calls}th call: {hosted.calls_cached_at_kill} answers cached, "
              f"{hosted.calls_in_flight} in flight, {hosted.calls_repeated} repeated by the rerun "
              f"({hosted.rerun_calls} calls); lost {hosted.rows_lost}, duplicated {hosted.duplicated}"
              + (f"  {hosted.problems}" if hosted.problems else ""), flush=True)

    if "shared" in parts:
        print("readers and a second writer on one warehouse:", flush=True)
        warehouse = work / "wh-shared"
        first = tooleval(["run", str(experiment.path), "--warehouse", str(warehouse)], cli_env(prefect_home), work,
                         "shared-first")
        shared = []
        if first.returncode not in (0, 1):
            print(f"  FAIL  the first run: exit {first.returncode}\n{first.stderr[-2000:]}")
            failed += 1
        else:
            for step in (lambda: run_while_held(experiment, warehouse, work, prefect_home, read_only=True),
                         lambda: run_while_held(experiment, warehouse, work, prefect_home, read_only=False),
                         lambda: run_past_the_wait(experiment, warehouse, work, prefect_home),
                         lambda: report_while_written(warehouse, work, prefect_home),
                         lambda: concurrent_runs(experiment, warehouse, work, prefect_home, n=2),
                         lambda: concurrent_runs(experiment, warehouse, work, prefect_home, n=3)):
                outcome = step()
                shared.append(asdict(outcome))
                failed += bool(outcome.problems)
                print(f"  {'held' if not outcome.problems else 'FAIL'}  {outcome.case}: exits {outcome.exits}, "
                      f"{outcome.registered_runs} runs registered, lost {outcome.rows_lost}, duplicated "
                      f"{outcome.duplicated}" + (f"  {outcome.problems}" if outcome.problems else ""), flush=True)
        report["shared"] = shared

    if "api" in parts:
        print("the temporary Prefect server killed mid-run:", flush=True)
        outcome = lose_the_api(experiment, work, prefect_home)
        report["lost_api"] = asdict(outcome)
        failed += bool(outcome.problems)
        print(f"  {'held' if not outcome.problems else 'FAIL'}  exit {outcome.exit_code} "
              f"{outcome.seconds_after_loss:.1f} s after the loss: {outcome.message!r}; rerun exit "
              f"{outcome.rerun_exit}, lost {outcome.rows_lost}, duplicated {outcome.duplicated}"
              + (f"  {outcome.problems}" if outcome.problems else ""), flush=True)

    if "frozen" in parts:
        print("the warehouse made immutable (chattr -R +i) mid-run:", flush=True)
        if not can_freeze(work):
            print("  skip  needs root and chattr on a file system with the immutable attribute", flush=True)
        else:
            outcome = freeze_the_warehouse(experiment, work, prefect_home)
            report["frozen"] = asdict(outcome)
            failed += bool(outcome.problems)
            print(f"  {'held' if not outcome.problems else 'FAIL'}  exit {outcome.exit_code}: {outcome.message}; rerun "
                  f"exit {outcome.rerun_exit}, lost {outcome.rows_lost}, duplicated {outcome.duplicated}"
                  + (f"  {outcome.problems}" if outcome.problems else ""), flush=True)

    failed += operator_cases(parts, work, prefect_home, experiment, report)

    print("\nfigures:")
    if "bad_inputs" in report:
        ran = [r for r in report["bad_inputs"] if r["held"] is not None]
        print(f"  bad inputs: {sum(r['held'] for r in ran)} of {len(ran)} refused with their exit code and a "
              "located message, no traceback, warehouse untouched")
    if "kills" in report:
        kills = report["kills"]
        print(f"  kills: {sum(not k['problems'] for k in kills)} of {len(kills)} resumed; rows lost "
              f"{sum(k['rows_lost'] for k in kills)}, duplicated {sum(k['duplicated_duckdb'] + k['duplicated_parquet'] for k in kills)}; "
              f"calls repeated {sum(k['calls_repeated'] for k in kills)} (in flight at the kills: "
              f"{sum(k['calls_in_flight'] for k in kills)}); orphaned processes {sum(k['orphaned_processes'] for k in kills)}")
    if "hosted_kill" in report:
        hosted = report["hosted_kill"]
        print(f"  hosted kill: {hosted['calls_repeated']} calls repeated of {hosted['calls_in_flight']} in flight "
              f"({hosted['calls_cached_at_kill']} of {hosted['killed_after_calls']} answers cached when killed)")
    if report.get("shared"):
        shared = report["shared"]
        print(f"  readers / second writers: {sum(not s['problems'] for s in shared)} of {len(shared)} cases landed "
              f"every run; rows lost {sum(s['rows_lost'] for s in shared)}, duplicated {sum(s['duplicated'] for s in shared)}")
    if "lost_api" in report:
        lost = report["lost_api"]
        print(f"  lost Prefect API: exit {lost['exit_code']} after {lost['seconds_after_loss']:.1f} s; the rerun "
              f"resumed with {lost['rows_lost']} rows lost")
    if "frozen" in report:
        frozen = report["frozen"]
        print(f"  immutable warehouse mid-run: exit {frozen['exit_code']} with a message (was SIGBUS, -7); the rerun "
              f"resumed with {frozen['rows_lost']} rows lost, {frozen['duplicated']} duplicated")
    print(f"  total {time.monotonic() - started:.0f} s; files in {work}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
