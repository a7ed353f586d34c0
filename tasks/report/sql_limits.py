"""The time and memory limits of one ``tooleval sql`` statement, and the watch that enforces them.

DuckDB's own ``memory_limit`` bounds only its buffer manager (joins, sorts and aggregates spill to disk
under it); some operators allocate around it (a ``list()`` aggregate grows without bound), so a watch thread
also reads the process's resident memory while a statement runs and interrupts the statement
(``DuckDBPyConnection.interrupt``) when it passes the limit, or when the statement passes its time. What
spills to disk is bounded too (``max_temp_directory_size``), so a runaway sort cannot fill the disk.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator

from contextlib import contextmanager

DEFAULT_TIME_LIMIT_S = 120.0
"""A statement running longer is stopped: analysts' queries over a warehouse answer in seconds."""
DEFAULT_MEMORY_LIMIT = 2 * 1000**3
"""The session process's resident memory a statement may bring it to (bytes): a shared machine keeps its
memory for the runs."""
BUFFER_SHARE = 0.75
"""DuckDB's buffer manager gets this share of the memory limit, so it spills before the watch must stop it."""
SPILL_FACTOR = 2
"""What a statement may spill to disk, as a multiple of the memory limit."""
THREADS = max(1, (os.cpu_count() or 2) // 2)
"""DuckDB's threads: half the cores, so a query leaves the rest to the runs."""
WATCH_EVERY_S = 0.05
GROWTH_BYTES = 32 * 1000**2
"""A statement is stopped for memory once the process is over the limit and it has grown it by this much."""

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|tb|kib|mib|gib|tib)?\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
          "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}


def parse_size(text: str) -> int:
    """Bytes from a size such as ``2GB``, ``512MiB`` or ``1500000000`` (ValueError otherwise)."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r} (e.g. 2GB, 512MB)")
    return int(float(match.group(1)) * _UNITS[(match.group(2) or "b").lower()])


def size_text(n: int) -> str:
    """A size as ``--memory-limit`` reads it (GB = 1000**3 bytes, as DuckDB's settings say)."""
    return f"{n / 1000**3:g} GB" if n >= 1000**3 else f"{n / 1000**2:g} MB"


def resident_bytes() -> int:
    """This process's resident memory now (Linux); elsewhere its peak, which only overstates it."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


@dataclass(frozen=True)
class QueryLimits:
    """How long one statement may run (None: no limit) and the memory the session may reach while it runs."""

    time_s: float | None = DEFAULT_TIME_LIMIT_S
    memory_bytes: int = DEFAULT_MEMORY_LIMIT

    def settings(self) -> list[str]:
        """DuckDB settings applied before the session's configuration is locked."""
        return [f"SET memory_limit = '{int(self.memory_bytes * BUFFER_SHARE)}B'",
                f"SET max_temp_directory_size = '{self.memory_bytes * SPILL_FACTOR}B'",
                f"SET threads = {THREADS}",
                # memory a stopped statement freed goes back to the machine, not kept for the next one
                "SET allocator_background_threads = true", "SET allocator_flush_threshold = '32MiB'"]

    def time_message(self) -> str:
        return f"stopped by the time limit ({self.time_s:g} s): raise --time-limit, 0 for none"

    def memory_message(self, spilled: bool = False) -> str:
        what = f"spill {size_text(self.memory_bytes * SPILL_FACTOR)}" if spilled else size_text(self.memory_bytes)
        return f"stopped by the memory limit ({what}): raise --memory-limit"


@dataclass
class StatementWatch:
    """Interrupts ``interrupt`` when a statement passes its time or the process passes its memory."""

    limits: QueryLimits
    stopped_by: str | None = None
    _done: threading.Event = field(default_factory=threading.Event)

    @contextmanager
    def watching(self, interrupt) -> Iterator[StatementWatch]:
        self.stopped_by, self._done = None, threading.Event()
        watcher = threading.Thread(target=self._watch, args=(interrupt, time.monotonic()),
                                   name="sql-statement-watch", daemon=True)
        watcher.start()
        try:
            yield self
        finally:
            self._done.set()
            watcher.join()

    def _watch(self, interrupt, started: float) -> None:
        # memory the process kept from an earlier statement does not stop this one until this one grows it
        grown = resident_bytes() + GROWTH_BYTES
        while not self._done.wait(WATCH_EVERY_S):
            if self.limits.time_s and time.monotonic() - started > self.limits.time_s:
                self.stopped_by = self.limits.time_message()
            elif (resident := resident_bytes()) > self.limits.memory_bytes and resident > grown:
                self.stopped_by = self.limits.memory_message()
            else:
                continue
            interrupt()
            return
