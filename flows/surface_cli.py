"""``tooleval tasks ...``: tasks done on a tool surface. Each command parses, calls one function of
flows/surface_api.py and prints; only ``tasks run`` starts Prefect."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from flows import surface_api
from flows.exit_codes import EXIT_OK
from flows.progress import announce
from tasks.report.render import print_summary_line, terminal_width
from tasks.surface.task_report import render_task_markdown, render_task_text


def cmd_tasks_run(args: argparse.Namespace) -> int:
    announce(f"tooleval tasks run {args.experiment}: checking the arms, surfaces and tasks, starting Prefect ...")
    outcome = surface_api.run_task_experiment(args.experiment, warehouse=args.warehouse, use_cache=not args.no_cache,
                                              max_calls=args.max_calls, max_spend_usd=args.max_spend_usd,
                                              trace=args.trace)
    summary, warehouse = outcome.summary, outcome.warehouse
    print(render_task_text(outcome.report, terminal_width()), end="")
    print(f"\ntask run {summary.run_id}: {summary.n_runs:,} runs in {summary.n_units} work units, "
          f"{summary.n_cache_hits:,} from cache, {summary.n_success:,} succeeded, {summary.n_failed:,} stopped on a "
          "provider error or the run's budget")
    print(f"DuckDB file:   {warehouse.db_path}  (views task_success, task_tool_counters, task_call_totals, "
          "task_first_calls, task_side_effects, task_paired, task_stop_reasons)")
    print(f"Parquet:       {warehouse.root / 'task_runs'} and {warehouse.root / 'task_calls'} (run_id={summary.run_id})")
    for kind, path in summary.reports.items():
        print(f"{kind + ' report:':<14} {path}")
    if summary.n_calls:
        print(f"model calls:   {summary.n_calls:,}, ${summary.spend_usd:,.4f} at the price file's prices")
    if summary.n_failed:
        print(f"\n{summary.n_failed:,} runs could not be carried out (provider error or budget); every finished task "
              f"is cached: rerun `tooleval tasks run {args.experiment}` to resume.", file=sys.stderr)
    for model, reason in (summary.halts or {}).items():
        print(f"FAILED: {model}: {reason}", file=sys.stderr)
    if outcome.report.verdict is not None:
        print_summary_line("verdict:", f"{outcome.report.verdict.status} — {outcome.report.verdict.reason} "
                                       f"(exit {outcome.exit_code})")
    if summary.trace_target is not None:
        sys.stdout.flush()
        dropped = summary.wait_for_traces(lambda message: print_summary_line("traces:", message))
        print_summary_line("traces:", f"{summary.trace_target}: " + ("dropped, see the warning above" if dropped
                                                                      else f"one per task run, {summary.n_runs:,}"))
    return outcome.exit_code


def cmd_tasks_report(args: argparse.Namespace) -> int:
    report = surface_api.task_report(args.run_id, args.warehouse)
    print(render_task_markdown(report) if args.format == "markdown" else render_task_text(report, terminal_width()),
          end="")
    return EXIT_OK


def cmd_tasks_validate(args: argparse.Namespace) -> int:
    print(surface_api.validate_tasks(args.tasks_path, args.surface))
    return EXIT_OK


def cmd_tasks_catalogue(args: argparse.Namespace) -> int:
    print(surface_api.write_catalogue(args.surface_file, args.out))
    return EXIT_OK


def add_tasks_parser(commands: argparse._SubParsersAction) -> None:
    tasks = commands.add_parser("tasks", help="tasks done on a tool surface: run, report, validate, catalogue",
                                description="Multi-step tasks with fixtures and outcome assertions, run by an agent "
                                "on a tool surface (see the README section 'Tasks done on a tool surface').")
    actions = tasks.add_subparsers(dest="tasks_command", required=True, metavar="ACTION")
    run = actions.add_parser("run", help="run a task experiment (the surface-run flow) and print its report",
                             description="Resolve the arms, check surfaces and tasks, run every arm x seed x task, "
                             "land task_runs and task_calls as Parquet, register them in DuckDB, print the report.")
    run.add_argument("experiment", type=Path, metavar="EXPERIMENT_FILE")
    run.add_argument("--warehouse", metavar="DIR", default=None,
                     help="warehouse directory (default: $TOOLEVAL_WAREHOUSE, else warehouse/ in the checkout)")
    run.add_argument("--no-cache", action="store_true", help="ignore and do not fill the task cache")
    run.add_argument("--max-spend-usd", type=float, default=None, metavar="USD", help="stop new model calls past this spend")
    run.add_argument("--max-calls", type=int, default=None, metavar="N", help="stop after N HTTP requests to models, retries included")
    run.add_argument("--trace", default=None, metavar="otlp://HOST:PORT",
                     help="send one OpenInference trace per task run (a TOOL span per call, the task check as an "
                          "annotation) to an OTLP/HTTP collector such as Phoenix ('off': not the experiment's either)")
    run.set_defaults(func=cmd_tasks_run)
    report = actions.add_parser("report", help="print the report of a task run (default: the latest)",
                                description="Print a registered task run's report from the DuckDB file.")
    report.add_argument("run_id", nargs="?", default=None, metavar="RUN_ID")
    report.add_argument("--warehouse", metavar="DIR", default=None, help="warehouse directory")
    report.add_argument("--format", choices=["text", "markdown"], default="text")
    report.set_defaults(func=cmd_tasks_report)
    validate = actions.add_parser("validate", help="check a task-set version against its surfaces",
                                  description="Load a tasks file (e.g. tasksets/support_tasks/t1.jsonl), check every "
                                  "rule against the surfaces and print what was checked.")
    validate.add_argument("tasks_path", metavar="TASKS_JSONL")
    validate.add_argument("--surface", action="append", default=None, metavar="NAME",
                          help="surface to check against (repeatable; default: every surface of the task set)")
    validate.set_defaults(func=cmd_tasks_validate)
    catalogue = actions.add_parser("catalogue", help="write a surface's tools (after its transform) as a catalogue",
                                   description="Write the tools a surface offers, names and descriptions as transformed, "
                                   "as a selection catalogue file, so a prefix or rename can be a rung of a selection "
                                   "experiment too.")
    catalogue.add_argument("surface_file", metavar="SURFACE_YAML")
    catalogue.add_argument("--out", required=True, metavar="CATALOGUE_JSON")
    catalogue.set_defaults(func=cmd_tasks_catalogue)
