"""How many probability-map entries a selection run's rows carry at most: the disk a run asks for before it
starts counts them (tasks/run/preflight.py)."""

from __future__ import annotations

from tasks.instrument_api import PreparedRun


def probability_map_entries(prepared: PreparedRun) -> int:
    """Per row one entry per option offered (its arm's catalogue, or the request's own tools, and 'none'),
    twice when the arm routes through a decision model (the router's map beside the selector's); counted as
    if every selector gave probabilities."""
    total = 0
    for arm in prepared.experiment.arms:
        options = getattr(arm, "selector_options", None) or {}
        maps = 2 if options.get("route") or options.get("router") else 1
        items = prepared.instrument.work_items(prepared.versions[arm.version])
        if arm.catalogue is not None:
            total += len(items) * (len(arm.catalogue.tools) + 1) * maps
        else:
            total += sum(len(getattr(item, "tools", None) or ()) + 1 for item in items) * maps
    return total * len(prepared.experiment.seeds)
