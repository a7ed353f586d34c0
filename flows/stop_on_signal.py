"""How ``tooleval run`` and ``tooleval tasks run`` stop on SIGTERM and SIGINT (Ctrl-C): at once, keeping what is done.

Without this, a signal waited for the calls in flight: Prefect's flow engine turns SIGTERM into an exception
that it handles only after its task runner has let every running unit finish its hosted call (and a
KeyboardInterrupt took the same road), so a run with a slow model ignored both for more than 35 s.

On either signal the command instead, in the main thread and within about a second:

1. says on stderr what the run had done: work units landed, items finished (and cached) inside the units
   still running, and that a rerun resumes (the units count them: tasks/run/item_counter.py, per process);
2. stops the processes it started: the temporary Prefect server, MCP servers, a trace process (every
   descendant process: SIGTERM, then SIGKILL after ``CHILD_GRACE_S``);
3. ends with ``128 + the signal's number`` (flows/exit_codes.py: 130 for SIGINT, 143 for SIGTERM), without
   waiting for the calls in flight: they are abandoned, exactly as ``kill -9`` abandons them.

Ending abruptly is safe by construction (the failure drill kills runs at every step): each item is cached
the moment it is finished (a completed call is never repeated), a unit's Parquet is written atomically and
a landed unit's items are all in the cache, a registration is one DuckDB transaction, and the next run
tidies what a stopped one left (tasks/run/leftovers.py) or registers a run whose records were saved. A
second signal while stopping ends the process at once; whatever happens, it ends within ``HARD_STOP_S``.

Only the ``tooleval`` command installs this (``install``); a deployment's worker keeps Prefect's own SIGTERM
handling (its cancellation marks the flow run Cancelled). The flow retakes SIGTERM from Prefect's handler
when it starts (``retake``). Import-light: the console script installs it before the heavy imports.
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
"""How long child processes get to end on SIGTERM before SIGKILL."""
HARD_STOP_S = 5.0
"""The process ends this long after the signal whatever the stopping step is doing."""

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


def exit_code_for(signum: int) -> int:
    return EXIT_INTERRUPTED if signum == signal.SIGINT else EXIT_TERMINATED if signum == signal.SIGTERM \
        else 128 + signum


def install(command: str = "tooleval run") -> None:
    """Stop this process promptly on SIGTERM and SIGINT (call from the main thread; a no-op elsewhere)."""
    global _installed, _command, _started
    if threading.current_thread() is not threading.main_thread():
        return
    if not _installed:
        _started = time.monotonic()
    _command = command
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _on_signal)
    _installed = True


def retake() -> None:
    """Inside the flow: take SIGTERM back from Prefect's handler (it waits for the calls in flight) and SIGINT
    back from polars, when the ``tooleval`` command installed the prompt stop in this process and this is its
    main thread. Polars replaces the process's SIGINT handler at the C level when it is imported (to abort a
    query), which Python's ``signal.getsignal`` does not show: with it, Ctrl-C waited for the call in flight
    (60 s in the test). So polars is imported here, before the handlers are set again, and can take nothing
    later (the run imports it anyway: task sets, figures)."""
    if not _installed or threading.current_thread() is not threading.main_thread():
        return
    try:
        import polars  # noqa: F401 - its import sets a SIGINT handler: let it happen now, then set ours again
    except ImportError:
        pass
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _on_signal)  # always: the handler in C may differ from what getsignal says


def stopping() -> bool:
    """Is this process stopping on a signal? Then its children end because it ends them (the temporary
    Prefect server exits with -15): the API watch must not report that as a lost server (exit 6)."""
    return _stopping


def watch_progress(progress: Any) -> None:
    """The run's progress over its units: what the message on a signal counts."""
    global _progress
    _progress = progress


def _descendants() -> list[int]:
    """Every process below this one (Linux: /proc), children first."""
    parents: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode(errors="replace")
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [os.getpid()]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().decode(errors="replace").rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return False


def stop_children(grace_s: float = CHILD_GRACE_S) -> list[int]:
    """SIGTERM every descendant process, SIGKILL those still there after ``grace_s``; the pids found."""
    pids = _descendants()
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.02)
    for pid in pids + _descendants():  # and anything started meanwhile (npx's node, a respawned helper)
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    return pids


def stopped_message(signum: int) -> str:
    """What a stopped run says: its counts so far and how to resume."""
    name = signal.Signals(signum).name
    elapsed = time.monotonic() - _started
    progress = _progress
    if progress is None:
        done = "before its work units started"
    else:
        from tasks.run.item_counter import in_flight, landed  # import-light; counted where the units run

        (units, items), inside = landed(), in_flight()[1]
        done = (f"after {units:,} of {progress.total_units:,} work units landed ({items:,} {progress.counted})"
                + (f" and {inside:,} more {progress.counted} finished and cached inside the units still running"
                   if inside else ""))
    from flows.progress import duration, what_is_done

    registered = what_is_done()
    then = ("Done before the signal:\n  " + "\n  ".join(registered) + "\n") if registered else ""
    return (f"tooleval: stopped by {name} {done}, {duration(elapsed)} into the run; the calls in flight were "
            f"abandoned.\n{then}Every finished item is cached and landed rows are kept: rerun the same command "
            f"(`{_command} ...`) to resume; it repeats no completed call.")


def _hard_stop(code: int) -> None:
    time.sleep(HARD_STOP_S)
    os._exit(code)


def _on_signal(signum: int, frame: object) -> None:
    global _stopping
    code = exit_code_for(signum)
    if _stopping:  # a second signal while stopping: now
        os._exit(code)
    _stopping = True
    threading.Thread(target=_hard_stop, args=(code,), name="tooleval-hard-stop", daemon=True).start()
    try:
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        try:
            print(stopped_message(signum), file=sys.stderr, flush=True)
        except Exception:  # noqa: BLE001 - the message is a courtesy; the stop is what matters
            pass
        stop_children()
    finally:
        flush_std_streams()
        os._exit(code)
