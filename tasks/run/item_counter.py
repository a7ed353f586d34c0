"""Items finished inside work units that are still running, for the run's progress line (flows/progress.py).

A unit bumps its own count as each item finishes (a selection answered, a task run ended); the progress line
reads the counts of the units it has not yet seen finish, so a pipe shows work done inside a long unit, not
only whole units. Per process: with a runner that spreads units over processes (Dask) the counts of other
processes are not seen, and the line falls back to units, elapsed time and units in flight.
"""

from __future__ import annotations

import threading
from collections import Counter

_lock = threading.Lock()
_finished: Counter = Counter()
_started: set[str] = set()
_landed = [0, 0]
"""Units landed in this process, and their items: what a stopped run says it kept."""


def unit_started(label: str) -> None:
    """A unit has started (the progress line counts units in flight)."""
    with _lock:
        _started.add(label)


def item_finished(label: str, n: int = 1) -> None:
    """``n`` more items of the unit ``label`` are finished (and cached)."""
    with _lock:
        _started.add(label)
        _finished[label] += n


def unit_done(label: str) -> None:
    """The unit has returned: its items now count as landed, not as inside a running unit."""
    with _lock:
        _started.discard(label)
        _finished.pop(label, None)


def unit_landed(n_items: int) -> None:
    """A unit's rows have landed (its Parquet is written)."""
    with _lock:
        _landed[0] += 1
        _landed[1] += n_items


def landed() -> tuple[int, int]:
    """(units landed, their items) in this process."""
    with _lock:
        return _landed[0], _landed[1]


def in_flight() -> tuple[int, int]:
    """(units started and not done, items finished inside them)."""
    with _lock:
        return len(_started), sum(_finished.values())


def reset() -> None:
    with _lock:
        _started.clear()
        _finished.clear()
        _landed[:] = [0, 0]
