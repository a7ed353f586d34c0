"""Python's cyclic garbage collector held off while a process imports its libraries (a few hundred thousand
long-lived objects and little garbage, which it would scan again and again), then resumed with everything
alive by then frozen (``gc.freeze``: imported modules are never garbage). Standard library only."""

from __future__ import annotations

import gc

pause = gc.disable


def resume() -> None:
    """Start the collector again if it is held off, with everything alive by then frozen."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
