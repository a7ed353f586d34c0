"""CPU time of the ``tooleval`` commands that should answer at once: ``--help``, ``--version``, every
command's ``--help``, and the read-only commands (target for the help and version: < 0.3 s of CPU).

    PYTHONPATH=. .venv/bin/python benchmarks/cli_startup.py [--runs 5] [--checkout DIR] [--warehouse DIR]
        [--only help|read]

Each measurement starts a fresh ``<python> -m flows.launch ARGS`` (the console script's entry point, the
same code path as ``tooleval ARGS``) with PYTHONPATH and the working directory set to the checkout measured
(default: the one this script is in; its .venv's python), and reads the CPU seconds (user + sys) it used
from ``resource.getrusage(RUSAGE_CHILDREN)`` deltas; ``--runs`` runs each, the median is printed, with the
wall time and the load average beside it (a shared machine moves every figure). Output is discarded.

The read-only commands (``report``, ``tasks report``, ``sql``, ``compare``, ``plan``, ``validate`` of a
version and of an experiment of each instrument, ``tasks validate``) need a warehouse holding a selection
run and a task run: ``--warehouse DIR`` names one (e.g. after ``make demo && make demo-tasks``: warehouse/);
without it they are skipped; ``compare`` is measured when it holds two selection runs or more (the first and
the last; ``make demo`` twice). Not a test: run it and read the figures (measure main and a branch from the
same warehouse; a warehouse written by another checkout's definitions is read through temporary views, so
let the checkout measured write it last).

The untimed first run of ``validate`` of an experiment and of ``tasks validate`` checks everything and keeps
the pass (tasks/files/remembered_pass.py); the timed runs answer from it, as a repeated check of unchanged
files does. A first check costs what its checks cost: time it with the cache folder's ``passes/`` removed
before each run.

The processes run with bytecode caching on (PYTHONDONTWRITEBYTECODE removed from their environment), as an
installed tool runs: the untimed first run writes the checkout's .pyc files, else every run would compile
the tool's modules from source again (~0.4 s of CPU for ``report``).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def help_commands() -> list[list[str]]:
    """``--help``, ``--version`` and each command's ``--help`` (the command list is fixed here, so the same
    list measures an older checkout whose parser differs)."""
    commands = ["run", "resample", "queue import", "queue export", "register", "report", "compare", "phoenix",
                "plan", "fit", "train", "validate", "import bfcl", "import metatool", "import mcp", "sql",
                "tasks run", "tasks report", "tasks validate", "tasks catalogue"]
    return [["--help"], ["--version"], *[[*c.split(), "--help"] for c in commands]]


def read_commands(warehouse: str) -> list[list[str]]:
    runs = sql_lines(warehouse, "select run_id from runs order by finished_at")
    commands = [["report", "--warehouse", warehouse], ["tasks", "report", "--warehouse", warehouse],
                ["sql", "--warehouse", warehouse, "select count(*) from runs"],
                ["plan", "--accuracy", "0.9", "--requests", "200", "--half-width", "5"],
                ["validate", "tasksets/support/v1.jsonl"],
                ["validate", "tasksets/support/experiments/ladder.yaml"],
                ["validate", "tasksets/support_tasks/experiments/four_arms.yaml"],
                ["tasks", "validate", "tasksets/support_tasks/t1.jsonl"]]
    if runs:
        commands.insert(1, ["report", runs[0], "--warehouse", warehouse])
    if len(runs) >= 2:  # the runs table holds the selection runs
        commands.append(["compare", runs[0], runs[-1], "--warehouse", warehouse])
    return commands


def child_env(checkout: Path) -> dict[str, str]:
    """The measured process's environment: this one with PYTHONPATH at the checkout, and bytecode caching on."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(checkout), "COLUMNS": "80"}


def sql_lines(warehouse: str, query: str) -> list[str]:
    done = subprocess.run(check=False, args=[sys.executable, "-m", "flows.launch", "sql", "--format", "csv", "--warehouse", warehouse,
                           query], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True)
    return [line for line in done.stdout.splitlines()[1:] if line]


def cpu_of(python: str, checkout: Path, args: list[str]) -> tuple[float, float, int]:
    """CPU seconds (user + sys) and wall seconds of one fresh process, and its exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(check=False, args=[python, "-m", "flows.launch", *args], cwd=checkout, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, env=child_env(checkout))
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the checkout measured (default: this one)")
    parser.add_argument("--python", default=None, help="default: CHECKOUT/.venv/bin/python, else this python")
    parser.add_argument("--warehouse", default=None, metavar="DIR",
                        help="a warehouse with a selection run and a task run, for the read-only commands")
    parser.add_argument("--only", choices=["help", "read"], default=None)
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    python = args.python or (str(checkout / ".venv" / "bin" / "python")
                             if (checkout / ".venv" / "bin" / "python").exists() else sys.executable)
    commands = [] if args.only == "read" else help_commands()
    if args.only != "help" and args.warehouse:
        commands += read_commands(str(Path(args.warehouse).resolve()))
    print(f"checkout {checkout} ({python}), {args.runs} runs each, median; load {os.getloadavg()[0]:.1f}\n")
    print(f"| {'command':<58} | CPU s | wall s | exit |\n|{'-' * 60}|------:|-------:|-----:|")
    for command in commands:
        cpu_of(python, checkout, command)  # one untimed run: the page cache, .pyc files
        measured = [cpu_of(python, checkout, command) for _ in range(args.runs)]
        label = "tooleval " + " ".join(command)
        print(f"| {label[:58]:<58} | {statistics.median(m[0] for m in measured):5.2f} "
              f"| {statistics.median(m[1] for m in measured):6.2f} | {measured[-1][2]:4d} |", flush=True)
    print(f"\nload at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
