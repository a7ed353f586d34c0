"""Time to the first line of output of ``tooleval run`` (target: within 2 s), and what the progress output
looks like on a pipe and on a terminal.

    PYTHONPATH=. .venv/bin/python benchmarks/first_line.py [--runs 5] [--experiment FILE] [--pty]
        [--tooleval-cmd CMD]

Each run starts ``<python> -m flows.launch run EXPERIMENT --no-cache --warehouse <fresh dir>`` (the console
script's entry point; ``--tooleval-cmd`` replaces ``<python> -m flows.launch``) and reads its stdout and
stderr as bytes arrive: the time to the first byte on either, to the first ``progress:`` line (to the
first redraw of the status line with ``--pty``, where stdout and stderr are one pseudo-terminal) and to the
exit. The load average at each start is shown, since on a shared 2-core machine it moves every figure.
Not a test: run it and read the figures.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import selectors
import shlex
import statistics
import struct
import subprocess
import sys
import termios
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EXPERIMENT = ROOT / "tasksets" / "support" / "experiments" / "ladder.yaml"


def one_run(command: list[str], use_pty: bool, env: dict[str, str]) -> dict[str, float | str]:
    started = time.monotonic()
    first = progress = None
    seen = b""
    if use_pty:
        controller, worker = pty.openpty()
        fcntl.ioctl(worker, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))  # an 80-column terminal
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=worker, stderr=worker, cwd=ROOT, env=env)
        os.close(worker)
        streams = [controller]
    else:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   cwd=ROOT, env=env)
        streams = [process.stdout.fileno(), process.stderr.fileno()]
    selector = selectors.DefaultSelector()
    for fd in streams:
        selector.register(fd, selectors.EVENT_READ)
    open_streams = len(streams)
    while open_streams:
        for key, _ in selector.select(timeout=1):
            try:
                chunk = os.read(key.fd, 65536)
            except OSError:  # a pty's reader gets EIO once the child side closes
                chunk = b""
            if not chunk:
                selector.unregister(key.fd)
                open_streams -= 1
                continue
            now = time.monotonic() - started
            first = first if first is not None else now
            seen += chunk
            marker = b"units " if use_pty else b"progress: "
            if progress is None and marker in seen:
                progress = now
    code = process.wait()
    if use_pty:
        os.close(controller)
    return {"first": first or float("nan"), "progress": progress or float("nan"),
            "exit": time.monotonic() - started, "code": code, "output": seen.decode(errors="replace")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--experiment", default=str(DEFAULT_EXPERIMENT))
    parser.add_argument("--pty", action="store_true", help="stdout and stderr on a pseudo-terminal (live status line)")
    parser.add_argument("--tooleval-cmd", default=None, help="command instead of '<python> -m flows.launch'")
    parser.add_argument("--show", action="store_true", help="print the last run's stderr (and stdout on a pty)")
    args = parser.parse_args()
    base = shlex.split(args.tooleval_cmd) if args.tooleval_cmd else [sys.executable, "-m", "flows.launch"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "TOOLEVAL_PROGRESS_EVERY_S": "2"}
    results = []
    for k in range(args.runs):
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="tooleval-first-line-") as warehouse:
            result = one_run(base + ["run", args.experiment, "--no-cache", "--warehouse", warehouse], args.pty, env)
        result["load"] = load
        results.append(result)
        print(f"run {k + 1}: first line {result['first']:.2f} s, first progress {result['progress']:.2f} s, "
              f"exit {result['exit']:.1f} s (code {result['code']}), load {load:.1f}", flush=True)
    firsts = [r["first"] for r in results]
    print(f"\ntime to the first line over {len(results)} runs: min {min(firsts):.2f} s, median "
          f"{statistics.median(firsts):.2f} s, max {max(firsts):.2f} s (target <= 2 s); "
          f"load {min(r['load'] for r in results):.1f}-{max(r['load'] for r in results):.1f}")
    if args.show:
        output = results[-1]["output"]
        print("\n--- output of the last run (start) ---\n" + output[:1500] + "\n--- (end) ---\n" + output[-1200:])
    return 0 if all(r["code"] in (0, 1) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
