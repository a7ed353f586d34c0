"""``tooleval sql [QUERY]``: SQL over a snapshot of the warehouse with this project's DuckDB (the DuckDB CLIs
installable here cannot read its file), never holding the file a run registers into.

With a QUERY: run it, print the result, exit (2 when the session refuses it, tasks/report/sql_session.py, or
a limit stops it, tasks/report/sql_limits.py). Without: read statements ending with ``;`` and dot commands
from standard input; piped into, it runs every statement and exits 2 if any failed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from typing import TYPE_CHECKING, Iterator, TextIO

from flows.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from flows.run_cli import warehouse_arg
from tasks.report.sql_limits import (DEFAULT_MEMORY_LIMIT, DEFAULT_TIME_LIMIT_S, SPILL_FACTOR, QueryLimits,
                                     parse_size, size_text)

if TYPE_CHECKING:
    from tasks.report.sql_session import SqlSession

PROMPT, CONTINUED = "tooleval> ", "     ...> "
HELP = """Statements end with ';' and may span lines. The views and tables of the warehouse are at hand
(`.tables` lists them; docs/reference/warehouse.md documents them). The session reads a snapshot taken when it
started, so it never blocks a run; runs registered since are not in it until `.refresh`. It is read-only and
confined: writes, ATTACH, COPY, EXPORT, INSTALL/LOAD, reads of other files and SET are refused (temporary
tables and views work; --format csv and a redirect export a result). A statement past --time-limit, or
taking the session past --memory-limit, is stopped and the session goes on.
  .tables    views and tables        .refresh   take a new snapshot
  .help      this text               .quit      leave (or Ctrl-D)"""


def add_sql_parser(commands: argparse._SubParsersAction) -> None:
    sql = commands.add_parser(
        "sql", help="query the warehouse with SQL (one query, or interactively), read-only, never blocking a run",
        description="Run SQL against a snapshot of the warehouse's DuckDB file, with this tooleval's DuckDB and "
        "views. With QUERY: print its result and exit. Without: read statements ending with ';' from standard "
        "input (an interactive prompt on a terminal). The file is held only while it is copied (milliseconds to "
        "a second), so a run registering at the same time is not blocked. Read-only and confined: writes, ATTACH, COPY, "
        "EXPORT, INSTALL/LOAD, reads of files outside the snapshot and SET are refused (exit 2); temporary tables "
        "and views work.")
    sql.add_argument("query", nargs="?", default=None, metavar="QUERY",
                     help="e.g. \"select arm, slice, accuracy from aggregate_accuracy\"")
    warehouse_arg(sql)
    sql.add_argument("--format", choices=["table", "csv"], default="table",
                     help="table (aligned; one record per block when wider than the terminal) or csv")
    sql.add_argument("--max-rows", type=int, default=1000, metavar="N",
                     help="rows shown per result in table format (default 1000; csv prints all)")
    sql.add_argument("--time-limit", type=_seconds, default=DEFAULT_TIME_LIMIT_S, metavar="SECONDS",
                     help=f"stop a statement that runs longer (default {DEFAULT_TIME_LIMIT_S:g}; 0: none)")
    sql.add_argument("--memory-limit", type=_memory, default=DEFAULT_MEMORY_LIMIT, metavar="SIZE",
                     help="stop a statement that takes the session past this memory, e.g. 4GB (default "
                     f"{size_text(DEFAULT_MEMORY_LIMIT)}; it may spill {SPILL_FACTOR}x that to disk)")
    sql.set_defaults(func=cmd_sql)


def _seconds(text: str) -> float:
    value = float(text)
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}")
    return value


MIN_MEMORY = 256 * 1000**2
"""Below this the session itself (Python, DuckDB, the views) would pass the limit before a query runs."""


def _memory(text: str) -> int:
    try:
        value = parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if value < MIN_MEMORY:
        raise argparse.ArgumentTypeError(f"at least {size_text(MIN_MEMORY)}: {text!r}")
    return value


def _print(session: SqlSession, text: str, args: argparse.Namespace) -> bool:
    """Run ``text`` and print its results; False when DuckDB refused it (the message on stderr)."""
    from tasks.report.sql_session import SqlError, render_csv, render_table

    try:
        results = session.run(text, None if args.format == "csv" else args.max_rows)
    except SqlError as error:
        print(f"tooleval sql: {error}", file=sys.stderr, flush=True)
        return False
    width = shutil.get_terminal_size((100, 24)).columns
    for result in results:
        print(render_csv(result) if args.format == "csv" else render_table(result, width), end="" if args.format == "csv" else "\n", flush=True)
    return True


def _statements(stream: TextIO, interactive: bool) -> Iterator[str]:
    """Statements (ending with ';') and dot commands, read a line at a time."""
    buffer: list[str] = []
    while True:
        if interactive:
            try:
                line = input(CONTINUED if buffer else PROMPT)
            except EOFError:
                print(file=sys.stderr)
                break
        else:
            line = stream.readline()
            if not line:
                break
        if not buffer and line.strip().startswith("."):
            yield line.strip()
            continue
        if not buffer and not line.strip():
            continue
        buffer.append(line.rstrip("\n"))
        if line.rstrip().endswith(";"):
            yield "\n".join(buffer)
            buffer = []
    if any(part.strip() for part in buffer):
        yield "\n".join(buffer)  # the last statement may leave out its ';'


def cmd_sql(args: argparse.Namespace) -> int:
    from flows import api

    session = api.sql_session(args.warehouse)
    session.limits = QueryLimits(args.time_limit or None, args.memory_limit)
    try:
        return _session(session, args)
    finally:
        session.close()


def _session(session: SqlSession, args: argparse.Namespace) -> int:
    from tasks.report.sql_session import describe_snapshot

    snapshot = session.refresh()
    if args.query is not None:
        return EXIT_OK if _print(session, args.query, args) else EXIT_BAD_INPUT
    interactive = sys.stdin.isatty()
    if interactive:
        try:
            import readline  # noqa: F401 - line editing and history for input()
        except ImportError:
            pass
        print(describe_snapshot(snapshot) + "\n.help for help, .quit to leave", file=sys.stderr)
    failed = 0
    for statement in _statements(sys.stdin, interactive):
        if statement.startswith("."):
            command = statement.split()[0]
            if command in (".quit", ".exit", ".q"):
                break
            if command == ".help":
                print(HELP)
            elif command == ".tables":
                relations = session.relations()
                width = max(len(name) for name, _ in relations)
                print("\n".join(f"{name.ljust(width)}  {kind}" for name, kind in relations))
            elif command == ".refresh":
                print(describe_snapshot(session.refresh()), file=sys.stderr)
            else:
                print(f"tooleval sql: unknown command {command} (.help)", file=sys.stderr)
                failed += 1
            continue
        failed += not _print(session, statement, args)
    return EXIT_BAD_INPUT if failed and not interactive else EXIT_OK
