"""The ``tooleval`` command: a thin layer, each subcommand calls one function.

Only ``run`` starts Prefect; ``report``, ``validate`` and ``import`` read files and DuckDB directly.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tasks.input_errors import InputError

EXIT_OK, EXIT_GATE_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def _warehouse_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--warehouse", metavar="DIR", default=None,
                        help="warehouse directory (default: $TOOLEVAL_WAREHOUSE, else warehouse/ in the checkout)")


def cmd_run(args: argparse.Namespace) -> int:
    from flows.prefect_settings import apply_prefect_defaults
    from tasks.prepare_run import prepare_run
    from tasks.report_files import read_report
    from tasks.render_report import render_terminal
    from warehouse.location import warehouse_at

    prepare_run(args.experiment)  # fail fast, before Prefect starts, on any bad input
    apply_prefect_defaults()
    from flows.evaluate import evaluate

    summary = evaluate(experiment_path=str(args.experiment), warehouse_dir=args.warehouse,
                       use_cache=not args.no_cache)
    warehouse = warehouse_at(summary.warehouse)
    render_terminal(read_report(warehouse, summary.run_id))
    print(f"\nrun {summary.run_id}: {summary.n_rows:,} rows in {summary.n_units} work units, "
          f"{summary.n_cache_hits:,} from cache, {summary.n_failures:,} invalid/error/empty")
    print(f"DuckDB file:   {warehouse.db_path}")
    print(f"Parquet rows:  {warehouse.rows_dir / ('run_id=' + summary.run_id)}")
    for kind, path in summary.reports.items():
        print(f"{kind + ' report:':<14} {path}")
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from tasks.render_report import render_markdown, render_terminal
    from tasks.report_files import read_report
    from warehouse.location import warehouse_at

    report = read_report(warehouse_at(args.warehouse), args.run_id)
    if args.format == "markdown":
        print(render_markdown(report))
    else:
        render_terminal(report)
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from tasks.validate_version import validate_version_file

    summary = validate_version_file(Path(args.version_path), args.catalogue, args.weights)
    print(summary)
    return EXIT_OK


def cmd_import_bfcl(args: argparse.Namespace) -> int:
    from tasks.importers.bfcl import import_bfcl

    summary = import_bfcl(Path(args.questions), Path(args.answers) if args.answers else None, Path(args.out))
    print("\n".join(summary.lines()))
    return EXIT_OK


def cmd_import_metatool(args: argparse.Namespace) -> int:
    from tasks.importers.metatool import import_metatool

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
    run.set_defaults(func=cmd_run)

    report = commands.add_parser("report", help="print the report of a run (default: the latest)",
                                 description="Print a registered run's report from the DuckDB file.")
    report.add_argument("run_id", nargs="?", default=None, metavar="RUN_ID")
    _warehouse_arg(report)
    report.add_argument("--format", choices=["text", "markdown"], default="text")
    report.set_defaults(func=cmd_report)

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
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except InputError as error:
        print(f"tooleval: bad input, nothing was run or written:\n{error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (FileNotFoundError, KeyError) as error:
        print(f"tooleval: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
