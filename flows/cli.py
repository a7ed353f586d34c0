"""The ``tooleval`` command: a thin layer that parses arguments, calls one function each (flows/api.py or
the plain function the command is named after) and prints.

Only ``run`` imports and starts Prefect; ``report``, ``validate``, ``plan``, ``import``, ``resample`` and
``queue`` read and write files and DuckDB directly.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from flows import api
from flows.exit_codes import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_MODEL_MISMATCH,
    EXIT_NOT_JUDGED,
    EXIT_NOT_REGISTERED,
    EXIT_OK,
    verdict_exit_code,
)
from schemas.traffic import MaskingRules
from flows.crash import report_crash
from tasks.files.input_errors import InputError
from tasks.importers.bfcl import import_bfcl
from tasks.importers.metatool import import_metatool
from tasks.report.render import render_markdown, render_terminal
from tasks.stats.planner import plan
from tasks.traffic.labelling_queue import import_queue
from tasks.traffic.resample_version import describe_resample, load_targets, load_traffic_config, resample_version
from warehouse.connect import WarehouseBusy
from flows.surface_cli import add_tasks_parser

__all__ = ["EXIT_BAD_INPUT", "EXIT_GATE_FAILED", "EXIT_MODEL_MISMATCH", "EXIT_NOT_JUDGED", "EXIT_OK", "build_parser",
           "main", "verdict_exit_code"]


def _count(minimum: int):
    """An argparse type: a whole number >= minimum, with a message that says so."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
        return value
    return parse


def _amount(text: str) -> float:
    """An argparse type: a non-negative number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def _warehouse_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--warehouse", metavar="DIR", default=None,
                        help="warehouse directory (default: $TOOLEVAL_WAREHOUSE, else warehouse/ in the checkout)")


def cmd_run(args: argparse.Namespace) -> int:
    print(f"tooleval run {args.experiment}: checking the experiment and its labels, starting Prefect ...",
          file=sys.stderr, flush=True)
    outcome = api.run_experiment(args.experiment, warehouse=args.warehouse, use_cache=not args.no_cache,
                                 allow_provisional=args.allow_provisional, task_runner=args.task_runner,
                                 max_calls=args.max_calls, max_spend_usd=args.max_spend_usd, trace=args.trace)
    summary, report, warehouse = outcome.summary, outcome.report, outcome.warehouse
    if report is None:  # landed, not registered: the file stayed held by another process
        again = f"tooleval register {summary.run_id}" + (f" --warehouse {args.warehouse}" if args.warehouse else "")
        print(f"run {summary.run_id}: {summary.n_rows:,} rows landed in {warehouse.rows_dir}, NOT registered: "
              f"{warehouse.db_path} stayed held by another process (close the other connection, e.g. an analyst's "
              f"DuckDB session). Register, judge and report it without selecting again:\n    {again}\n"
              "(the next `tooleval run` into this warehouse also registers it)", file=sys.stderr)
        return outcome.exit_code
    render_terminal(report)  # the verdict first, then the tables that explain it
    print(f"\nrun {summary.run_id}: {summary.n_rows:,} rows in {summary.n_units} work units, "
          f"{summary.n_cache_hits:,} from cache, {summary.n_failures:,} invalid/error/empty")
    print(f"DuckDB file:   {warehouse.db_path}")
    print(f"Parquet rows:  {warehouse.rows_dir / ('run_id=' + summary.run_id)}")
    for kind, path in summary.reports.items():
        print(f"{kind + ' report:':<14} {path}")
    _print_spend(summary, args)
    for line in summary.leftovers or []:
        print(f"leftovers:     {line}")
    for late in summary.late_registrations or []:
        print(f"also registered: run {late}, which had landed without registering (`tooleval report {late}`)")
    if report.verdict is not None:
        print(f"verdict:       {report.verdict.status} — {report.verdict.reason} (exit {outcome.exit_code})")
    if summary.trace:
        sys.stdout.flush()
        dropped = summary.trace_warnings  # waits until the spans are sent: the report is out already
        print(f"traces:        {summary.trace}: " + ("dropped, see the warning above" if dropped
                                                      else f"one per row, {summary.n_rows:,}"))
    return outcome.exit_code


def _print_spend(summary, args: argparse.Namespace) -> None:
    """Calls and spend of hosted models, the resume hint when a cap stopped the run, and model halts."""
    if summary.n_calls or summary.n_budget_stopped:
        caps = ", ".join(c for c in (f"max {summary.max_calls:,} calls" if summary.max_calls is not None else "",
                                     f"max ${summary.max_spend_usd:,.2f}" if summary.max_spend_usd is not None else "")
                         if c)
        print(f"model calls:   {summary.n_calls:,}, ${summary.spend_usd:,.4f} at the price file's prices"
              + (f" ({caps})" if caps else ""))
    if summary.n_budget_stopped:
        command = f"tooleval run {args.experiment}" + (f" --warehouse {args.warehouse}" if args.warehouse else "")
        print(f"\nbudget reached: {summary.n_budget_stopped:,} requests were not sent; their rows are errors "
              f"'budget reached'. Every completed call is cached: to resume, raise the cap if you need to and rerun\n"
              f"    {command}\n"
              "The rerun repeats no completed call and spends only on the rest.", file=sys.stderr)
    if summary.halts:
        for model, reason in summary.halts.items():
            print(f"FAILED: {model}: {reason}", file=sys.stderr)
        print("Pin the id the provider serves (or declare options.served_model) and rerun.", file=sys.stderr)


def cmd_resample(args: argparse.Namespace) -> int:
    sampling = {key: value for key, value in (("size", args.size), ("floor_per_tool", args.floor),
                                              ("floor_none", args.floor_none)) if value is not None}
    if args.targets:
        sampling["targets"] = load_targets(args.targets)
    if args.half_width is not None:
        sampling["target_half_width"] = args.half_width / 100
    masking = None
    if args.order_id_pattern:
        config = load_traffic_config(args.taskset)
        base = config.masking if config else None
        masking = (base or MaskingRules()).model_copy(update={"order_ids": args.order_id_pattern})
    summary = resample_version(args.taskset, traffic=args.traffic, traffic_format=args.traffic_format,
                               traffic_table=args.traffic_table, window=args.window, weeks=args.weeks,
                               seed=args.seed, sampling=sampling or None, masking=masking)
    print("\n".join(describe_resample(summary)))
    return EXIT_OK


def cmd_queue_import(args: argparse.Namespace) -> int:
    result = import_queue(args.queue_file, args.taskset, partial=args.partial)
    verb = "found identical" if result.reused else "wrote"
    print(f"{verb} {result.version} (parent {result.from_version}): {result.n_decided} labels adjudicated, "
          f"{result.n_changed} changed from production's hint, {result.n_still_provisional} still provisional")
    return EXIT_OK


def cmd_register(args: argparse.Namespace) -> int:
    late = api.register(args.run_id, args.warehouse)
    render_terminal(late.published.report)
    print(f"\nrun {late.run_id}: {late.n_rows:,} rows registered; reports: "
          + ", ".join(str(path) for path in late.published.paths.values()))
    return verdict_exit_code(late.published.verdict)


def cmd_report(args: argparse.Namespace) -> int:
    report = api.report(args.run_id, args.warehouse)
    if args.format == "markdown":
        print(render_markdown(report))
    else:
        render_terminal(report)
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    if not 0 <= args.accuracy <= 1:
        print("tooleval: --accuracy is a fraction between 0 and 1 (e.g. 0.88)", file=sys.stderr)
        return EXIT_BAD_INPUT
    result = plan(args.accuracy, args.requests, seeds=args.seeds, icc=args.icc,
                  target_half_width=args.half_width / 100 if args.half_width else None, power=args.power)
    print("\n".join(result.lines()))
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    print(api.validate(args.version_path, args.catalogue, args.weights))
    return EXIT_OK


def cmd_import_bfcl(args: argparse.Namespace) -> int:
    summary = import_bfcl(Path(args.questions), Path(args.answers) if args.answers else None, Path(args.out))
    print("\n".join(summary.lines()))
    return EXIT_OK


def cmd_import_metatool(args: argparse.Namespace) -> int:
    summary = import_metatool(Path(args.plugin_des), Path(args.queries), Path(args.out))
    print("\n".join(summary.lines()))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tooleval", description="Measure which tool an agent picks, per tool, "
                                     "per confused pair and weighted by traffic.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run an experiment (the evaluate flow) and print its report",
                              description="Resolve the arms, check the labels, select with every arm x seed, "
                              "land rows as Parquet, register them in DuckDB and print the report.")
    run.add_argument("experiment", type=Path, metavar="EXPERIMENT_FILE")
    _warehouse_arg(run)
    run.add_argument("--no-cache", action="store_true", help="ignore and do not fill the selection cache")
    run.add_argument("--max-spend-usd", type=_amount, default=None, metavar="USD",
                     help="stop new hosted-model calls once the run has spent this much (default: the experiment's "
                          "budget); rerun to resume from the cache")
    run.add_argument("--max-calls", type=_count(0), default=None, metavar="N",
                     help="stop new hosted-model calls after N calls (default: the experiment's budget)")
    run.add_argument("--allow-provisional", action="store_true",
                     help="measure versions whose labels are still provisional (production hints); the report says so")
    run.add_argument("--task-runner", choices=["thread", "dask", "ray"], default=None,
                     help="where the selection tasks run (default: $TOOLEVAL_TASK_RUNNER, else thread)")
    run.add_argument("--trace", default=None, metavar="otlp://HOST:PORT",
                     help="send one OpenInference trace per row, with the label check and judge as annotations, "
                          "to an OTLP/HTTP collector such as Phoenix (default: the experiment's tracing: block; "
                          "'off' turns that off)")
    run.set_defaults(func=cmd_run)

    resample = commands.add_parser(
        "resample", help="draw a new task-set version from the production log",
        description="Read a window of production turns, mask personal data, write the window's production "
        "weights and a new version with provisional labels (production's first tool) plus its labelling queue. "
        "Defaults come from <taskset>/production/traffic.yaml.")
    resample.add_argument("taskset", type=Path, metavar="TASKSET_DIR")
    resample.add_argument("--traffic", default=None, metavar="LOG",
                          help="production log: Parquet file or folder, JSONL, DuckDB file, OpenInference export")
    resample.add_argument("--format", dest="traffic_format", default=None,
                          choices=["auto", "parquet", "jsonl", "duckdb", "openinference"])
    resample.add_argument("--table", dest="traffic_table", default=None, help="table name in a DuckDB log")
    resample.add_argument("--window", default=None, metavar="ID", help="e.g. 2026-W44-W47 (default: the last weeks)")
    resample.add_argument("--weeks", type=_count(1), default=None, help="weeks in the default window")
    resample.add_argument("--size", type=_count(1), default=None, help="requests to draw")
    resample.add_argument("--floor", type=_count(0), default=None, help="at least this many requests per tool")
    resample.add_argument("--floor-none", type=_count(0), default=None, help="at least this many 'none' requests")
    resample.add_argument("--targets", default=None, metavar="JSON", help="target count per tool (JSON file)")
    resample.add_argument("--half-width", type=float, default=None, metavar="PTS",
                          help="plan each tool with >= 2%% of traffic for a 95%% interval of +-PTS points "
                               "(the sample-size planner); the others get the floor")
    resample.add_argument("--seed", type=int, default=None, help="sampling seed (default: derived from the window)")
    resample.add_argument("--order-id-pattern", action="append", default=None, metavar="REGEX",
                          help="mask order ids matching REGEX (repeatable; default: traffic.yaml)")
    resample.set_defaults(func=cmd_resample)

    queue = commands.add_parser("queue", help="labelling queues of resampled versions",
                                description="Work with the labelling queue of a provisional version.")
    queue_commands = queue.add_subparsers(dest="queue_command", required=True, metavar="ACTION")
    queue_import = queue_commands.add_parser(
        "import", help="import a decided queue as a new adjudicated version",
        description="Check every decision (label offered, who and when, why when the label changes) and write a "
        "new version whose decided labels are adjudicated, with one adjudication record per decision.")
    queue_import.add_argument("queue_file", type=Path, metavar="QUEUE_JSONL")
    queue_import.add_argument("--taskset", type=Path, default=None, metavar="DIR",
                              help="the task set (default: the folder above queue/)")
    queue_import.add_argument("--partial", action="store_true",
                              help="import the decided items and keep the undecided ones provisional")
    queue_import.set_defaults(func=cmd_queue_import)

    register = commands.add_parser(
        "register", help="register a run whose rows landed while the DuckDB file was held",
        description="Register a run that landed its Parquet rows but could not register because another process "
        "held the DuckDB file (exit 5), then judge and report it. Selects nothing again.")
    register.add_argument("run_id", metavar="RUN_ID")
    _warehouse_arg(register)
    register.set_defaults(func=cmd_register)

    report = commands.add_parser("report", help="print the report of a run (default: the latest)",
                                 description="Print a registered run's report from the DuckDB file.")
    report.add_argument("run_id", nargs="?", default=None, metavar="RUN_ID")
    _warehouse_arg(report)
    report.add_argument("--format", choices=["text", "markdown"], default="text")
    report.set_defaults(func=cmd_report)

    planner = commands.add_parser(
        "plan", help="size a task set: interval width, smallest detectable drop, requests for a target width",
        description="For a tool (or slice) with N requests at accuracy P: the 95% interval itself, the smallest "
        "drop the report's exact McNemar test detects with --power on N paired requests (every changed request "
        "worse; and with 5% churn), and the requests a target half-width needs. Widths shrink with the square "
        "root of the trials; seeds count as trials only insofar as they disagree (--icc).")
    planner.add_argument("--accuracy", type=float, required=True, metavar="P", help="expected accuracy, 0..1")
    planner.add_argument("--requests", type=_count(1), required=True, metavar="N", help="requests behind the figure")
    planner.add_argument("--seeds", type=_count(1), default=1, metavar="M", help="seeds per request (default 1)")
    planner.add_argument("--icc", type=float, default=1.0, metavar="R",
                         help="correlation of a request's seeds: 1 = seeds always agree (a deterministic "
                              "router; the default), 0 = independent")
    planner.add_argument("--half-width", type=float, default=None, metavar="PTS",
                         help="target 95%% half-width in points (e.g. 5 for +-5)")
    planner.add_argument("--power", type=float, default=0.8, help="power for the detectable drop (default 0.8)")
    planner.set_defaults(func=cmd_plan)

    validate = commands.add_parser("validate", help="run the label checks on a task-set version",
                                   description="Run the Great Expectations label checks on one version file "
                                   "(e.g. tasksets/support/v1.jsonl) and print what was checked.")
    validate.add_argument("version_path", metavar="TASKSET_VERSION_PATH")
    validate.add_argument("--catalogue", action="append", default=None, metavar="NAME",
                          help="catalogue the labels must come from (repeatable; default: every catalogue of the set)")
    validate.add_argument("--weights", default=None, metavar="WINDOW", help="also check weights/WINDOW.json")
    validate.set_defaults(func=cmd_validate)

    importer = commands.add_parser("import", help="turn public benchmark files into a tooleval task set",
                                   description="Import BFCL or MetaTool files as a task set with an experiment.")
    sources = importer.add_subparsers(dest="source", required=True, metavar="SOURCE")
    bfcl = sources.add_parser("bfcl", help="BFCL v4 JSON Lines (multiple, live_multiple, live_irrelevance)",
                              description="Import a BFCL v4 questions file and its possible_answer file.")
    bfcl.add_argument("questions", metavar="QUESTIONS_JSONL")
    bfcl.add_argument("answers", nargs="?", default=None, metavar="ANSWERS_JSONL")
    bfcl.add_argument("--out", required=True, metavar="DIR")
    bfcl.set_defaults(func=cmd_import_bfcl)
    metatool = sources.add_parser("metatool", help="MetaTool plugin_des.json and a Query,Tool CSV",
                                  description="Import MetaTool's tool descriptions and single-tool queries.")
    metatool.add_argument("plugin_des", metavar="PLUGIN_DES_JSON")
    metatool.add_argument("queries", metavar="QUERIES_CSV")
    metatool.add_argument("--out", required=True, metavar="DIR")
    metatool.set_defaults(func=cmd_import_metatool)

    add_tasks_parser(commands)  # tasks done on a tool surface (flows/surface_cli.py)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except InputError as error:
        print(f"tooleval: bad input, nothing was run or written:\n{error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except FileNotFoundError as error:
        print(f"tooleval: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except WarehouseBusy as busy:
        print(f"tooleval: {busy}; try again once the other process has closed it", file=sys.stderr)
        return EXIT_NOT_REGISTERED
    except KeyboardInterrupt:
        print("tooleval: interrupted; landed rows are kept and completed selections are cached: rerun to resume",
              file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001 - the last line of defence: a message, not a traceback
        return report_crash(error, [p for p in (getattr(args, "warehouse", None), getattr(args, "out", None)) if p])


if __name__ == "__main__":
    sys.exit(main())
