"""``tooleval tasks ...``: tasks done on a tool surface. ``run`` and ``report`` are ``tooleval run`` and
``tooleval report`` (one core serves both instruments; ``tasks report`` defaults to the latest task run);
``validate`` and ``catalogue`` are the surface instrument's own. Each parses, calls one function of
flows/api.py and prints; only ``tasks run`` starts Prefect."""

from __future__ import annotations

import argparse

from flows.exit_codes import EXIT_OK
from flows.run_cli import add_report_arguments, add_run_arguments


def cmd_tasks_validate(args: argparse.Namespace) -> int:
    """A pass is remembered by every file it read (tasks/files/remembered_pass.py)."""
    from flows import api
    from flows.progress import fitted
    from tasks.files.remembered_pass import remembered

    lines = remembered("tasks validate", [args.tasks_path, args.surface],
                       lambda: api.validate_tasks(args.tasks_path, args.surface).splitlines())
    print("\n".join(fitted(line) for line in lines))
    return EXIT_OK


def cmd_tasks_catalogue(args: argparse.Namespace) -> int:
    from flows import api

    print(api.write_catalogue(args.surface_file, args.out))
    return EXIT_OK


def add_tasks_parser(commands: argparse._SubParsersAction) -> None:
    tasks = commands.add_parser("tasks", help="tasks done on a tool surface: run, report, validate, catalogue",
                                description="Multi-step tasks with fixtures and outcome assertions, run by an agent "
                                "on a tool surface (see docs/surface/index.md).")
    actions = tasks.add_subparsers(dest="tasks_command", required=True, metavar="ACTION")
    run = actions.add_parser("run", help="run a task experiment and print its report (as `tooleval run` does)",
                             description="Resolve the arms, check surfaces and tasks, run every arm x seed x task, "
                             "land task_runs and task_calls as Parquet, register them in DuckDB, judge the gates "
                             "and print the report.")
    add_run_arguments(run, batch=False)
    add_report_arguments(actions.add_parser("report", help="print the report of a task run (default: the latest)",
                                            description="Print a registered task run's report from the DuckDB file."))
    validate = actions.add_parser("validate", help="check a task-set version against its surfaces",
                                  description="Load a tasks file (e.g. tasksets/support_tasks/t1.jsonl), check every "
                                  "rule against the surfaces and print what was checked.")
    validate.add_argument("tasks_path", metavar="TASKS_JSONL", help="e.g. tasksets/support_tasks/t1.jsonl")
    validate.add_argument("--surface", action="append", default=None, metavar="NAME",
                          help="surface to check against (repeatable; default: every surface of the task set)")
    validate.set_defaults(func=cmd_tasks_validate)
    catalogue = actions.add_parser("catalogue", help="write a surface's tools (after its transform) as a catalogue",
                                   description="Write the tools a surface offers, names and descriptions as transformed, "
                                   "as a selection catalogue file, so a prefix or rename can be a rung of a selection "
                                   "experiment too. A tool offered under another name than its backend's is recorded "
                                   "in the file's offered_as (label -> name offered): a request labelled close_ticket "
                                   "then expects support.close_ticket of an arm offering the catalogue.")
    catalogue.add_argument("surface_file", metavar="SURFACE_YAML",
                           help="e.g. tasksets/support_tasks/surfaces/legacy_namespaced.yaml")
    catalogue.add_argument("--out", required=True, metavar="CATALOGUE_JSON", help="the catalogue file to write")
    catalogue.set_defaults(func=cmd_tasks_catalogue)
