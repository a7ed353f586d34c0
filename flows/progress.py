"""What a run says while it runs: its first line at once, then progress over its work units.

On a terminal (stdout and stderr both terminals) one status line on stderr is redrawn in place, at most
five times a second: units done / total, items (rows, or task runs), items per second, cache hits and the time left. Elsewhere (a
pipe, a file, CI, a deployment's worker) a plain line every ``TOOLEVAL_PROGRESS_EVERY_S`` seconds (default
10) and a last one when the units are done: on stderr when the ``tooleval`` command runs the flow, through
the flow run's logger (INFO) otherwise. Progress never goes to stdout, which holds the report.

A timer also writes a line while no unit finishes (a unit of a slow hosted model can run for minutes),
counting the items finished inside the running units (``in_flight``: tasks/run/item_counter.py). This module
imports nothing heavy: the console script imports it before anything else.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
import threading
import time
from typing import Callable, TextIO

EVERY_ENV = "TOOLEVAL_PROGRESS_EVERY_S"
DEFAULT_EVERY_S = 10.0
REDRAW_S = 0.2
TICK_ON_TERMINAL_S = 1.0
"""On a terminal the timer redraws the line every second (the elapsed time and the items inside units move)."""

_announced: set[str] = set()
_done: list[str] = []
"""What this process's run has finished for good (rows registered, reports written), for a message that
ends the run early (a lost Prefect API: flows/prefect_server.py ApiWatch)."""
_to_stderr = False
"""Set by the ``tooleval`` command: progress goes to its stderr rather than to the flow run's logger."""


def announce(line: str, key: str = "first line") -> None:
    """Print a line on stderr once per ``key``: the command's first line is printed by the console script
    before its imports, and again (not printed twice) by the command itself when called another way."""
    if key in _announced:
        return
    _announced.add(key)
    print(folded(line), file=sys.stderr, flush=True)


def folded(text: str) -> str:
    """A message folded at words to the terminal's width (COLUMNS when set; 100 off a terminal), later lines
    indented; a path longer than a line is kept whole."""
    width = shutil.get_terminal_size((100, 24)).columns
    return textwrap.fill(text, width=max(width, 40), subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False)


def fitted(line: str) -> str:
    """One line of a command's output folded at words to the terminal's width (COLUMNS; 100 off a terminal),
    its own indent kept and its later lines indented two more."""
    indent = line[:len(line) - len(line.lstrip())]
    width = max(40, shutil.get_terminal_size((100, 24)).columns)
    return textwrap.fill(line.strip(), width, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_long_words=False, break_on_hyphens=False)


def done_for_good(line: str) -> None:
    """Note a step of the run that nothing later can undo (e.g. 'run R: 540 rows registered in FILE')."""
    _done.append(line)


def what_is_done() -> list[str]:
    return list(_done)


def report_on_stderr() -> None:
    """The ``tooleval`` command shows progress on its own stderr (called before it runs a flow)."""
    global _to_stderr
    _to_stderr = True


def on_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def duration(seconds: float) -> str:
    """'7 s', '3 min 05 s', '1 h 02 min'."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class UnitProgress:
    """Progress over a run's work units: ``update`` once per finished unit, ``finish`` at the end."""

    def __init__(self, total_units: int, total_rows: int, *, counted: str = "rows", doing: str = "selecting",
                 stream: TextIO | None = None,
                 log: Callable[[str], None] | None = None, live: bool | None = None,
                 every_s: float | None = None, clock: Callable[[], float] = time.monotonic,
                 in_flight: Callable[[], tuple[int, int]] | None = None) -> None:
        self.total_units, self.total_rows = total_units, total_rows
        self.counted, self.doing = counted, doing
        self.units = self.rows = self.cache_hits = 0
        self.stream = stream if stream is not None else sys.stderr
        self.log = log
        self.live = on_terminal(self.stream) if live is None else live
        if every_s is None:
            try:
                every_s = float(os.environ.get(EVERY_ENV, DEFAULT_EVERY_S))
            except ValueError:
                every_s = DEFAULT_EVERY_S
        self.every_s = every_s
        self.clock = clock
        self.in_flight = in_flight
        """(units running, items finished inside them), or None when nothing counts them."""
        self.started = clock()
        self._last = self.started
        self._width = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None

    def status(self, ticking: bool = False) -> str:
        """The line: units, items (those finished inside running units included), rate, cache hits, time
        left; on a timer's line also the units running and the time elapsed."""
        elapsed = max(self.clock() - self.started, 1e-9)
        running, inside = self.in_flight() if self.in_flight is not None else (0, 0)
        running = min(running, self.total_units - self.units)
        done = min(self.rows + inside, self.total_rows)
        rate = done / elapsed
        left = (self.total_rows - done) / rate if rate > 0 else None
        eta = "done" if self.units >= self.total_units else (f"ETA {duration(left)}" if left is not None else "ETA ?")
        rate_text = f"{rate:,.0f}" if rate >= 10 or rate == 0 else f"{rate:,.2f}"
        line = (f"units {self.units:,}/{self.total_units:,} · {self.counted} {done:,}/{self.total_rows:,} · "
                f"{rate_text} {self.counted}/s · {self.cache_hits:,} cached · {eta}")
        if ticking and self.units < self.total_units:
            line += (f" · {running:,} unit{'s' if running != 1 else ''} running" if running else "") + \
                f" · {duration(elapsed)} elapsed"
        return line

    def start(self) -> "UnitProgress":
        """Say at once that the units have started (the line a terminal then redraws), and start the timer
        that writes a line every ``every_s`` seconds while no unit finishes."""
        self._emit(f"units 0/{self.total_units:,} · {self.counted} 0/{self.total_rows:,} · {self.doing} ...", final=False)
        interval = TICK_ON_TERMINAL_S if self.live else self.every_s
        if interval > 0 and self._timer is None and self.clock is time.monotonic:  # a test's clock ticks by hand
            self._timer = threading.Thread(target=self._tick, args=(interval,), name="tooleval-progress", daemon=True)
            self._timer.start()
        return self

    def _tick(self, interval: float) -> None:
        while not self._stop.wait(max(interval - (self.clock() - self._last), 0.05)):
            self.tick(interval)

    def tick(self, interval: float | None = None) -> None:
        """The timer's line, when nothing was written for ``interval`` seconds (default ``every_s``)."""
        interval = interval if interval is not None else (TICK_ON_TERMINAL_S if self.live else self.every_s)
        with self._lock:
            if self._stop.is_set() or self.clock() - self._last < interval * 0.999:
                return
            self._last = self.clock()
            self._emit(self.status(ticking=True), final=False)

    def update(self, n_rows: int, n_cache_hits: int = 0) -> None:
        with self._lock:
            self.units += 1
            self.rows += n_rows
            self.cache_hits += n_cache_hits
            now = self.clock()
            if now - self._last >= (REDRAW_S if self.live else self.every_s):
                self._last = now
                self._emit(self.status(), final=False)

    def finish(self) -> None:
        self._stop.set()
        with self._lock:
            self._emit(self.status() + f" · {duration(self.clock() - self.started)}", final=True)

    def _columns(self) -> int:
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80
        except (AttributeError, OSError, ValueError):
            return 80

    def _emit(self, text: str, final: bool) -> None:
        if self.live:
            text = text[:max(self._columns() - 1, 20)]  # one line that \r can redraw: never wrapped
            pad = " " * max(0, self._width - len(text))
            self._width = len(text)
            self.stream.write(f"\r{text}{pad}" + ("\n" if final else ""))
            self.stream.flush()
        elif self.log is not None and not _to_stderr:
            self.log(f"progress: {text}")
        else:
            self.stream.write(f"progress: {text}\n")
            self.stream.flush()
