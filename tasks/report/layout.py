"""How a report table is cut: its rows into groups (a rule between them) and its rungs into tables that fit."""

from __future__ import annotations

from typing import Any, Sequence, TypeVar

T = TypeVar("T")

ARMS_PER_TABLE = 4
"""Rungs side by side in one table (more are split over several tables to fit 100 columns)."""


def group_starts(keys: Sequence[Any]) -> list[int]:
    """The indexes of the rows that start a new group: where a row's key is not the key of the row before."""
    return [i for i in range(1, len(keys)) if keys[i] != keys[i - 1]]


def in_tables(items: Sequence[T], size: int = ARMS_PER_TABLE) -> list[tuple[str, list[T]]]:
    """``items`` in runs of at most ``size``, each with its part of a table's title (' (2/3)'; '' for one run)."""
    runs = [list(items[i:i + size]) for i in range(0, len(items), size)]
    return [(f" ({k + 1}/{len(runs)})" if len(runs) > 1 else "", run) for k, run in enumerate(runs)]
