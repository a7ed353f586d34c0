"""The report's breakdown of a run's scored arguments: argument accuracy per arm x slice (the view
argument_accuracy), how each parameter of each expected tool went wrong (the view argument_outcome_counts),
the calls with each kind of error and, per tool, the rows that chose another tool (the confused pairs, set
beside the tool's argument accuracy). Every share carries its 95% interval with the request as the unit
(clustered Wilson, as tool accuracy's).

Only rows whose arguments were scored count (``arguments_correct`` not null: the expected tool was called with
arguments and the request has expected arguments); an arm x slice with none is not judged, never 0%.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from schemas.selection.rows import ARGUMENT_OUTCOMES_RIGHT
from tasks.stats.estimate import Interval
from tasks.stats.wilson import clustered_wilson_interval
from warehouse.query import records

if TYPE_CHECKING:
    import duckdb


@dataclass(frozen=True)
class SliceArguments:
    """Argument accuracy of an arm x slice over its scored rows (a row of the view argument_accuracy)."""

    arm: str
    rung: int
    slice: str
    n: int
    scored: int
    not_scored: int
    n_requests: int
    right: int
    accuracy: Interval | None
    """None: no row scored (not judged)."""


@dataclass(frozen=True)
class ParameterOutcome:
    """How often one parameter of one expected tool had one outcome in an arm x slice's scored calls of it."""

    arm: str
    rung: int
    slice: str
    tool: str
    parameter: str
    outcome: str
    rows: int
    n_requests: int
    scored_rows: int
    """Scored calls of the tool in the arm x slice: the share's denominator."""
    share: Interval


@dataclass(frozen=True)
class ErrorKind:
    """Of an arm x slice's scored calls, those with at least one parameter of one wrong outcome."""

    arm: str
    rung: int
    slice: str
    outcome: str
    calls: int
    n_requests: int
    scored: int
    share: Interval


@dataclass
class ArgumentBreakdown:
    slices: list[SliceArguments] = field(default_factory=list)
    parameters: list[ParameterOutcome] = field(default_factory=list)
    wrong_tool: dict[tuple[str, str, str], int] = field(default_factory=dict)
    """(arm, slice, expected tool) -> rows with a confused pair (another tool or 'none' chosen)."""
    kinds: list[ErrorKind] = field(default_factory=list)
    unscored_calls: int = 0
    """When nothing was scored: the calls of the expected tool that carried arguments (their requests expect
    none: the set has no expected arguments for them)."""

    @property
    def scored_any(self) -> bool:
        return any(level.scored for level in self.slices)


def is_wrong(outcome: str) -> bool:
    """A parameter outcome that makes a call's arguments wrong (``extra_allowed`` is free)."""
    return outcome not in ARGUMENT_OUTCOMES_RIGHT


def _share(per_request: dict[str, tuple[int, int]]) -> Interval:
    """Clustered Wilson interval of sum(k) / sum(m) from per-request (k, m)."""
    counts = list(per_request.values())
    return clustered_wilson_interval([k for k, _ in counts], [m for _, m in counts])


def load_argument_breakdown(con: duckdb.DuckDBPyConnection, run_id: str) -> ArgumentBreakdown:
    slices = [SliceArguments(arm=r["arm"], rung=r["rung"], slice=r["slice"], n=r["n"], scored=r["scored"],
                             not_scored=r["not_scored"], n_requests=r["n_requests"], right=r["arguments_right"],
                             accuracy=None if not r["scored"] else Interval(
                                 r["accuracy"], r["ci_low"], r["ci_high"], "clustered wilson", r["n_effective"]))
              for r in records(con, "SELECT * FROM argument_accuracy WHERE run_id = ? ORDER BY rung, slice",
                               [run_id])]
    if not any(level.scored for level in slices):
        [(unscored,)] = con.execute(
            "SELECT count(*) FROM selection_rows WHERE run_id = ? AND chosen = expected AND arguments IS NOT NULL "
            "AND outcome IN ('correct', 'invalid')", [run_id]).fetchall()
        return ArgumentBreakdown(slices=slices, unscored_calls=unscored)
    rung = {level.arm: level.rung for level in slices}
    # per (arm, slice, tool): per request, scored calls
    calls: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    # per (arm, slice, tool, parameter, outcome): per request, the scored calls with that outcome
    hits: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    # per (arm, slice): per request, [calls with each wrong outcome, scored calls]
    kinds: dict[tuple, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for r in records(con, "SELECT arm, slice, expected AS tool, request_id, argument_outcomes "
                          "FROM selection_rows WHERE run_id = ? AND arguments_correct IS NOT NULL", [run_id]):
        key = (r["arm"], r["slice"], r["tool"])
        calls[key][r["request_id"]] += 1
        for o in r["argument_outcomes"] or []:
            hits[key + (o["parameter"], o["outcome"])][r["request_id"]] += 1
        per_call = kinds[(r["arm"], r["slice"])][r["request_id"]]
        per_call.update({o["outcome"] for o in r["argument_outcomes"] or [] if is_wrong(o["outcome"])})
        per_call[""] += 1
    parameters = []
    for c in records(con, "SELECT * FROM argument_outcome_counts WHERE run_id = ?", [run_id]):
        key = (c["arm"], c["slice"], c["tool"])
        found = hits[key + (c["parameter"], c["outcome"])]
        per_request = {request: (found.get(request, 0), m) for request, m in calls[key].items()}
        parameters.append(ParameterOutcome(
            arm=c["arm"], rung=rung[c["arm"]], slice=c["slice"], tool=c["tool"], parameter=c["parameter"],
            outcome=c["outcome"], rows=c["rows"], n_requests=c["n_requests"],
            scored_rows=sum(m for _, m in per_request.values()), share=_share(per_request)))
    parameters.sort(key=lambda p: (p.rung, p.slice, -p.rows, p.tool, p.parameter, p.outcome))
    wrong_tool = {(r["arm"], r["slice"], r["tool"]): r["n"] for r in records(
        con, "SELECT arm, slice, expected AS tool, count(*) AS n FROM selection_rows WHERE run_id = ? "
             "AND pair IS NOT NULL GROUP BY ALL", [run_id])}
    return ArgumentBreakdown(slices=slices, parameters=parameters, wrong_tool=wrong_tool,
                             kinds=_kinds(kinds, rung))


def _kinds(kinds: dict[tuple, dict[str, Counter]], rung: dict[str, int]) -> list[ErrorKind]:
    out = []
    for (arm, slice_), per_request in kinds.items():
        found = {outcome for counts in per_request.values() for outcome in counts if outcome}
        for outcome in found:
            share = _share({r: (c[outcome], c[""]) for r, c in per_request.items()})
            out.append(ErrorKind(arm, rung[arm], slice_, outcome, sum(c[outcome] for c in per_request.values()),
                                 sum(1 for c in per_request.values() if c[outcome]),
                                 sum(c[""] for c in per_request.values()), share))
    return sorted(out, key=lambda k: (k.slice, k.rung, -k.calls, k.outcome))
