"""How ``tooleval run`` and ``tooleval tasks run`` stop on SIGTERM and SIGINT: at once (Prefect's engine would
wait for the calls in flight), saying what the run had done, ending every process it started and exiting 130 /
143. Abandoning the calls in flight is safe: items are cached when finished, Parquet is written atomically, a
registration is one transaction, and the next run tidies what a stopped one left. Only the ``tooleval``
command installs it (a deployment's worker keeps Prefect's handling). Standard library only."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from typing import Any

CHILD_GRACE_S = 1.0
HARD_STOP_S = 5.0
BATCH_CANCEL_S = 2.0  # how long a stopping run waits for its units to cancel the provider batches they wait on

_installed = _stopping = False
_started, _progress, _command = time.monotonic(), None, "tooleval run"  # _progress: the run's UnitProgress


def flush_std_streams() -> None:
    """Flush stdout and stderr before ``os._exit`` (which does not), ignoring a closed or broken one."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def install(command: str = "tooleval run") -> None:
    """Stop this process promptly on SIGTERM and SIGINT (from the main thread; a no-op elsewhere)."""
    global _installed, _command, _started
    if threading.current_thread() is threading.main_thread():
        _started = _started if _installed else time.monotonic()
        _command, _installed = command, True
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, _on_signal)


def retake() -> None:
    """Take SIGTERM back from Prefect's handler and SIGINT from polars' (set in C by its import, which
    ``signal.getsignal`` does not show: polars is imported first), once ``install`` ran in this process."""
    if _installed:
        with contextlib.suppress(ImportError):
            import polars  # noqa: F401
        install(_command)


def stopping() -> bool:
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
    """The process exists and is not a zombie."""
    return proc_stat(pid)[:1] not in ([], ["Z"], ["X"])


def _descendants() -> list[int]:
    children: dict[int, list[int]] = {}
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        children.setdefault(int((proc_stat(pid) + ["0", "0"])[1]), []).append(pid)
    found, todo = [], [os.getpid()]
    while todo:
        found += (new := children.get(todo.pop(), []))
        todo += new
    return found


def end_processes(pids: list[int], grace_s: float = CHILD_GRACE_S) -> None:
    """SIGTERM ``pids``, then SIGKILL those still alive after ``grace_s``."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            if alive(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signum)
        deadline = time.monotonic() + grace_s
        while signum == signal.SIGTERM and time.monotonic() < deadline and any(map(alive, pids)):
            time.sleep(0.02)


def resume_advice(how: str) -> str:
    """What a run ended early (``how``: 'signal', or 'lost' its API) had registered, and what a rerun does."""
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

    done = "before its work units started"
    if (progress := _progress) is not None:
        from tasks.run.item_counter import in_flight, landed  # counted where the units run

        (units, items), inside = landed(), in_flight()[1]
        done = (f"after {units:,} of {progress.total_units:,} work units landed ({items:,} {progress.counted})"
                + (f" and {inside:,} more {progress.counted} finished and cached inside the units still running"
                   if inside else ""))
    return (f"tooleval: stopped by {signal.Signals(signum).name} {done}, {duration(time.monotonic() - _started)} "
            f"into the run; the calls in flight were abandoned.\n{resume_advice('signal')}")


def cancel_batches() -> None:
    """Cancel at the provider the batches this process waits on (tasks/selectors/providers/batch_selection.py),
    if it sent any: a stopped run leaves no batch running on the bill."""
    module = sys.modules.get("tasks.selectors.providers.batch_selection")
    if module is not None:
        with contextlib.suppress(Exception):
            module.cancel_waiting_batches(BATCH_CANCEL_S)


def _on_signal(signum: int, frame: object) -> None:
    global _stopping
    code = 128 + signum  # 130 for SIGINT, 143 for SIGTERM (flows/exit_codes.py)
    if _stopping:  # a second signal while stopping: now
        os._exit(code)
    _stopping = True
    threading.Thread(target=lambda: (time.sleep(HARD_STOP_S), os._exit(code)), daemon=True).start()
    try:
        flush_std_streams()
        with contextlib.suppress(Exception):  # the message is a courtesy; the stop is what matters
            print(stopped_message(signum), file=sys.stderr, flush=True)
        cancel_batches()
        for grace in (CHILD_GRACE_S, 0):  # every descendant process, then at once any started meanwhile
            end_processes(_descendants(), grace)
    finally:
        flush_std_streams()
        os._exit(code)
