"""Python's cyclic garbage collector held off while a process imports its libraries, then resumed.

Importing Prefect, pydantic models and the tool allocates a few hundred thousand long-lived objects and
little garbage, which the collector would scan again and again as they are created. ``pause()`` stops it;
``resume()`` moves every object alive by then into the permanent generation (``gc.freeze``: imported
modules are never garbage) and starts it again. Standard library only: the launcher and the local Prefect
server's app (flows/server_app.py) call it before anything heavy is imported."""

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

