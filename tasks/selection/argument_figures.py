"""The argument figures of a run, read from the views and given their request-clustered intervals.

For the gates and the per-tool tables: argument accuracy per arm x slice x tool, its paired change per tool
between the arms of each declared comparison, and each hallucinated parameter's share of its tool's scored
calls (views per_tool_argument_accuracy, paired_argument_requests, hallucinated_parameter_share). For the
report's breakdown: argument accuracy per arm x slice (argument_accuracy), how each parameter of each expected
tool went wrong (argument_outcome_counts), the calls with each kind of error and, per tool, the rows that chose
another tool (the confused pairs).

Only rows whose arguments were scored count (``arguments_correct`` not null); a figure with no scored row
behind it is absent (``accuracy`` or ``paired`` None): NOT JUDGED, never 0%."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from schemas.selection.rows import ARGUMENT_OUTCOMES_RIGHT
from tasks.stats.estimate import Interval
from tasks.stats.paired import PairedComparison, paired_comparison
from tasks.stats.wilson import clustered_wilson_from_sums, clustered_wilson_interval
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


def seed_spread(seed_min: float | None, seed_max: float | None) -> float:
    """max - min over the seeds' figures; 0 when either is unknown or the difference is float noise."""
    if seed_min is None or seed_max is None or seed_max - seed_min < SPREAD_EPSILON:
        return 0.0
    return float(seed_max - seed_min)


def tool_spellings(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[tuple[str, str], str]:
    """(arm, label) -> the tool as the arm offers it: the per-tool views name a tool so, a paired change as the
    version labels it."""
    return {(r["arm"], r["label"]): r["expected"] for r in records(
        con, "SELECT DISTINCT arm, label, expected FROM request_outcomes WHERE run_id = ?", [run_id])}


def load_argument_figures(con: duckdb.DuckDBPyConnection, run_id: str,
                          spelled: dict[tuple[str, str], str] | None = None) -> ArgumentFigures:
    """``spelled``: ``tool_spellings`` of the run when the caller has read them."""
    tools = [ArgumentLevel(r["arm"], r["rung"], r["slice"], r["tool"], r["n"], r["scored"], r["arguments_right"],
                           r["n_requests"],
                           Interval(r["accuracy"], r["ci_low"], r["ci_high"], "clustered wilson", r["n_effective"])
                           if r["scored"] else None, seed_spread(r["seed_min"], r["seed_max"]))
             for r in records(con, "SELECT * FROM per_tool_argument_accuracy WHERE run_id = ? "
                                   "ORDER BY slice, tool, rung", [run_id])]
    if not any(level.scored for level in tools):
        return ArgumentFigures(tools=tools)
    spread = {(x.arm, x.slice, x.tool): x.seed_spread for x in tools}
    spelled = tool_spellings(con, run_id) if spelled is None else spelled
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
    """The breakdown of a run some of whose rows had their arguments scored (figures.py counts them first)."""
    slices = [SliceArguments(arm=r["arm"], rung=r["rung"], slice=r["slice"], n=r["n"], scored=r["scored"],
                             not_scored=r["not_scored"], n_requests=r["n_requests"], right=r["arguments_right"],
                             accuracy=None if not r["scored"] else Interval(
                                 r["accuracy"], r["ci_low"], r["ci_high"], "clustered wilson", r["n_effective"]))
              for r in records(con, "SELECT * FROM argument_accuracy WHERE run_id = ? ORDER BY rung, slice",
                               [run_id])]
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
