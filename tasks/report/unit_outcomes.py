"""A run's outcomes per statistical unit, as columns: a request for selection (the ``request_outcomes`` view),
a task for tasks on a surface (``task_outcomes``); each with its slice, how many of its trials (seeds) were
right, and its trials. What every instrument's paired comparisons and 2x2 interaction tables are computed
from, on the units the arms compared all ran.

Columns, not Python records: a large run has hundreds of thousands of requests, an order of magnitude
smaller as a polars frame than as dicts; lists are made only for the group a statistic needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from tasks.stats.estimate import Interval
from tasks.stats.interaction import Factorial, InteractionTable, interaction_table
from tasks.stats.paired import PairedComparison, paired_comparison
from tasks.stats.wilson import clustered_wilson_from_sums
from warehouse.query import frame

if TYPE_CHECKING:  # polars is imported where a frame is worked on: reading a module costs no frame library
    import duckdb
    import polars as pl


@dataclass(frozen=True)
class Interaction:
    """A 2x2 of four arms, on one slice (slices are never pooled)."""

    factorial: Factorial
    slice: str
    table: InteractionTable


class UnitOutcomes:
    """Columns ``arm``, ``unit``, ``slice``, ``correct``, ``trials`` and whatever else the query selects."""

    def __init__(self, frame: pl.DataFrame):
        self.frame = frame

    @classmethod
    def read(cls, con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> UnitOutcomes:
        return cls(frame(con, sql, params))

    def arm(self, arm: str) -> pl.DataFrame:
        import polars as pl

        return self.frame.filter(pl.col("arm") == arm)

    def clustered_rates(self, keys: list[str], count: str) -> dict[tuple, Interval]:
        """Per group of ``keys``, the unit-clustered Wilson interval of ``count`` (e.g. failed) out of the
        trials, from the group's sums (``tasks/stats/wilson``), without making a list per group."""
        import polars as pl

        p = pl.col(count).sum() / pl.col("trials").sum()
        residual = pl.col(count) - p * pl.col("trials")
        sums = self.frame.group_by(keys).agg(k=pl.col(count).sum(), m=pl.col("trials").sum(),
                                             e2=(residual ** 2).sum(), e4=(residual ** 4).sum(), n=pl.len())
        return {tuple(r[key] for key in keys): clustered_wilson_from_sums(r["k"], r["m"], r["e2"], r["e4"], r["n"])
                for r in sums.iter_rows(named=True)}

    def aligned(self, arms: Sequence[str], extra: Sequence[str] = ()) -> pl.DataFrame:
        """The units every one of ``arms`` ran, one row each, sorted by unit: the first arm's slice and, per
        arm ``i``, ``correct_i``, ``trials_i`` and each ``extra`` column as ``<name>_i``."""
        import polars as pl

        joined = None
        for i, name in enumerate(arms):
            part = self.arm(name).select(
                "unit", *(["slice"] if i == 0 else []), *(pl.col(c).alias(f"{c}_{i}") for c in extra),
                pl.col("correct").alias(f"correct_{i}"), pl.col("trials").alias(f"trials_{i}"))
            joined = part if joined is None else joined.join(part, on="unit", how="inner")
        return joined.sort("unit")

    def interactions(self, factorials: Sequence[Factorial]) -> list[Interaction]:
        """Each 2x2's interaction table per slice, on the units all four arms ran."""
        import polars as pl

        found = []
        for factorial in factorials:
            common = self.aligned([factorial.baseline, factorial.first, factorial.second, factorial.both])
            for slice_ in sorted(common["slice"].unique().to_list()):
                part = common.filter(pl.col("slice") == slice_)
                table = interaction_table([part[f"correct_{i}"].to_list() for i in range(4)],
                                          [part[f"trials_{i}"].to_list() for i in range(4)])
                found.append(Interaction(factorial, slice_, table))
        return found


def paired(rows: pl.DataFrame, a: int = 0, b: int = 1) -> PairedComparison:
    """The paired comparison of arms ``a`` and ``b`` of ``UnitOutcomes.aligned`` rows."""
    return paired_comparison(rows[f"correct_{a}"].to_list(), rows[f"trials_{a}"].to_list(),
                             rows[f"correct_{b}"].to_list(), rows[f"trials_{b}"].to_list())
