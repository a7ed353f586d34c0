"""Python's cyclic garbage collector held off while a process imports its libraries (a few hundred thousand
long-lived objects and little garbage, which it would scan again and again), then resumed with everything
alive by then frozen (``gc.freeze``: imported modules are never garbage). Standard library only."""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Start the collector again if ``pause()`` stopped it (a caller that never paused is left alone)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
