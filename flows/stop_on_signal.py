"""How ``tooleval run`` and ``tooleval tasks run`` stop on SIGTERM and SIGINT (Ctrl-C): at once, keeping what
is done. Prefect's flow engine would wait for every call in flight before acting on either.

On either signal, in the main thread and within about a second, the command says on stderr what the run had
done (work units landed, items finished inside the units still running: tasks/run/item_counter.py) and that a
rerun resumes; stops every process it started (the Prefect server, MCP servers, a trace process: SIGTERM,
then SIGKILL after ``CHILD_GRACE_S``); and ends with 128 + the signal's number (130 / 143), abandoning the
calls in flight as ``kill -9`` would. That is safe by construction: each item is cached when finished, a
unit's Parquet is written atomically, a registration is one DuckDB transaction, and the next run tidies
what a stopped one left. A second signal ends the process at once; it always ends within ``HARD_STOP_S``.

Only the ``tooleval`` command installs this (a deployment's worker keeps Prefect's handling, which marks the
run Cancelled); the flow takes the handlers back when it starts (``retake``). Standard library only.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Any

from flows.exit_codes import EXIT_INTERRUPTED, EXIT_TERMINATED

CHILD_GRACE_S = 1.0
HARD_STOP_S = 5.0

_installed = False
_stopping = False
_started = time.monotonic()
_progress: Any = None
"""The run's UnitProgress once its units started (flows/evaluate.py), for the counts in the message."""
_command = "tooleval run"


def flush_std_streams() -> None:
    """Flush stdout and stderr before ``os._exit`` (which does not), ignoring a closed or broken one."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def install(command: str = "tooleval run") -> None:
    """Stop this process promptly on SIGTERM and SIGINT (from the main thread; a no-op elsewhere)."""
    global _installed, _command, _started
    if threading.current_thread() is not threading.main_thread():
        return
    _started = _started if _installed else time.monotonic()
    _command, _installed = command, True
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _on_signal)


def retake() -> None:
    """Inside the flow: take SIGTERM back from Prefect's handler, and SIGINT back from polars (whose import sets
    a handler in C that ``signal.getsignal`` does not show: it is imported here first), when ``install`` ran
    in this process and this is its main thread."""
    if not _installed or threading.current_thread() is not threading.main_thread():
        return
    try:
        import polars  # noqa: F401
    except ImportError:
        pass
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _on_signal)


def stopping() -> bool:
    """Is this process stopping on a signal? (Its children then end because it ends them.)"""
    return _stopping


def watch_progress(progress: Any) -> None:
    global _progress
    _progress = progress


def proc_stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name (state, ppid, ...); [] where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().decode(errors="replace").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (Linux /proc)."""
    return proc_stat(pid)[:1] not in ([], ["Z"], ["X"])


def _descendants() -> list[int]:
    """Every process below this one (Linux /proc), children first."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        if len(fields := proc_stat(int(entry))) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [os.getpid()]
    while todo:
        found += (new := children.get(todo.pop(), []))
        todo += new
    return found


def stop_children(grace_s: float = CHILD_GRACE_S) -> list[int]:
    """SIGTERM every descendant process, SIGKILL those still there after ``grace_s`` (and any started since)."""
    pids = _descendants()
    for pid in pids:
        _kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.02)
    for pid in pids + _descendants():
        if alive(pid):
            _kill(pid, signal.SIGKILL)
    return pids


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except OSError:
        pass


def resume_advice(how: str) -> str:
    """What a run ended early (``how``: 'signal' or 'lost', its API) had registered, and what a rerun does."""
    from flows.progress import what_is_done  # standard library only

    done = what_is_done()
    if done and how == "lost":
        return ("Done before it was lost:\n  " + "\n  ".join(done) + "\nThose rows are registered for good: no "
                "rerun is needed for them (a rerun would make a second run of them, from the cache). What this run "
                "left undone (its reports if not written, tidying earlier runs' leftovers) the next run into this "
                "warehouse finishes.")
    then = ("Done before the signal:\n  " + "\n  ".join(done) + "\n") if done else ""
    return (f"{then}Every finished item is cached and landed rows are kept: rerun the same command (`{_command} ...`) "
            "to resume; it repeats no completed call (the next run registers or tidies what this one left).")


def stopped_message(signum: int) -> str:
    """What a stopped run says: its counts so far and how to resume."""
    from flows.progress import duration

    progress = _progress
    if progress is None:
        done = "before its work units started"
    else:
        from tasks.run.item_counter import in_flight, landed  # counted where the units run

        (units, items), inside = landed(), in_flight()[1]
        done = (f"after {units:,} of {progress.total_units:,} work units landed ({items:,} {progress.counted})"
                + (f" and {inside:,} more {progress.counted} finished and cached inside the units still running"
                   if inside else ""))
    return (f"tooleval: stopped by {signal.Signals(signum).name} {done}, {duration(time.monotonic() - _started)} "
            f"into the run; the calls in flight were abandoned.\n{resume_advice('signal')}")


def _hard_stop(code: int) -> None:
    time.sleep(HARD_STOP_S)
    os._exit(code)


def _on_signal(signum: int, frame: object) -> None:
    global _stopping
    code = {signal.SIGINT: EXIT_INTERRUPTED, signal.SIGTERM: EXIT_TERMINATED}.get(signum, 128 + signum)
    if _stopping:  # a second signal while stopping: now
        os._exit(code)
    _stopping = True
    threading.Thread(target=_hard_stop, args=(code,), name="tooleval-hard-stop", daemon=True).start()
    try:
        flush_std_streams()
        try:
            print(stopped_message(signum), file=sys.stderr, flush=True)
        except Exception:  # noqa: BLE001 - the message is a courtesy; the stop is what matters
            pass
        stop_children()
    finally:
        flush_std_streams()
        os._exit(code)
