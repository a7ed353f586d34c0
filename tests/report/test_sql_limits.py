"""`tooleval sql` stops a runaway statement at its own time or memory limit, says which limit stopped it and
the flag that raises it, exits 2, and the session goes on answering."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tasks.report.sql_limits import QueryLimits, parse_size
from tests.factories import ROOT

CROSS_JOIN = "select count(*) from range(1000000000) a, range(1000000000) b"
"""Runs for hours, its memory growing (to gigabytes within seconds)."""
LONG_SUM = "select sum(range) from range(100000000000)"
"""Runs for minutes in constant memory."""
BIG_STRINGS = "select max(len(repeat('x', 150000) || range::varchar)) from range(100000)"
"""Vectors of 150 kB strings are allocated outside DuckDB's buffer manager: its memory_limit alone would not
stop them."""
BIG_LIST = "select list(range) from range(200000000)"
"""Refused by DuckDB's buffer manager (its memory_limit) before the watch sees it."""


def run_sql(warehouse: Path, *args: str, stdin: str | None = None) -> tuple[subprocess.CompletedProcess, float, int]:
    """Run `tooleval sql` in its own process: the result, its wall seconds and its peak resident MiB."""
    script = ("import resource, subprocess, sys\n"
              "p = subprocess.run(sys.argv[1:], input=sys.stdin.read() if not sys.stdin.isatty() else None, "
              "capture_output=True, text=True)\n"
              "sys.stdout.write(p.stdout); sys.stderr.write(p.stderr)\n"
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, file=sys.stderr)\n"
              "sys.exit(p.returncode)\n")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script, sys.executable, "-m", "flows.cli", "sql",
                           "--warehouse", str(warehouse), *args], cwd=ROOT, input=stdin or "",
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
    *err, peak = done.stderr.rstrip("\n").split("\n")
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout, "\n".join(err)), \
        time.monotonic() - started, int(peak)


def test_the_cross_join_stops_at_its_time_limit_naming_the_limit(warehouse):
    done, wall, _ = run_sql(warehouse, CROSS_JOIN, "--time-limit", "2")
    assert done.returncode == 2, done.stderr
    assert "stopped by the time limit" in done.stderr and "2 s" in done.stderr and "--time-limit" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert wall < 2 + 30  # the statement is interrupted within a moment of its limit (start-up on a loaded box)


def test_a_statement_growing_past_the_memory_limit_is_stopped_naming_that_limit(warehouse):
    done, _, peak_mib = run_sql(warehouse, BIG_STRINGS, "--memory-limit", "400MB", "--time-limit", "0")
    assert done.returncode == 2, done.stderr
    assert "stopped by the memory limit" in done.stderr and "--memory-limit" in done.stderr
    assert "Traceback" not in done.stderr
    assert peak_mib < 400 * 1.3 * 1000**2 / 1024**2  # stopped within a watch interval (a vector) of the limit


def test_stopped_statements_leave_the_session_answering_the_next(warehouse):
    statements = f"{LONG_SUM};\n{BIG_LIST};\nselect count(*) as n from runs;\n"
    done, _, _ = run_sql(warehouse, "--time-limit", "5", "--memory-limit", "400MB", stdin=statements)
    assert done.returncode == 2  # piped: a statement failed
    stops = done.stderr.splitlines()
    assert len(stops) == 2 and stops[0].startswith("tooleval sql: stopped by the time limit (5 s)")
    assert stops[1].startswith("tooleval sql: stopped by the memory limit")  # DuckDB's own refusal says so too
    assert done.stdout.split()[:3] == ["n", "─", "1"]


def test_the_default_limits_protect_a_shared_machine_and_reach_duckdb():
    limits = QueryLimits()
    assert limits.time_s is not None and limits.time_s <= 300
    assert limits.memory_bytes <= 4 * 1024**3
    settings = " ".join(limits.settings())
    assert "memory_limit" in settings and "max_temp_directory_size" in settings and "threads" in settings


@pytest.mark.parametrize("text, expected", [("2GB", 2 * 1000**3), ("512MiB", 512 * 1024**2), ("1000", 1000)])
def test_sizes_read_as_duckdb_writes_them(text, expected):
    assert parse_size(text) == expected


def test_a_memory_limit_below_the_session_s_own_needs_is_bad_input(warehouse, capsys):
    from flows.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["sql", "select 1", "--warehouse", str(warehouse), "--memory-limit", "10MB"])
    assert exit_.value.code == 2 and "at least" in capsys.readouterr().err
