"""The commands that run, register and report an experiment, whichever instrument it is for (``tooleval run``
and ``tooleval tasks run``, ``register``, ``report`` and ``tasks report``), and the flags they share. Each
parses, calls one function of flows/api.py and prints."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from flows.cli_help import WAREHOUSE_HELP
from flows.exit_codes import EXIT_OK, verdict_exit_code
from flows.progress import announce, fitted, folded, report_on_stderr

TASK_RUNNERS = ("thread", "dask")
"""``--task-runner``'s choices: flows/task_runners.py RUNNERS (a test keeps them equal), written out here so the
parser needs no Prefect."""


def count_at_least(minimum: int):
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


def amount(text: str) -> float:
    """An argparse type: a non-negative number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def warehouse_dir(text: str) -> str:
    """An argparse type: a warehouse directory; an empty one is bad input, not "use the default" (a run given
    ``--warehouse "$UNSET_VARIABLE"`` would otherwise land in the checkout's warehouse)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path names no warehouse: give a directory, or leave the flag out "
                                         "for the default ($TOOLEVAL_WAREHOUSE, else warehouse/ in the checkout)")
    return text


def warehouse_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--warehouse", metavar="DIR", type=warehouse_dir, default=None, help=WAREHOUSE_HELP)


def add_run_arguments(parser: argparse.ArgumentParser, batch: bool = True) -> None:
    """The flags every run takes, whichever instrument its experiment is for (``run``, ``tasks run``);
    ``batch``: offer ``--batch`` (task runs send no batches, so ``tasks run`` does not offer it)."""
    parser.add_argument("experiment", type=Path, metavar="EXPERIMENT_FILE",
                        help="e.g. tasksets/support/experiments/ladder.yaml")
    warehouse_arg(parser)
    parser.add_argument("--no-cache", action="store_true", help="ignore and do not fill the result cache")
    parser.add_argument("--max-spend-usd", type=amount, default=None, metavar="USD",
                        help="stop new hosted-model calls once the run has spent this much (default: the "
                             "experiment's budget); rerun to resume from the cache")
    parser.add_argument("--max-calls", type=count_at_least(0), default=None, metavar="N",
                        help="stop after N HTTP requests to hosted models, retries included (default: the "
                             "experiment's budget); rerun to resume from the cache")
    if batch:
        parser.add_argument("--batch", action="store_true",
                            help="selection runs: send hosted arms' chat requests through the providers' batch APIs "
                                 "(about half the price, results within 24 hours; routers' and judges' calls too; a "
                                 "model with no batch price keeps its calls); a rerun picks up the batches a stopped "
                                 "run submitted")
        parser.add_argument("--batch-wait", choices=("hold", "detach"), default=None,
                            help="hold: wait for the batches inside the run (default: the experiment's "
                                 "batch_wait, else hold); detach: submit, then stop with exit 8 while a batch "
                                 "still runs, registering nothing: rerun the same command to pick them up")
        parser.add_argument("--cancel-batches", action="store_true",
                            help="run nothing: cancel at the provider every batch this experiment's runs left "
                                 "running (journaled in the warehouse; keys from $OPENAI_API_KEY / "
                                 "$ANTHROPIC_API_KEY) and print how many")
    parser.add_argument("--allow-provisional", action="store_true",
                        help="measure versions whose labels are still provisional (production hints); the report "
                             "says so")
    parser.add_argument("--task-runner", choices=TASK_RUNNERS, default=None,
                        help="where the work units run (default: $TOOLEVAL_TASK_RUNNER, else thread)")
    parser.add_argument("--trace", default=None, metavar="otlp://HOST:PORT",
                        help="send the run's OpenInference traces (a trace per row or per task run, with the "
                             "checks as annotations) to an OTLP/HTTP collector such as Phoenix (default: the "
                             "experiment's tracing: block; 'off' turns that off)")
    parser.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    """``tooleval run`` and ``tooleval tasks run``: any experiment, by the instrument its arms name."""
    if getattr(args, "cancel_batches", False):
        from flows.cancel_batches import cmd_cancel_batches

        return cmd_cancel_batches(args)
    command = "tooleval tasks run" if getattr(args, "tasks_command", None) else "tooleval run"
    announce(f"{command} {args.experiment}: checking the experiment and its task set ...")
    from flows.stop_on_signal import install

    install(command)  # SIGTERM / SIGINT stop the run at once (flows/stop_on_signal.py); idempotent
    from flows import api
    from tasks.instrument_api import instrument
    from flows.evaluate import batches_pending_line
    from tasks.report.render import print_summary_line, render_terminal

    report_on_stderr()  # the flow's progress lines go to this command's stderr
    outcome = api.run_experiment(args.experiment, warehouse=args.warehouse, use_cache=not args.no_cache,
                                 allow_provisional=args.allow_provisional, task_runner=args.task_runner,
                                 max_calls=args.max_calls, max_spend_usd=args.max_spend_usd, trace=args.trace,
                                 batch=getattr(args, "batch", False), batch_wait=getattr(args, "batch_wait", None),
                                 say=lambda line: print(fitted(line), file=sys.stderr, flush=True))
    summary, report, warehouse = outcome.summary, outcome.report, outcome.warehouse
    words = instrument(summary.instrument).words
    landed = [warehouse.root / folder / f"run_id={summary.run_id}"
              for folder in instrument(summary.instrument).card.store.landed.values()]
    if summary.batches_pending:  # detached: nothing landed or registered
        print(batches_pending_line(summary.batches_pending), file=sys.stderr)
        return outcome.exit_code
    if report is None:  # landed, not registered: the file stayed held by another process
        again = f"tooleval register {summary.run_id}" + (f" --warehouse {args.warehouse}" if args.warehouse else "")
        for paragraph in (f"run {summary.run_id}: {summary.n_rows:,} {words.items} landed in "
                          f"{', '.join(map(str, landed))}, NOT registered: {warehouse.db_path} stayed held by another "
                          "process (close the other connection, e.g. an analyst's DuckDB session). Register, judge "
                          "and report it without running again:", f"    {again}",
                          "(the next `tooleval run` into this warehouse also registers it)"):
            print(folded(paragraph), file=sys.stderr)
        _warn_unpinned_cache(summary)
        return outcome.exit_code
    render_terminal(report)  # the verdict first, then the tables that explain it
    print()
    print_summary_line("", f"run {summary.run_id}: {summary.n_rows:,} {words.items} in {summary.n_units} work units, "
                           f"{summary.n_cache_hits:,} from cache, {summary.n_ok:,} {words.ok}, "
                           f"{summary.n_failures:,} {words.failed}")
    print(f"DuckDB file:   {warehouse.db_path}")
    print_summary_line("Parquet:", ", ".join(map(str, landed)))
    for kind, path in summary.reports.items():
        print(f"{kind + ' report:':<14} {path}")
    _print_spend(summary, command, args, words.items)
    for line in outcome.forecast_error:
        print(fitted(line))
    _warn_unpinned_cache(summary)
    for line in summary.leftovers or []:
        print(f"leftovers:     {line}")
    for late in summary.late_registrations or []:
        print(f"also registered: run {late}, which had landed without registering (`tooleval report {late}`)")
    if outcome.prefect_server:
        print_summary_line("Prefect:", outcome.prefect_server)
    if report.verdict is not None:
        print_summary_line("verdict:",
                           f"{report.verdict.status} — {report.verdict.reason} (exit {outcome.exit_code})")
    if summary.trace:
        sys.stdout.flush()
        # waits until they are sent (the report is out already), saying so when that takes a while
        dropped = summary.wait_for_traces(lambda message: print_summary_line("traces:", message))
        print_summary_line("traces:", f"{summary.trace}: " + ("dropped, see the warning above" if dropped
                                                               else f"one per {words.items[:-1]}, {summary.n_rows:,}"))
    return outcome.exit_code


def _warn_unpinned_cache(summary) -> None:
    """Arms whose unpinned model was answered from the cache (also a note in the report, a flag on the arm)."""
    for line in summary.unpinned_cache or []:
        print(folded(f"WARNING: {line}"), file=sys.stderr)


def _print_spend(summary, command: str, args: argparse.Namespace, items: str) -> None:
    """Calls and spend of hosted models, the resume hint when a cap stopped the run (``items``: what the
    instrument's units hold, e.g. 'rows'), and model halts."""
    if summary.n_calls or summary.n_budget_stopped:
        caps = ", ".join(c for c in (f"max {summary.max_calls:,} calls" if summary.max_calls is not None else "",
                                     f"max ${summary.max_spend_usd:,.2f}" if summary.max_spend_usd is not None else "")
                         if c)
        unknown = (f"; {summary.unknown_cost_calls:,} replies without token counts, charged at their estimate"
                   if summary.unknown_cost_calls else "")
        print(f"model calls:   {summary.n_calls:,} HTTP requests, ${summary.spend_usd:,.4f} at the price file's prices"
              + (f" ({caps})" if caps else "") + unknown)
    if summary.n_budget_stopped:
        again = f"{command} {args.experiment}" + (f" --warehouse {args.warehouse}" if args.warehouse else "")
        print(f"\nbudget reached: {summary.n_budget_stopped:,} {items} were not "
              f"run; they landed as errors ('budget reached' rows, 'run_budget' task runs). Every completed call is "
              f"cached: to resume, raise the cap if you need to and rerun\n    {again}\n"
              "The rerun repeats no completed call and spends only on the rest.", file=sys.stderr)
    if summary.halts:
        for model, reason in summary.halts.items():
            print(f"FAILED: {model}: {reason}", file=sys.stderr)
        print("Pin the id the provider serves (or declare options.served_model) and rerun.", file=sys.stderr)


def cmd_register(args: argparse.Namespace) -> int:
    from flows import api
    from tasks.instrument_api import instrument
    from tasks.report.render import print_summary_line, render_terminal

    late = api.register(args.run_id, args.warehouse)
    render_terminal(late.published.report)
    print()
    done = ("was registered and reported before: nothing was changed (its verdict is the one it was given); "
            if late.already_registered else "registered; ")
    print_summary_line("", f"run {late.run_id}: {late.n_rows:,} {instrument(late.instrument).words.items} {done}"
                           "reports: " + ", ".join(str(path) for path in late.published.paths.values()))
    return verdict_exit_code(late.published.verdict)


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """``report`` and ``tasks report``: a run id (default: the latest run), the warehouse, the format."""
    parser.add_argument("run_id", nargs="?", default=None, metavar="RUN_ID", help="default: the latest run")
    warehouse_arg(parser)
    parser.add_argument("--format", choices=["text", "markdown"], default="text",
                        help="text (for a terminal; the default) or markdown (for a pull request)")
    parser.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    """``tooleval report`` (the latest run of either instrument) and ``tooleval tasks report`` (of tasks)."""
    from flows import api
    from tasks.report.render import render_markdown, render_terminal

    report = api.report(args.run_id, args.warehouse, "surface" if getattr(args, "tasks_command", None) else None,
                        stored=True)
    if args.format == "markdown":
        print(render_markdown(report))
    else:
        render_terminal(report)
    return EXIT_OK
