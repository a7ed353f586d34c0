"""Python's cyclic garbage collector held off while a run imports its libraries, then resumed.

Importing Prefect, pydantic models and the tool allocates a few hundred thousand long-lived objects and no
garbage to speak of; the collector still scans them again and again as they are created (~14% of the CPU
of importing Prefect's server app, ~10-20% of a run's own imports, py-spy and /usr/bin/time on 2 cores).
``pause()`` stops it; ``resume()`` moves every object alive by then into the permanent generation
(``gc.freeze``: imported modules are never garbage) and starts it again, so the run's own objects are
collected as usual and later collections no longer walk the imported ones. Standard library only: the
launcher and the temporary server's app factory call it before anything heavy is imported."""

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
