"""Named points of a run where the failure drill (benchmarks/failure_drill.py, tests/drill/) kills the process.

    TOOLEVAL_DRILL_KILL_AT=unit-landed:3 tooleval run ...   # SIGKILL when the 3rd work unit has landed

``reached(point)`` costs one dictionary lookup when the variable is unset (every normal run). When it names
this point (``POINT`` or ``POINT:N`` for the N-th time this process reaches it), the process sends itself
SIGKILL: nothing is flushed, no ``finally`` or ``atexit`` runs, exactly as with ``kill -9`` from outside,
but at a moment that does not depend on the machine's speed. ``TOOLEVAL_DRILL_LOG=FILE`` appends one line
per point reached (``point<TAB>detail``, flushed to disk before any kill) so the drill can tell which
selections completed before the kill and which were still in flight.

``TOOLEVAL_DRILL_DISK_FULL_AFTER=unit-landed:3`` fills the disk instead: once the process has reached the
point (the N-th time), every landing of rows (``check_space``, called before a Parquet partition is written)
fails as a full disk does (ENOSPC), so the drill can check where a run stops without a small file system.
"""

from __future__ import annotations

import errno
import os
import signal
import threading

KILL_ENV = "TOOLEVAL_DRILL_KILL_AT"
LOG_ENV = "TOOLEVAL_DRILL_LOG"
FULL_ENV = "TOOLEVAL_DRILL_DISK_FULL_AFTER"

POINTS = {
    "label-checks": "the label checks of a task-set version are about to run (before Prefect is used)",
    "server-started": "the temporary Prefect server answers; no flow has run yet",
    "unit-selecting": "a work unit is about to call its selector for its cache misses",
    "judge-calling": "a judged arm's chat call is done and kept apart; its judge is about to be asked",
    "unit-selected": "a work unit's selector returned; its answers are not cached yet (in flight)",
    "unit-landed": "a work unit's rows are cached and landed as Parquet",
    "all-landed": "every unit has landed; the run's records are not saved yet",
    "records-saved": "the run's records are saved beside the rows; registration has not started",
    "registration-uncommitted": "the rows are inserted in the DuckDB transaction, not committed",
    "registered": "the registration committed; nothing is judged or published yet",
    "report-verdict-saved": "the verdict is saved; the markdown and HTML reports are not written yet",
    "published": "the reports are written; earlier runs' leftovers are not tidied yet",
}
"""Every point ``reached`` is called with, in the order a run passes them."""

_lock = threading.Lock()
_counts: dict[str, int] = {}


def reached(point: str, detail: str = "") -> None:
    """Log the point (when asked) and kill this process if the drill chose it."""
    wanted = os.environ.get(KILL_ENV)
    log = os.environ.get(LOG_ENV)
    if not wanted and not log and not os.environ.get(FULL_ENV):
        return
    with _lock:
        _counts[point] = count = _counts.get(point, 0) + 1
        if log:
            with open(log, "a") as handle:
                handle.write(f"{point}\t{detail}\n")
                handle.flush()
                os.fsync(handle.fileno())
        if wanted and wanted in (point, f"{point}:{count}"):
            os.kill(os.getpid(), signal.SIGKILL)


def check_space(path: object) -> None:
    """Raise ENOSPC for a write to ``path`` once the point ``TOOLEVAL_DRILL_DISK_FULL_AFTER`` names has been
    reached (``POINT`` or ``POINT:N``); nothing when it is unset."""
    wanted = os.environ.get(FULL_ENV)
    if not wanted:
        return
    point, _, nth = wanted.partition(":")
    with _lock:
        count = _counts.get(point, 0)
    if count >= int(nth or 1):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
