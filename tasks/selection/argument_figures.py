"""The argument figures a run's gates and report read: argument accuracy per arm x slice x tool with its
request-clustered interval, its paired change per tool between the arms of each declared comparison, and each
hallucinated parameter's share of its tool's scored calls, from the views per_tool_argument_accuracy,
paired_argument_requests and hallucinated_parameter_share.

A figure with no scored row behind it is absent (an ``ArgumentLevel`` without ``accuracy``, an
``ArgumentChange`` without ``paired``): NOT JUDGED, never 0%."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tasks.stats.estimate import Interval
from tasks.stats.paired import PairedComparison, paired_comparison
from tasks.stats.wilson import clustered_wilson_from_sums
from warehouse.query import records

if TYPE_CHECKING:
    import duckdb

SPREAD_EPSILON = 1e-9
"""Seed spreads below this are float noise: identical seeds."""


@dataclass(frozen=True)
class ArgumentLevel:
    """Argument accuracy of one tool in an arm x slice: over the rows whose arguments were scored."""

    arm: str
    rung: int
    slice: str
    tool: str
    n: int
    """Rows expecting the tool, scored or not."""
    scored: int
    arguments_right: int
    n_requests: int
    """Requests with a scored row."""
    accuracy: Interval | None
    """arguments_right / scored with its request-clustered interval; None when nothing was scored."""
    seed_spread: float = 0.0


@dataclass(frozen=True)
class ArgumentChange:
    """The paired change of one tool's argument accuracy between two arms, on the requests scored in both."""

    baseline: str
    arm: str
    slice: str
    tool: str
    paired: PairedComparison | None
    """None when no request was scored in both arms: the change was not measured."""
    one_side: int
    """Requests scored in one arm only, left out of the change."""
    spread_baseline: float = 0.0
    spread_arm: float = 0.0

    @property
    def noise_floor(self) -> float:
        """The larger seed spread of the two arms (stated beside a change; the interval judges it)."""
        return max(self.spread_baseline, self.spread_arm)


@dataclass(frozen=True)
class HallucinationShare:
    """A parameter the tool's schema does not have, sent in some of the tool's scored calls of an arm x slice."""

    arm: str
    slice: str
    tool: str
    parameter: str
    hallucinated: int
    scored: int
    share: Interval
    """hallucinated / scored with its request-clustered interval."""


@dataclass
class ArgumentFigures:
    tools: list[ArgumentLevel] = field(default_factory=list)
    changes: list[ArgumentChange] = field(default_factory=list)
    hallucinations: list[HallucinationShare] = field(default_factory=list)

    @property
    def scored(self) -> bool:
        """Some row's arguments were scored (the run's requests carry expected arguments)."""
        return any(level.scored for level in self.tools)

    def scored_in(self, arm: str) -> bool:
        return any(level.scored for level in self.tools if level.arm == arm)


def no_scored_share(level: ArgumentLevel) -> Interval:
    """The share 0 of ``level``'s scored calls, with its request-clustered interval (p = 0: on the requests)."""
    return clustered_wilson_from_sums(0, level.scored, 0.0, 0.0, level.n_requests)


def _spread(seed_min: float | None, seed_max: float | None) -> float:
    if seed_min is None or seed_max is None or seed_max - seed_min < SPREAD_EPSILON:
        return 0.0
    return float(seed_max - seed_min)


def load_argument_figures(con: duckdb.DuckDBPyConnection, run_id: str) -> ArgumentFigures:
    tools = [ArgumentLevel(r["arm"], r["rung"], r["slice"], r["tool"], r["n"], r["scored"], r["arguments_right"],
                           r["n_requests"],
                           Interval(r["accuracy"], r["ci_low"], r["ci_high"], "clustered wilson", r["n_effective"])
                           if r["scored"] else None, _spread(r["seed_min"], r["seed_max"]))
             for r in records(con, "SELECT * FROM per_tool_argument_accuracy WHERE run_id = ? "
                                   "ORDER BY slice, tool, rung", [run_id])]
    if not any(level.scored for level in tools):
        return ArgumentFigures(tools=tools)
    spread = {(x.arm, x.slice, x.tool): x.seed_spread for x in tools}
    # per_tool_argument_accuracy names a tool as its arm offers it; a change names it as the version labels it
    spelled = {(r["arm"], r["label"]): r["expected"] for r in records(
        con, "SELECT DISTINCT arm, label, expected FROM request_outcomes WHERE run_id = ?", [run_id])}
    groups: dict[tuple[str, str, str, str], list[dict]] = {}
    for r in records(con, "SELECT * FROM paired_argument_requests WHERE run_id = ?", [run_id]):
        groups.setdefault((r["baseline"], r["arm"], r["slice"], r["tool"]), []).append(r)
    changes = []
    for (base, arm, slice_, tool), rows in groups.items():
        pairs = [r for r in rows if r["paired"]]
        paired = paired_comparison([r["right_baseline"] for r in pairs], [r["scored_baseline"] for r in pairs],
                                   [r["right_arm"] for r in pairs], [r["scored_arm"] for r in pairs]) if pairs else None
        changes.append(ArgumentChange(base, arm, slice_, tool, paired, len(rows) - len(pairs),
                                      spread.get((base, slice_, spelled.get((base, tool), tool)), 0.0),
                                      spread.get((arm, slice_, spelled.get((arm, tool), tool)), 0.0)))
    order = {(c["baseline"], c["arm"]): i for i, c in enumerate(records(
        con, "SELECT c.baseline, c.arm FROM comparisons c JOIN arms a ON a.run_id = c.run_id AND a.arm = c.arm "
             "WHERE c.run_id = ? ORDER BY a.rung", [run_id]))}
    changes.sort(key=lambda c: (order.get((c.baseline, c.arm), 0), c.slice, c.tool))
    hallucinations = [HallucinationShare(r["arm"], r["slice"], r["tool"], r["parameter"], r["hallucinated"],
                                         r["scored"], Interval(r["share"], r["ci_low"], r["ci_high"],
                                                               "clustered wilson", r["n_effective"]))
                      for r in records(con, "SELECT * FROM hallucinated_parameter_share WHERE run_id = ?", [run_id])]
    return ArgumentFigures(tools=tools, changes=changes, hallucinations=hallucinations)
