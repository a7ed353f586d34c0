"""The ``tooleval`` command: a thin layer that parses arguments, calls one function each (flows/api.py or
the plain function the command is named after) and prints.

Only ``run`` imports and starts Prefect; ``report``, ``validate``, ``plan``, ``import``, ``resample``,
``queue``, ``sql`` and ``compare`` read and write files and DuckDB directly.

The parser is built from light modules (the standard library, flows/cli_help.py, flows/exit_codes.py and the
other flows/*_cli.py parsers): ``tooleval --help``, ``--version`` and every ``COMMAND --help`` import nothing
of the tool itself. Each command imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from flows import gc_pause
from flows.cli_help import DESCRIPTION, EXAMPLES, JOBS, JobsHelpFormatter, VersionAction
from flows.exit_codes import (
    EXIT_BAD_INPUT,
    EXIT_GATE_FAILED,
    EXIT_INTERRUPTED,
    EXIT_MODEL_MISMATCH,
    EXIT_NOT_COMPARABLE,
    EXIT_NOT_JUDGED,
    EXIT_NOT_REGISTERED,
    EXIT_OK,
    verdict_exit_code,
)
from flows.run_cli import add_report_arguments, add_run_arguments, cmd_register, count_at_least, warehouse_arg
from flows.sql_cli import add_sql_parser
from flows.tasks_cli import add_tasks_parser

if TYPE_CHECKING:
    from tasks.importers.bfcl import BfclSource

__all__ = ["EXIT_BAD_INPUT", "EXIT_GATE_FAILED", "EXIT_MODEL_MISMATCH", "EXIT_NOT_JUDGED", "EXIT_OK", "build_parser",
           "main", "verdict_exit_code"]

COMPARE_RESPECTS = ("catalogue", "prompt", "model", "selector", "version")
"""``compare --differ-in``'s choices: tasks/selection/run_compare.py RESPECTS (a test keeps them equal), written
out here so the parser needs no DuckDB."""


def cmd_resample(args: argparse.Namespace) -> int:
    from tasks.traffic.resample_version import describe_resample, load_targets, resample_version

    sampling = {"size": args.size, "floor_per_tool": args.floor, "floor_none": args.floor_none,
                "targets": load_targets(args.targets) if args.targets else None,
                "target_half_width": None if args.half_width is None else args.half_width / 100}
    masking = {"order_ids": args.order_id_pattern, "gift_cards": args.gift_card_pattern}
    summary = resample_version(args.taskset, traffic=args.traffic, traffic_format=args.traffic_format,
                               traffic_table=args.traffic_table, window=args.window, weeks=args.weeks,
                               seed=args.seed, sampling=sampling, masking=masking)
    print("\n".join(describe_resample(summary, args.taskset)))
    return EXIT_OK


def cmd_queue_import(args: argparse.Namespace) -> int:
    from tasks.traffic.labelling_queue import import_queue

    result = import_queue(args.queue_file, args.taskset, partial=args.partial)
    if result.reused and not result.n_decided:
        print(f"nothing new: every decision in {args.queue_file} is already in {result.version}"
              + (f"; {result.n_still_provisional} still provisional" if result.n_still_provisional else ""))
        return EXIT_OK
    verb = "found identical" if result.reused else "wrote"
    print(f"{verb} {result.version} (parent {result.from_version}): {result.n_decided} labels adjudicated, "
          f"{result.n_changed} changed from the label before, {result.n_still_provisional} still provisional")
    if result.rest_queue:
        print(f"queue of the rest: {result.rest_queue} (label it, then `tooleval queue import` it; decisions added to "
              f"the queue you imported are applied to {result.version} too)")
    return EXIT_OK


def cmd_server_status(args: argparse.Namespace) -> int:
    from flows.prefect_server import status_lines
    from flows.warm_runner import status_line

    print("\n".join(status_lines() + [line for line in [status_line()] if line]))
    return EXIT_OK


def cmd_server_stop(args: argparse.Namespace) -> int:
    from flows.prefect_server import state_dir, status_lines, stop_kept, unused

    if not unused(state_dir()):
        print("tooleval server stop: a run is using the kept Prefect server; stop it when the run has ended",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    from flows import warm_runner

    runner, stopped = warm_runner.stop(), stop_kept()  # the runner first: it ends by itself once the server goes
    print(f"stopped the kept Prefect server at {stopped.api_url}" if stopped else status_lines()[0])
    if runner:
        print(f"stopped its warm runner (pid {runner})")
    return EXIT_OK


def cmd_queue_export(args: argparse.Namespace) -> int:
    from tasks.traffic.labelling_queue import export_csv

    out = export_csv(args.queue_file, args.out)
    print(f"wrote {out}: one row per request, fill in label, decided_by, decided_at (with a time zone, e.g. "
          f"2026-12-01T10:15:00Z) and reason; then `tooleval queue import {out}`")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from flows import api
    from tasks.report.render import print_indented, print_table, terminal_console
    from tasks.selection.run_compare import NotComparable, comparison_headline, comparison_tables

    try:
        results = api.compare(args.run_a, args.run_b, args.warehouse, arm_a=args.arm, arm_b=args.arm_b,
                              differ_in=args.differ_in or [])
    except NotComparable as refused:
        print(f"tooleval compare: {refused}", file=sys.stderr)
        return EXIT_NOT_COMPARABLE
    console = terminal_console()
    for n, result in enumerate(results):
        if n:
            console.print()
        for line in comparison_headline(result):
            print_indented(console, line)
        for table in comparison_tables(result):
            console.print()
            print_table(table, console)
    return EXIT_OK


def cmd_phoenix(args: argparse.Namespace) -> int:
    from flows import api
    from tasks.tracing.phoenix_experiments import publication_lines

    published = api.publish_to_phoenix(args.run_id, args.warehouse, base_url=args.phoenix,
                                       experiment=args.experiment)
    for line in publication_lines(published):
        print(line)
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    from flows.progress import fitted
    from tasks.stats.planner import plan

    if not 0 <= args.accuracy <= 1:
        print("tooleval: --accuracy is a fraction between 0 and 1 (e.g. 0.88)", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not 0 <= args.icc <= 1:
        print("tooleval: --icc is a correlation between 0 and 1 (e.g. 0.5)", file=sys.stderr)
        return EXIT_BAD_INPUT
    result = plan(args.accuracy, args.requests, seeds=args.seeds, icc=args.icc,
                  target_half_width=args.half_width / 100 if args.half_width else None, power=args.power)
    print("\n".join(fitted(line) for line in result.lines()))
    return EXIT_OK


def cmd_fit(args: argparse.Namespace) -> int:
    from flows import api

    print("\n".join(api.fit_cutoff(args.experiment, args.arm, args.out, args.salt).lines()))
    return EXIT_OK


def cmd_train(args: argparse.Namespace) -> int:
    from flows import api

    trained = api.train(args.version_path, args.out, args.catalogue, args.folds, args.unseen_weight, args.encoder,
                        args.fine_tune, args.fine_tune_epochs, fine_tune_seed=args.fine_tune_seed,
                        context_turns=args.context_turns,
                        progress=lambda line: print(line, file=sys.stderr, flush=True))
    print("\n".join(trained.lines()))
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from flows import api
    from flows.progress import fitted

    print("\n".join(fitted(line) for line in api.validate(args.version_path, args.catalogue, args.weights,
                                                           args.warehouse).splitlines()))
    return EXIT_OK


def cmd_freeze(args: argparse.Namespace) -> int:
    from tasks.taskset.freeze_file import freeze_file

    print("\n".join(freeze_file(args.version_path, args.slice, parent=args.parent, notes=args.notes,
                                 catalogues=args.catalogue, surfaces=args.surface).lines()))
    return EXIT_OK


def bfcl_sources(questions: str | None, answers: str | None, slices: list[str], label_none: list[str]
                 ) -> list[BfclSource]:
    """The files of ``tooleval import bfcl``: one positional file, or ``--slice NAME=QUESTIONS[,ANSWERS]``
    (repeatable) with ``--label-none NAME`` for each slice labelled 'none' throughout."""
    from tasks.files.input_errors import InputError
    from tasks.importers.bfcl import BfclSource, category_of

    if questions is not None and slices:
        raise InputError.one(questions, "", "one-form", "give one questions file or --slice NAME=FILE[,ANSWERS] "
                             "options, not both")
    if questions is not None:
        if any(name for name in label_none):
            raise InputError.one(questions, "", "label-none", "with one questions file, --label-none takes no slice name")
        return [BfclSource(category_of(Path(questions)), Path(questions), Path(answers) if answers else None,
                           label_none=bool(label_none))]
    if not slices:
        raise InputError.one("tooleval import bfcl", "", "sources-given",
                             "no BFCL file given: QUESTIONS_JSONL [ANSWERS_JSONL], or --slice NAME=FILE[,ANSWERS]")
    sources = []
    for given in slices:
        name, eq, files = given.partition("=")
        paths = files.split(",")
        if not eq or not name or not paths[0] or len(paths) > 2:
            raise InputError.one(given, "", "slice-option", "--slice takes NAME=QUESTIONS or NAME=QUESTIONS,ANSWERS")
        sources.append(BfclSource(name, Path(paths[0]), Path(paths[1]) if len(paths) == 2 else None,
                                  label_none=name in label_none))
    unknown = sorted(set(label_none) - {source.slice for source in sources})
    if unknown:
        raise InputError.one("tooleval import bfcl", "", "label-none",
                             f"--label-none names no --slice: {', '.join(repr(n) for n in unknown)}")
    return sources


def cmd_import_bfcl(args: argparse.Namespace) -> int:
    from tasks.importers.bfcl import import_bfcl_slices

    sources = bfcl_sources(args.questions, args.answers, args.slice or [], args.label_none or [])
    summary = import_bfcl_slices(sources, Path(args.out))
    print("\n".join(summary.lines()))
    return EXIT_OK


def cmd_import_metatool(args: argparse.Namespace) -> int:
    from tasks.importers.metatool import import_metatool

    summary = import_metatool(Path(args.plugin_des), Path(args.queries), Path(args.out))
    print("\n".join(summary.lines()))
    return EXIT_OK


def cmd_import_mcp(args: argparse.Namespace) -> int:
    from flows import api
    from tasks.importers.mcp_catalogue import parse_env_options

    summary = api.import_mcp(args.name, args.taskset, command=args.server_command, url=args.url, cwd=args.cwd,
                             env=parse_env_options(args.env or []), expected_arguments=args.expected_arguments)
    print("\n".join(summary.lines()))
    return EXIT_OK


def cmd_import_arguments(args: argparse.Namespace) -> int:
    from tasks.importers.argument_file import import_arguments

    print("\n".join(import_arguments(Path(args.file), Path(args.taskset), args.catalogue or [], args.notes)))
    return EXIT_OK


class CommandAfterDashes(argparse.ArgumentParser):
    """argparse's parser, but with ``tail_dest`` set every word after the first ``--`` is one list under that
    name (a server's command and its args: ``tooleval import mcp memory --taskset DIR -- node server.js -x``),
    wherever the other positionals and options stand (argparse alone gives them no slot after a positional)."""

    tail_dest: str | None = None

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        if self.tail_dest is None or args is None or "--" not in args:
            return super().parse_known_args(args, namespace)
        words = list(args)
        split = words.index("--")
        namespace, extras = super().parse_known_args(words[:split], namespace)
        setattr(namespace, self.tail_dest, words[split + 1:])
        return namespace, extras


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tooleval", description=DESCRIPTION, epilog=EXAMPLES,
                                     formatter_class=JobsHelpFormatter)
    parser.add_argument("--version", action=VersionAction, help="print the installed version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                     title="commands, by what you came to do")
    commands.jobs = JOBS  # listed by job in --help (flows/cli_help.py JobsHelpFormatter)

    run = commands.add_parser("run", help="run an experiment (the evaluate flow) and print its report",
                              description="Resolve the arms, check the task set, run every arm x seed (select with "
                              "each arm, or run the tasks on each arm's surface), land rows as Parquet, register "
                              "them in DuckDB, judge the gates and print the report.")
    add_run_arguments(run)

    resample = commands.add_parser(
        "resample", help="draw a new task-set version from the production log",
        description="Read a window of production turns, mask personal data, write the window's production "
        "weights and a new version with provisional labels (production's first tool) plus its labelling queue. "
        "Defaults come from <taskset>/production/traffic.yaml.")
    resample.add_argument("taskset", type=Path, metavar="TASKSET_DIR", help="e.g. tasksets/support")
    resample.add_argument("--traffic", default=None, metavar="LOG",
                          help="production log: Parquet file or folder, JSONL, DuckDB file, OpenInference export")
    resample.add_argument("--format", dest="traffic_format", default=None,
                          help="the log's format (default: traffic.yaml's, else auto: from the file name)",
                          choices=["auto", "parquet", "jsonl", "duckdb", "openinference"])
    resample.add_argument("--table", dest="traffic_table", default=None, metavar="NAME",
                          help="table name in a DuckDB log (default: traffic.yaml's, else turns)")
    resample.add_argument("--window", default=None, metavar="ID", help="e.g. 2026-W44-W47 (default: the last weeks)")
    resample.add_argument("--weeks", type=count_at_least(1), default=None, metavar="N",
                          help="weeks in the default window (default: traffic.yaml's, else 4)")
    resample.add_argument("--size", type=count_at_least(1), default=None, metavar="N",
                          help="requests to draw (default: traffic.yaml's)")
    resample.add_argument("--floor", type=count_at_least(0), default=None, metavar="N",
                          help="at least this many requests per tool (default: traffic.yaml's)")
    resample.add_argument("--floor-none", type=count_at_least(0), default=None, metavar="N",
                          help="at least this many 'none' requests (default: traffic.yaml's)")
    resample.add_argument("--targets", default=None, metavar="JSON", help="target count per tool (JSON file)")
    resample.add_argument("--half-width", type=float, default=None, metavar="PTS",
                          help="plan each tool with >= 2%% of traffic for a 95%% interval of +-PTS points "
                               "(the sample-size planner); the others get the floor")
    resample.add_argument("--seed", type=int, default=None, metavar="N", help="sampling seed (default: derived from the window)")
    resample.add_argument("--order-id-pattern", action="append", default=None, metavar="REGEX",
                          help="mask order ids matching REGEX (repeatable; default: traffic.yaml)")
    resample.add_argument("--gift-card-pattern", action="append", default=None, metavar="REGEX",
                          help="mask gift-card codes matching REGEX (repeatable; default: traffic.yaml)")
    resample.set_defaults(func=cmd_resample)

    queue = commands.add_parser("queue", help="labelling queues of resampled versions",
                                description="Work with the labelling queue of a provisional version.")
    queue_commands = queue.add_subparsers(dest="queue_command", required=True, metavar="ACTION")
    queue_import = queue_commands.add_parser(
        "import", help="import a decided queue as a new adjudicated version",
        description="Check every decision (label offered, who and when with a time zone, why when the label "
        "changes) and write a new version whose decided labels are adjudicated, with one adjudication record per "
        "decision. JSONL or CSV. A partial import writes a queue of the rest; importing again (the rest's queue, or "
        "the same queue with more decisions) writes a child of the last partial version, never a sibling.")
    queue_import.add_argument("queue_file", type=Path, metavar="QUEUE_FILE",
                              help="the decided queue: queue/<version>.queue.jsonl, or its CSV (tooleval queue export)")
    queue_import.add_argument("--taskset", type=Path, default=None, metavar="DIR",
                              help="the task set (default: the folder above queue/)")
    queue_import.add_argument("--partial", action="store_true",
                              help="import the decided items and keep the undecided ones provisional")
    queue_import.set_defaults(func=cmd_queue_import)
    queue_export = queue_commands.add_parser(
        "export", help="write a queue as CSV for a spreadsheet",
        description="Write queue/<version>.queue.jsonl as CSV (UTF-8 with a byte-order mark; the conversation in one "
        "cell, the decision columns label, decided_by, decided_at, reason last). `tooleval queue import` reads it "
        "back; only request_id, version and the decision columns are read.")
    queue_export.add_argument("queue_file", type=Path, metavar="QUEUE_JSONL", help="queue/<version>.queue.jsonl")
    queue_export.add_argument("--out", type=Path, default=None, metavar="CSV",
                              help="where to write (default: beside the queue, <version>.queue.csv)")
    queue_export.set_defaults(func=cmd_queue_export)

    server = commands.add_parser(
        "server", help="the local Prefect server kept between runs",
        description="The local Prefect server the first `tooleval run` starts and later runs use; it stops after "
        "TOOLEVAL_KEEP_SERVER minutes (default 10) with no run. TOOLEVAL_KEEP_SERVER=0: a server per run; "
        "PREFECT_API_URL: your own server. Beside it waits a warm runner, which later runs are handed to so that "
        "they skip their imports (TOOLEVAL_WARM_RUN=0: none).")
    server_commands = server.add_subparsers(dest="server_command", required=True, metavar="ACTION")
    server_commands.add_parser("status", help="where the kept Prefect server is, and whether a run uses it",
                               description="Where the kept Prefect server of this Prefect home is, whether it "
                               "answers and whether a run is using it; whether its warm runner waits.").set_defaults(func=cmd_server_status)
    server_commands.add_parser("stop", help="stop the kept Prefect server now (not while a run uses it)",
                               description="Stop the kept Prefect server of this Prefect home and its warm runner "
                               "now; refused while a run is using the server.").set_defaults(func=cmd_server_stop)

    register = commands.add_parser(
        "register", help="register a run whose rows landed while the DuckDB file was held",
        description="Register a run that landed its Parquet rows but could not register because another process "
        "held the DuckDB file (exit 5), then judge and report it. Selects nothing again.")
    register.add_argument("run_id", metavar="RUN_ID", help="the run id its exit-5 message named")
    warehouse_arg(register)
    register.set_defaults(func=cmd_register)

    add_report_arguments(commands.add_parser(
        "report", help="print the report of a run (default: the latest)",
        description="Print a registered run's report (either instrument's) from the DuckDB file."))

    compare = commands.add_parser(
        "compare", help="paired per-slice, per-tool and weighted changes between two registered runs",
        description="Compare an arm of RUN_A with an arm of RUN_B (default: every arm name both runs have) on the "
        "requests both answered, paired on request ids and on the seeds they share: per slice, per tool "
        "(requests labelled the same in both) and traffic-weighted, with 95% intervals over every seed of every request. "
        "Refuses (exit 7), naming the ids, when the arms differ in catalogue, prompt, pinned or served model id, "
        "selector or task-set version beyond the one respect declared with --differ-in.")
    compare.add_argument("run_a", metavar="RUN_A", help="the run compared from (e.g. last month's)")
    compare.add_argument("run_b", metavar="RUN_B", help="the run compared to")
    compare.add_argument("--arm", default=None, metavar="NAME", help="the arm of RUN_A (and of RUN_B unless --arm-b)")
    compare.add_argument("--arm-b", default=None, metavar="NAME", help="the arm of RUN_B when its name differs")
    compare.add_argument("--differ-in", action="append", choices=list(COMPARE_RESPECTS), default=None,
                         help="the respect the runs are meant to differ in (model covers pinned and served ids); "
                              "repeatable, but more than one is not a comparison of one change")
    warehouse_arg(compare)
    compare.set_defaults(func=cmd_compare)

    phoenix = commands.add_parser(
        "phoenix", help="a registered run as Phoenix experiments (one per arm) over its task set as a dataset",
        description="Publish a registered selection run to Phoenix: its task-set version as a dataset (one "
        "example per request, the slice as its split) and each arm as an experiment over it (a run per row, "
        "one repetition per seed, the label check and the judge as evaluations), to compare the arms in "
        "Phoenix's UI. Publishing again adds only what is missing.")
    phoenix.add_argument("run_id", nargs="?", default=None, metavar="RUN_ID", help="default: the latest run")
    phoenix.add_argument("--phoenix", default=None, metavar="URL",
                         help="Phoenix's address (default: where the run's traces went, else http://127.0.0.1:6006)")
    phoenix.add_argument("--experiment", default=None, metavar="FILE",
                         help="the run's experiment file, when it is no longer at the path the run recorded")
    warehouse_arg(phoenix)
    phoenix.set_defaults(func=cmd_phoenix)

    planner = commands.add_parser(
        "plan", help="size a task set: interval width, smallest detectable drop, requests for a target width",
        description="For a tool (or slice) with N requests x M seeds at accuracy P: the 95% interval itself, the "
        "smallest drop the report's reading detects with --power (its 95% paired change interval excludes 0), and "
        "the requests a target half-width needs. Widths shrink with the square root of the trials; seeds count as "
        "trials only insofar as they disagree (--icc). The drop assumes the project's simulation model: with "
        "--icc below 1 a shift (every request loses the same share of its accuracy, requests also changing both "
        "ways by chance); at --icc 1 a deterministic router losing requests one way (and with 5% churn, and as if "
        "its seeds varied at icc 0.5).")
    planner.add_argument("--accuracy", type=float, required=True, metavar="P", help="expected accuracy, 0..1")
    planner.add_argument("--requests", type=count_at_least(1), required=True, metavar="N", help="requests behind the figure")
    planner.add_argument("--seeds", type=count_at_least(1), default=1, metavar="M", help="seeds per request (default 1)")
    planner.add_argument("--icc", type=float, default=1.0, metavar="R",
                         help="correlation of two seeds' verdicts on the same request, given its accuracy: "
                              "1 = seeds always agree (a deterministic router; the default), 0 = independent "
                              "(in the simulation model a seed repeats the request's shared verdict with "
                              "probability sqrt(R))")
    planner.add_argument("--half-width", type=float, default=None, metavar="PTS",
                         help="target 95%% half-width in points (e.g. 5 for +-5)")
    planner.add_argument("--power", type=float, default=0.8, metavar="P", help="power for the detectable drop (default 0.8)")
    planner.set_defaults(func=cmd_plan)

    fit = commands.add_parser(
        "fit", help="fit an arm's 'none' cut-off and temperature on half the labelled requests, confirm them "
        "on the other half",
        description="Fit the 'none' cut-off and the softmax temperature of an arm's offline router (lexical, "
        "embedding or trained; or the router of a routed arm) on one half of its task-set version (a sha256 hash "
        "split of the request ids), confirm both on the other half (accuracy; ECE with the router's own "
        "temperature and the fitted one, beside the ECE a calibrated router would show) and write them as a file "
        "the experiment names with `abstain_cutoff: FILE`: the run uses both. For a trained model that learned "
        "'none' the cut-off is a margin over that learned 'none' (0: the model as trained). On a version where "
        "no request expects 'none' it fits the temperature alone: the router never abstains there.")
    fit.add_argument("experiment", type=Path, metavar="EXPERIMENT_FILE",
                     help="e.g. tasksets/support/experiments/routers.yaml")
    fit.add_argument("--arm", required=True, metavar="NAME", help="the arm whose router is fitted")
    fit.add_argument("--out", default=None, metavar="FILE",
                     help="where to write it (default: cutoffs/ARM-VERSION.json beside the experiment)")
    fit.add_argument("--salt", default=None, metavar="TEXT", help="salt of the hash split (default tooleval-cutoff-v1)")
    fit.set_defaults(func=cmd_fit)

    train = commands.add_parser(
        "train", help="learn a decision model (selector / router 'trained') from a task-set version",
        description="Learn a decision model from a task-set version's labelled requests: a conditional logit over "
        "cosine (MiniLM, or --encoder's), BM25, kNN-to-examples and embedding-probe features per (request, tool), "
        "'none' as an option of its own, temperature-calibrated on cross-fitted held-out predictions. Offline: "
        "nothing is downloaded.")
    train.add_argument("version_path", metavar="TASKSET_VERSION_PATH", help="e.g. tasksets/support/v1.jsonl")
    train.add_argument("--out", required=True, metavar="FILE", help="the model file to write (JSON)")
    train.add_argument("--catalogue", action="append", default=None, metavar="NAME",
                       help="catalogue offered with requests that have no tools of their own (repeatable; "
                       "default: every catalogue of the set, merged)")
    train.add_argument("--folds", type=int, default=5, metavar="K",
                       help="cross-fitting folds (default 5); 1 = one model that refuses its own training requests")
    train.add_argument("--unseen-weight", type=float, default=1.0, metavar="W",
                       help="weight of each request's transfer copy, learned as if no labelled example existed, so "
                       "tools and domains without examples are scored on cosine and BM25 (default 1; 0 = no copies)")
    train.add_argument("--encoder", default=None, metavar="DIR",
                       help="a local sentence-transformers model directory to compute the cosine, kNN and probe "
                       "features with (default: the packaged all-MiniLM-L6-v2); the model file records its path")
    train.add_argument("--fine-tune", action="store_true",
                       help="experimental (a checkout's experimental/ folder, not installed; no figure on data "
                       "it was not tuned on): also fine-tune the encoder on the requests, once per fold model and "
                       "once on all (saved in FILE's .encoders folder, ~90 MB each), and score by the product of the "
                       "logit and the fine-tuned cosine; slow: six encoders for 5 folds, 4-5 minutes each on BFCL "
                       "live's 840-1,053 requests and 2 CPU cores")
    train.add_argument("--fine-tune-epochs", type=int, default=2, metavar="N",
                       help="experimental: epochs of each fine-tuning (default 2)")
    train.add_argument("--fine-tune-seed", type=int, default=0, metavar="S",
                       help="experimental: which draw of the fine-tuning (default 0): another S tunes other encoders "
                       "on the same requests, to see how much one draw moves the figures")
    train.add_argument("--context-turns", type=int, default=None, metavar="N",
                       help="turns of each conversation read before its last user turn, the last turn alone read "
                       "beside them (default 2, 0 with --fine-tune; 0: the last user turn alone); recorded in the "
                       "model file, which scores with the same")
    train.set_defaults(func=cmd_train)

    validate = commands.add_parser("validate", help="run the label checks on a task-set version, or every check "
                                   "a run makes on an experiment",
                                   description="Run the Great Expectations label checks on one version file "
                                   "(e.g. tasksets/support/v1.jsonl) and print what was checked; or, given an "
                                   "experiment file, every check `tooleval run` makes before its first model call "
                                   "(arms, comparisons, criteria, the task set's label or task checks), with nothing "
                                   "run or written, and what the run will cost per arm with hosted-model calls (from "
                                   "the past rows of --warehouse where it has some).")
    validate.add_argument("version_path", metavar="PATH",
                          help="a version, e.g. tasksets/support/v1.jsonl, or an experiment, e.g. "
                          "tasksets/support/experiments/ladder.yaml")
    validate.add_argument("--catalogue", action="append", default=None, metavar="NAME",
                          help="catalogue the labels must come from (repeatable; default: every catalogue of the "
                          "set; a version only: an experiment names its own)")
    validate.add_argument("--weights", default=None, metavar="WINDOW",
                          help="also check weights/WINDOW.json (a version only)")
    warehouse_arg(validate)  # an experiment's cost forecast reads its past rows
    validate.set_defaults(func=cmd_validate)

    freeze = commands.add_parser(
        "freeze", help="freeze a task-set version (requests or tasks): write its manifest with the content hash",
        description="Check a version file as a run would (requests: the label checks against every catalogue of "
        "the set, or --catalogue; tasks, in a set with surfaces/: the task checks against every surface, or --surface) "
        "and write "
        "VERSION.manifest.json beside it: the hash of its files, its slices, counts and parent. A frozen version "
        "is immutable: freezing it again with the same files writes nothing; changed files, slices, parent or "
        "notes are refused (write a new version). Bad input names the file, the line and the rule, and nothing is "
        "written.",
        epilog="examples:\n"
        "  tooleval freeze tasksets/support/v2.jsonl --parent v1\n"
        "  tooleval freeze tasksets/mcp_office/t2.jsonl --slice crm --slice files",
        formatter_class=JobsHelpFormatter)
    freeze.add_argument("version_path", metavar="VERSION_JSONL",
                        help="the version's file, e.g. tasksets/support/v2.jsonl or tasksets/support_tasks/t2.jsonl")
    freeze.add_argument("--slice", action="append", default=None, metavar="NAME",
                        help="a slice the version's lines may belong to (repeatable, in the order reports list them; "
                        "default: the slices its lines name, in the order they first appear)")
    freeze.add_argument("--parent", default=None, metavar="VERSION",
                        help="the frozen version this one was derived from, e.g. v1")
    freeze.add_argument("--notes", default=None, metavar="TEXT", help="where the requests or tasks came from")
    freeze.add_argument("--catalogue", action="append", default=None, metavar="NAME",
                        help="requests: a catalogue the labels must come from (repeatable; default: every catalogue "
                        "of the set)")
    freeze.add_argument("--surface", action="append", default=None, metavar="NAME",
                        help="tasks: a surface to check them against (repeatable; default: every surface of the set)")
    freeze.set_defaults(func=cmd_freeze)

    importer = commands.add_parser("import", help="turn public benchmark files into a tooleval task set, or an MCP "
                                   "server's tools into a catalogue",
                                   description="Import BFCL or MetaTool files as a task set with an experiment, or "
                                   "the tools an MCP server lists as a versioned catalogue.")
    sources = importer.add_subparsers(dest="source", required=True, metavar="SOURCE", parser_class=CommandAfterDashes)
    bfcl = sources.add_parser(
        "bfcl", help="BFCL v4 JSON Lines (multiple, live_multiple, live_irrelevance)",
        formatter_class=JobsHelpFormatter,
        description="Import a BFCL v4 questions file and its possible_answer file, or several files as slices of "
        "one set. Labels come from the answers file (an empty ground_truth means 'none') or, for a file where no "
        "offered tool fits any request, from --label-none; never from a file's name. A text offered the same tools "
        "with two labels (across the slices or within one) is a label conflict: its requests are dropped and listed.",
        epilog="example (answerable and irrelevant requests, two slices of one set):\n"
        "  tooleval import bfcl \\\n"
        "    --slice answerable=live_multiple.json,live_multiple_answers.json \\\n"
        "    --slice irrelevant=live_irrelevance.json --label-none irrelevant \\\n"
        "    --out /tmp/bfcl-live")
    bfcl.add_argument("questions", nargs="?", default=None, metavar="QUESTIONS_JSONL",
                      help="e.g. BFCL_v4_multiple.json (JSON Lines)")
    bfcl.add_argument("answers", nargs="?", default=None, metavar="ANSWERS_JSONL",
                      help="its possible_answer file (omit with --label-none)")
    bfcl.add_argument("--slice", action="append", metavar="NAME=QUESTIONS[,ANSWERS]",
                      help="one file as one slice of the set (repeatable)")
    bfcl.add_argument("--label-none", action="append", nargs="?", const="", metavar="SLICE",
                      help="every request of the file (or of --slice SLICE) expects 'none': no offered tool fits")
    bfcl.add_argument("--out", required=True, metavar="DIR", help="the task-set folder to write")
    bfcl.set_defaults(func=cmd_import_bfcl)
    metatool = sources.add_parser("metatool", help="MetaTool plugin_des.json and a Query,Tool CSV",
                                  description="Import MetaTool's tool descriptions and single-tool queries.")
    metatool.add_argument("plugin_des", metavar="PLUGIN_DES_JSON", help="the tools: name and description")
    metatool.add_argument("queries", metavar="QUERIES_CSV", help="Query,Tool rows, one tool per query")
    metatool.add_argument("--out", required=True, metavar="DIR", help="the task-set folder to write")
    metatool.set_defaults(func=cmd_import_metatool)
    mcp = sources.add_parser(
        "mcp", help="the tools an MCP server lists, as catalogue NAME-vN of a task set",
        usage="%(prog)s NAME --taskset DIR [--cwd DIR] [--env KEY=VALUE]\n"
        "                                -- COMMAND [ARGS...]\n"
        "       %(prog)s NAME --taskset DIR --url URL",
        formatter_class=JobsHelpFormatter,
        description="Start an MCP server (its command after `--`, over stdio) or reach one (--url, streamable "
        "HTTP), list every tool and write DIR/catalogues/NAME-v1.json: the tools (name, description, inputSchema as "
        "parameters), their annotations, and the server's name, version and content hash. Importing again writes "
        "NAME-v2.json (previous: NAME-v1) and says what changed, or nothing when the tools are the same. Env values "
        "are passed to the server, never written.",
        epilog="example:\n"
        "  tooleval import mcp memory --taskset tasksets/mcp_office \\\n"
        "    --env MEMORY_FILE_PATH='{state_dir}/memory.jsonl' \\\n"
        "    --cwd tasksets/mcp_office \\\n"
        "    -- node node_modules/@modelcontextprotocol/server-memory/dist/index.js")
    mcp.tail_dest = "server_command"
    mcp.add_argument("name", metavar="NAME", help="the catalogue's base name (letters, digits, '_', '-')")
    mcp.add_argument("--taskset", required=True, metavar="DIR", help="the task-set folder (it must exist)")
    mcp.add_argument("--url", default=None, metavar="URL", help="a streamable-HTTP server instead of a command")
    mcp.add_argument("--cwd", default=None, metavar="DIR", help="the command's working directory (default: here)")
    mcp.add_argument("--env", action="append", metavar="KEY=VALUE",
                     help="an environment variable for the command (repeatable; KEY='$NAME' reads NAME from "
                     "this environment); never written to the catalogue")
    mcp.add_argument("--expected-arguments", default=None, metavar="FILE",
                     help="JSON Lines of {id, expected_arguments}: checked against the listed tools and written as "
                     "the set's next version of requests (the newest one with these expected arguments)")
    mcp.set_defaults(func=cmd_import_mcp, server_command=[])
    arguments = sources.add_parser(
        "arguments", help="expected arguments per request, as a task set's next version",
        description="Read a JSON Lines file of {\"id\": REQUEST_ID, \"expected_arguments\": {PARAMETER: MATCHER}}, "
        "check every line against the task set's newest version of requests and the tools of its catalogues "
        "(unknown id, a parameter the tool does not have, a bad matcher: named by line and rule), run the label "
        "checks, and write the next version (parent: that one) with the requests' expected arguments, frozen. "
        "Nothing is written on bad input, or when that version holds them already. The same file can come with "
        "an MCP server's tools: tooleval import mcp ... --expected-arguments FILE.",
        epilog="example:\n  tooleval import arguments order_ids.jsonl --taskset tasksets/support \\\n"
        "    --catalogue giftcards",
        formatter_class=JobsHelpFormatter)
    arguments.add_argument("file", metavar="FILE", help="JSON Lines: one request's expected arguments a line")
    arguments.add_argument("--taskset", required=True, metavar="DIR", help="the task-set folder")
    arguments.add_argument("--catalogue", action="append", default=None, metavar="NAME",
                           help="a catalogue the tools come from (repeatable; default: every catalogue of the set)")
    arguments.add_argument("--notes", default=None, metavar="TEXT",
                           help="where the expected arguments came from (the new version's notes)")
    arguments.set_defaults(func=cmd_import_arguments)

    add_sql_parser(commands)  # SQL over a snapshot of the warehouse (flows/sql_cli.py)
    add_tasks_parser(commands)  # tasks done on a tool surface (flows/tasks_cli.py)
    return parser


def _raised(error: BaseException, module: str, name: str) -> bool:
    """Whether ``error`` is ``module.name``, without importing ``module``: an error of a module that was never
    imported cannot be one of its classes."""
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(error, getattr(loaded, name))


HELD_COLLECTOR = frozenset({"cmd_validate", "cmd_tasks_validate", "cmd_compare"})
"""Commands that import much, keep what they import to the end and answer within a second: Python's cyclic
garbage collector is held off while they run (it would scan the imported modules' objects again and again to
find little garbage) and turned on again when they return. The console script holds it off while it imports
this module (flows/launch.py); every other command turns it on once its arguments are read (a run, once
Prefect is imported: flows/api.py)."""


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = getattr(getattr(args, "func", None), "__name__", "")
    if command not in HELD_COLLECTOR and command != "cmd_run":
        gc_pause.resume()
    held = command in HELD_COLLECTOR and gc.isenabled()
    if held:
        gc.disable()
    try:
        return _command(args, command)
    finally:
        if held:
            gc.enable()


def _command(args: argparse.Namespace, command: str) -> int:
    try:
        if getattr(args, "out", None):
            from tasks.files.write_probe import check_out_path

            check_out_path(args.out)
        return args.func(args)
    except BrokenPipeError:  # `tooleval ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        print("tooleval: interrupted; landed rows are kept and finished selections and task runs are cached: rerun to "
              "resume",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:  # noqa: BLE001 - the last line of defence: a message, not a traceback
        if _raised(error, "tasks.files.input_errors", "InputError"):
            print(f"tooleval: bad input, nothing was run or written:\n{error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if isinstance(error, FileNotFoundError):
            print(f"tooleval: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if _raised(error, "warehouse.connect", "WarehouseBusy"):
            print(f"tooleval: {error}; try again once the other process has closed it", file=sys.stderr)
            return EXIT_NOT_REGISTERED
        from flows.crash import AFTER_PUBLISH, AFTER_READING, RESUMES, report_crash

        resumes = (AFTER_PUBLISH if command == "cmd_phoenix" else AFTER_READING
                   if command in ("cmd_report", "cmd_sql", "cmd_compare", "cmd_plan", "cmd_tasks_report") else RESUMES)
        return report_crash(error, [p for p in (_warehouse_folder(args), getattr(args, "out", None)) if p], resumes)


def _warehouse_folder(args: argparse.Namespace) -> str | None:
    """The folder a command wrote to: ``--warehouse``, else the default one (where a full disk or a folder
    that stopped accepting writes is looked for)."""
    if not hasattr(args, "warehouse"):
        return None
    try:
        from warehouse.location import warehouse_at

        return str(warehouse_at(args.warehouse).root)
    except Exception:  # noqa: BLE001 - a crash message never fails on a bad location
        return args.warehouse


if __name__ == "__main__":
    sys.exit(main())
