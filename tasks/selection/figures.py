"""Every figure of a run's report and gates, read from the warehouse views and given its uncertainty.

Counts, accuracies and the request-clustered Wilson intervals of slices and tools come from the SQL views
(read through ``open_read_only``, which defines them as this version's temporary views when the file's
stored views are another version's; SQL and ``tasks/stats`` agree). The other intervals are
computed here from the ``request_outcomes`` view, read as columns, with ``tasks/stats`` (closed form, no
resampling): failure rates, paired changes, weighted figures, the threshold split, interaction gaps. The
report tables and the gates both read a ``RunFigures``, so what a
gate judges is exactly what the report shows.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from tasks.selection.argument_figures import (ArgumentBreakdown, ArgumentFigures, load_argument_breakdown,
                                              load_argument_figures, seed_spread)
from tasks.taskset.provisional_labels import provisional_notice
from warehouse.query import frame, records
from tasks.stats.estimate import Interval
from tasks.report.unit_outcomes import Interaction, UnitOutcomes, paired
from tasks.report.version_calibration import VersionCalibration, version_calibrations
from tasks.stats.interaction import find_factorials
from tasks.stats.paired import PairedComparison
from tasks.stats.paired_score import paired_score_interval
from tasks.stats.weighted import WeightedChange, weighted_accuracy, weighted_change
from tasks.stats.wilson import clustered_wilson_from_sums, clustered_wilson_interval

if TYPE_CHECKING:  # the frame library, DuckDB and numpy (the calibration figures) are imported where used
    import duckdb

    from tasks.stats.calibration import CoveragePoint, EceIfCalibrated, ThresholdFit

PRESENT = """
    SELECT count(*) FILTER (WHERE arguments_correct IS NOT NULL) AS scored,
           count(*) FILTER (WHERE chosen = expected AND arguments IS NOT NULL AND outcome IN ('correct', 'invalid'))
               AS unscored_calls,
           count(*) FILTER (WHERE selector IN ('openai', 'anthropic') OR route IS NOT NULL) AS hosted,
           count(judge_verdict) AS judged, count(nearest_example_cos) AS distances
    FROM selection_rows WHERE run_id = ?"""
"""What a run's rows hold, counted in one pass, so that a view whose rows the report would not use is not read:
rows with scored arguments (without them: the calls that sent arguments to a request expecting none), of a
hosted or routed arm (the arm_operations view's table and served-model evidence), judged
(judge_argument_check), with a nearest-example distance (far_from_examples)."""

ROUTER_TARGET_ACCURACY = 0.90
"""Accuracy the threshold finder asks of the decisions a router keeps (the rest go to the chat model)."""


@dataclass(frozen=True)
class Level:
    """One proportion with its interval and seed figures (an arm x slice, or an arm x slice x tool)."""

    arm: str
    rung: int
    slice: str
    correct: int
    n: int
    n_requests: int
    accuracy: float
    ci_low: float
    ci_high: float
    seed_min: float
    seed_max: float
    seed_accuracies: list[float] = field(default_factory=list)
    n_effective: float | None = None
    """Effective number of independent trials behind the interval (requests when seeds agree)."""

    @property
    def seed_spread(self) -> float:
        return seed_spread(self.seed_min, self.seed_max)

    @property
    def interval(self) -> Interval:
        return Interval(self.accuracy, self.ci_low, self.ci_high, "clustered wilson")


@dataclass(frozen=True)
class Change:
    """A paired change between two arms for one slice (tool = None) or one tool of a slice."""

    baseline: str
    arm: str
    slice: str
    tool: str | None
    paired: PairedComparison
    spread_baseline: float
    spread_arm: float
    n_relabelled: int = 0
    """Requests of the baseline's tool whose label differs in the arm (left out of a per-tool change)."""

    @property
    def noise_floor(self) -> float:
        """The larger seed spread of the two arms (shown beside a change; it judges nothing: the interval
        already counts how much a request's seeds disagree)."""
        return max(self.spread_baseline, self.spread_arm)

    @property
    def significant(self) -> bool:
        """The 95% paired interval excludes 0 (the p-value printed beside it is the score test that interval
        inverts: p < 0.05 exactly then). The seed spread never overrides this: the interval is taken over every
        seed of every request, with the request as the cluster."""
        return self.paired.significant


@dataclass(frozen=True)
class WeightedLevel:
    arm: str
    rung: int
    weighted: Interval | None
    unweighted: float
    weight_covered: float
    seed_min: float | None
    seed_max: float | None

    @property
    def seed_spread(self) -> float:
        return seed_spread(self.seed_min, self.seed_max)


@dataclass(frozen=True)
class PairShare:
    """A confused pair's share of an arm's failures, with a request-clustered interval."""

    arm: str
    rung: int
    expected: str
    chosen: str
    n: int
    n_failures: int
    share: Interval
    n_offered_together: int | None
    pair_rate: float | None


@dataclass(frozen=True)
class Calibration:
    arm: str
    rung: int
    n: int
    accuracy: float
    mean_confidence: float
    ece: float
    brier: float
    terciles: list[dict[str, Any]]
    bins: list[dict[str, Any]]
    threshold: ThresholdFit
    gap: Interval
    """Accuracy of the most confident third minus the least confident third, request-clustered interval."""
    coverage: list[CoveragePoint] = field(default_factory=list)
    """Accuracy of the decisions kept at confidence >= t, and the share kept, for t = 0, 0.1, ..., 0.9."""
    n_requests: int = 0
    """Requests behind the rows (each under every seed): the unit of every interval here."""
    tercile_intervals: list[Interval | None] = field(default_factory=list)
    """Accuracy of the least, middle and most confident thirds with request-clustered intervals."""
    bin_intervals: list[Interval | None] = field(default_factory=list)
    """Accuracy of each of the ten confidence bins with a request-clustered interval."""
    brier_interval: Interval | None = None
    ece_if_calibrated: EceIfCalibrated | None = None
    """The ECE a perfectly calibrated selector would show with these confidences on these requests (its noise
    floor: tasks/stats/calibration.py)."""


@dataclass(frozen=True)
class FailureLevel:
    """Invalid, error and empty rows of an arm x slice: counted apart, never folded into wrong answers."""

    arm: str
    rung: int
    slice: str
    n: int
    invalid: int
    error: int
    empty: int
    rate: Interval
    """Share of rows that failed (invalid + error + empty), request-clustered interval."""
    text_calls: int = 0
    """Of the invalid rows, replies that wrote a tool call as text (``functions.NAME:``, ``<tool_call>``)."""


@dataclass(frozen=True)
class PositionShift:
    """Within-request position effect of an arm x slice: each request whose expected tool stood at
    different positions under different seeds, right at its latest position minus right at its earliest.
    With one permutation per seed, accuracy by position band mixes tools; this contrast does not."""

    arm: str
    rung: int
    slice: str
    n_requests: int
    change: Interval
    """Mean of (right when latest) - (right when earliest), paired score interval over requests."""
    worse: int
    """Requests right at their earliest position and wrong at their latest."""
    better: int


@dataclass
class RunFigures:
    run: dict[str, Any]
    arms: list[dict[str, Any]]
    comparisons: list[dict[str, Any]]
    weights: dict[str, float]
    slices: list[Level]
    tools: list[Level]
    slice_changes: list[Change]
    tool_changes: list[Change]
    pairs: list[PairShare]
    confusion: list[dict[str, Any]]
    weighted: list[WeightedLevel]
    weighted_changes: dict[tuple[str, str], WeightedChange]
    positions: list[dict[str, Any]]
    position_shifts: list[PositionShift]
    calibration: list[Calibration]
    interactions: list[Interaction]
    failures: list[FailureLevel]
    notices: list[str] = field(default_factory=list)
    """Lines the headline must carry (e.g. provisional labels measured with --allow-provisional)."""
    arm_operations: list[dict[str, Any]] = field(default_factory=list)
    """Rows of the arm_operations view: accuracy, latency, cost, routing, judge per arm (hosted arms)."""
    judge_arguments: list[dict[str, Any]] = field(default_factory=list)
    """Rows of the judge_argument_check view: per judged arm, the judge's verdict x the argument check."""
    version_calibrations: list[VersionCalibration] = field(default_factory=list)
    """Comparisons that change only the version: each version's own requests (unpaired) and the shared ones."""
    far_from_examples: list[dict[str, Any]] = field(default_factory=list)
    """Rows of the far_from_examples view: per trained arm, the share of requests far from its examples."""
    arguments: ArgumentFigures = field(default_factory=ArgumentFigures)
    """Argument accuracy per tool, its paired changes and the hallucinated parameters' shares."""
    argument_breakdown: ArgumentBreakdown = field(default_factory=ArgumentBreakdown)
    """Argument accuracy per arm x slice, per-parameter outcomes and per-tool wrong arguments (the report's)."""

    @property
    def run_id(self) -> str:
        return self.run["run_id"]

    @property
    def arm_order(self) -> list[str]:
        return [a["arm"] for a in self.arms]

    def rung_of(self, arm: str) -> int:
        return next(a["rung"] for a in self.arms if a["arm"] == arm)

    def level(self, arm: str, slice_: str, tool: str | None = None) -> Level | None:
        pool = self.slices if tool is None else self.tools
        return next((x for x in pool if x.arm == arm and x.slice == slice_
                     and (tool is None or getattr(x, "tool", None) == tool)), None)


@dataclass(frozen=True)
class ToolLevel(Level):
    tool: str = ""


def load_figures(con: duckdb.DuckDBPyConnection, run_id: str) -> RunFigures:
    import polars as pl

    runs = records(con, "SELECT * FROM runs WHERE run_id = ?", [run_id])
    if not runs:
        raise KeyError(f"run {run_id} is not registered")
    run = runs[0]
    arms = records(con, "SELECT * FROM arms WHERE run_id = ? ORDER BY rung", [run_id])
    rung = {a["arm"]: a["rung"] for a in arms}
    comparisons = records(con, "SELECT * FROM comparisons WHERE run_id = ?", [run_id])
    comparisons.sort(key=lambda c: (rung.get(c["arm"], 0), rung.get(c["baseline"], 0)))
    weights = {}
    if run.get("weights_window"):
        weights = {r["tool"]: r["weight"] for r in records(
            con, "SELECT tool, weight FROM production_weights WHERE taskset = ? AND window_id = ?",
            [run["taskset"], run["weights_window"]])}

    aggregate = records(con, "SELECT * FROM aggregate_accuracy WHERE run_id = ? ORDER BY slice, rung", [run_id])
    slices = [_level(Level, r, seed_accuracies=list(r["seed_accuracies"] or [])) for r in aggregate]
    tools = [_level(ToolLevel, r) for r in records(
        con, "SELECT * FROM per_tool_accuracy WHERE run_id = ? ORDER BY slice, tool, rung", [run_id])]
    # expected here is the label as the version names it: arms offering a tool under other names pair on it;
    # offered is the tool as the arm offers it
    outcomes = UnitOutcomes.read(con, "SELECT arm, request_id AS unit, slice, label AS expected, correct, trials, "
                                      "failed, expected AS offered FROM request_outcomes WHERE run_id = ? "
                                      "ORDER BY arm, request_id", [run_id])
    slice_spread = {(x.arm, x.slice): x.seed_spread for x in slices}
    spelled = {(arm, label): offered  # as argument_figures.tool_spellings reads them
               for arm, label, offered in outcomes.frame.select("arm", "expected", "offered").unique().iter_rows()}
    tool_spread = {(x.arm, x.slice, x.tool): x.seed_spread for x in tools}
    slice_changes: list[Change] = []
    tool_changes: list[Change] = []
    weighted_changes: dict[tuple[str, str], WeightedChange] = {}
    for comparison in comparisons:
        base, arm = comparison["baseline"], comparison["arm"]
        common = outcomes.aligned([base, arm], extra=["expected"])
        same_label = pl.col("expected_0") == pl.col("expected_1")
        for slice_ in sorted(common["slice"].unique().to_list()):
            part = common.filter(pl.col("slice") == slice_)
            slice_changes.append(Change(base, arm, slice_, None, paired(part),
                                        slice_spread.get((base, slice_), 0.0), slice_spread.get((arm, slice_), 0.0)))
            relabelled = dict(part.filter(~same_label)["expected_0"].value_counts().iter_rows())
            stable_part = part.filter(same_label)
            for tool in sorted(stable_part["expected_0"].unique().to_list()):
                tool_changes.append(Change(base, arm, slice_, tool,
                                           paired(stable_part.filter(pl.col("expected_0") == tool)),
                                           tool_spread.get((base, slice_, spelled.get((base, tool), tool)), 0.0),
                                           tool_spread.get((arm, slice_, spelled.get((arm, tool), tool)), 0.0),
                                           relabelled.get(tool, 0)))
        stable = common.filter(same_label)
        if stable.height:
            weighted_changes[(base, arm)] = weighted_change(
                stable["expected_0"].to_list(),
                stable["correct_0"].to_list(), stable["trials_0"].to_list(),
                stable["correct_1"].to_list(), stable["trials_1"].to_list(), weights)

    present = records(con, PRESENT, [run_id])[0]
    arguments, argument_breakdown = (
        (load_argument_figures(con, run_id, spelled), load_argument_breakdown(con, run_id)) if present["scored"]
        else (ArgumentFigures(), ArgumentBreakdown(unscored_calls=present["unscored_calls"])))
    weighted: list[WeightedLevel] = []
    if weights:
        view = {r["arm"]: r for r in records(con, "SELECT * FROM weighted_accuracy WHERE run_id = ?", [run_id])}
        for a in arms:
            rows = outcomes.arm(a["arm"]).filter(pl.col("expected").is_in(list(weights)))
            if not rows.height:
                continue
            interval, covered = weighted_accuracy(rows["expected"].to_list(), rows["correct"].to_list(),
                                                  rows["trials"].to_list(), weights)
            v = view.get(a["arm"], {})
            weighted.append(WeightedLevel(a["arm"], a["rung"], interval,
                                          rows["correct"].sum() / rows["trials"].sum(),
                                          covered, v.get("seed_min"), v.get("seed_max")))

    return RunFigures(
        run=run, arms=arms, comparisons=comparisons, weights=weights, slices=slices, tools=tools,
        slice_changes=slice_changes, tool_changes=tool_changes, pairs=_pair_shares(con, run_id),
        confusion=records(con, "SELECT * FROM confusion_matrix WHERE run_id = ? ORDER BY rung, expected, answer",
                          [run_id]),
        weighted=weighted, weighted_changes=weighted_changes,
        positions=records(con, "SELECT * FROM position_band_accuracy WHERE run_id = ? ORDER BY rung, slice, "
                               "position_third", [run_id]),
        position_shifts=_position_shifts(con, run_id, rung),
        calibration=_calibration(con, run_id),
        interactions=outcomes.interactions(find_factorials(arms)),
        failures=_failures(aggregate, outcomes.clustered_rates(["arm", "slice"], "failed")),
        notices=provisional_notice(con, run_id),
        arm_operations=records(con, "SELECT * FROM arm_operations WHERE run_id = ? ORDER BY rung", [run_id])
        if present["hosted"] else [],
        judge_arguments=records(con, "SELECT * FROM judge_argument_check WHERE run_id = ?", [run_id])
        if present["judged"] else [],
        version_calibrations=version_calibrations(outcomes, arms, comparisons),
        far_from_examples=records(con, "SELECT f.* FROM far_from_examples f JOIN arms a USING (run_id, arm) "
                                       "WHERE run_id = ? ORDER BY a.rung, arm", [run_id]) if present["distances"] else [],
        arguments=arguments, argument_breakdown=argument_breakdown,
    )


def _level(cls: type[Level], row: dict[str, Any], **given: Any) -> Level:
    """A ``Level`` (or ``ToolLevel``) from a row of a view with its fields' columns; ``given`` overrides."""
    return cls(**{**{f.name: row[f.name] for f in fields(cls) if f.name in row}, **given})


def _failures(aggregate: list[dict[str, Any]], rates: dict[tuple, Interval]) -> list[FailureLevel]:
    """``aggregate``: the run's rows of the aggregate_accuracy view; the levels in (rung, slice) order."""
    out = []
    for r in sorted(aggregate, key=lambda r: (r["rung"], r["slice"])):
        rate = rates.get((r["arm"], r["slice"])) or clustered_wilson_interval([], [])
        out.append(FailureLevel(r["arm"], r["rung"], r["slice"], r["n"], r["invalid"], r["error"], r["empty"], rate,
                                r["text_calls"]))
    return out


def _pair_shares(con: duckdb.DuckDBPyConnection, run_id: str) -> list[PairShare]:
    """Every confused pair of every arm with its share of the arm's failures, clustered on requests
    (the interval from per-request sums: a request's failed rows m, and those of them with the pair k;
    ``e = k - p m`` summed in powers 2 and 4 over every failed request of the arm)."""
    pairs = records(con, "SELECT * FROM confused_pairs WHERE run_id = ? ORDER BY rung, n DESC, expected, chosen",
                    [run_id])
    sums = records(con, """
        WITH fails AS (
            SELECT arm, request_id, count(*)::DOUBLE AS m FROM selection_rows
            WHERE run_id = ? AND NOT correct GROUP BY arm, request_id),
        per_arm AS (
            SELECT arm, sum(m) AS rows_, sum(m * m) AS m2, sum(m * m * m * m) AS m4, count(*) AS n_requests
            FROM fails GROUP BY arm),
        hits AS (
            SELECT arm, request_id, pair, count(*)::DOUBLE AS k FROM selection_rows
            WHERE run_id = ? AND NOT correct AND pair IS NOT NULL GROUP BY arm, request_id, pair)
        SELECT h.arm, h.pair, sum(h.k) AS k, sum(h.k * h.k) AS kk, sum(h.k * f.m) AS km,
               sum(h.k * h.k * h.k * h.k) AS k4, sum(h.k * h.k * h.k * f.m) AS k3m,
               sum(h.k * h.k * f.m * f.m) AS k2m2, sum(h.k * f.m * f.m * f.m) AS km3,
               min(a.rows_) AS rows_, min(a.m2) AS m2, min(a.m4) AS m4, min(a.n_requests) AS n_requests
        FROM hits h JOIN fails f USING (arm, request_id) JOIN per_arm a USING (arm)
        GROUP BY h.arm, h.pair""", [run_id, run_id])
    by_pair = {(r["arm"], r["pair"]): r for r in sums}
    out = []
    for p in pairs:
        s = by_pair[(p["arm"], f"{p['expected']} -> {p['chosen']}")]
        q = s["k"] / s["rows_"]
        e2 = max(0.0, s["kk"] - 2 * q * s["km"] + q * q * s["m2"])
        e4 = max(0.0, s["k4"] - 4 * q * s["k3m"] + 6 * q * q * s["k2m2"] - 4 * q**3 * s["km3"] + q**4 * s["m4"])
        share = clustered_wilson_from_sums(s["k"], s["rows_"], e2, e4, int(s["n_requests"]))
        out.append(PairShare(arm=p["arm"], rung=p["rung"], expected=p["expected"], chosen=p["chosen"], n=p["n"],
                             n_failures=int(s["rows_"]), share=share,
                             n_offered_together=p["n_offered_together"], pair_rate=p["pair_rate"]))
    return out


def _position_shifts(con: duckdb.DuckDBPyConnection, run_id: str, rung: dict[str, int]) -> list[PositionShift]:
    import polars as pl

    shifts_per_request = frame(con, """
        SELECT arm, slice,
               arg_max(correct::INTEGER, expected_position) - arg_min(correct::INTEGER, expected_position) AS shift
        FROM selection_rows
        WHERE run_id = ? AND expected_position IS NOT NULL
        GROUP BY arm, slice, request_id
        HAVING min(expected_position) < max(expected_position)""", [run_id])
    groups = {(row["arm"], row["slice"]): row["shift"]
              for row in shifts_per_request.group_by(["arm", "slice"]).agg(pl.col("shift")).iter_rows(named=True)}
    out = []
    for (arm, slice_), shifts in sorted(groups.items(), key=lambda kv: (rung.get(kv[0][0], 0), kv[0][1])):
        interval = paired_score_interval(shifts)
        out.append(PositionShift(arm, rung.get(arm, 0), slice_, len(shifts), interval,
                                 worse=shifts.count(-1), better=shifts.count(1)))
    return out


def _calibration(con: duckdb.DuckDBPyConnection, run_id: str) -> list[Calibration]:
    summaries = records(con, "SELECT * FROM calibration_summary WHERE run_id = ? ORDER BY rung", [run_id])
    if not summaries:
        return []
    from tasks.stats.calibration import (bin_intervals, brier_interval, coverage_curve, ece_if_calibrated,
                                         find_threshold, tercile_gap, tercile_intervals)

    terciles = defaultdict(list)
    for r in records(con, "SELECT * FROM confidence_terciles WHERE run_id = ? ORDER BY rung, tercile", [run_id]):
        terciles[r["arm"]].append(r)
    bins = defaultdict(list)
    for r in records(con, "SELECT * FROM calibration_bins WHERE run_id = ? ORDER BY rung, bin", [run_id]):
        bins[r["arm"]].append(r)
    out = []
    for s in summaries:
        rows = frame(con, """SELECT confidence, correct, request_id, seed FROM selection_rows
                             WHERE run_id = ? AND arm = ? AND confidence IS NOT NULL""", [run_id, s["arm"]])
        confidence = rows["confidence"].to_numpy().astype(float)
        correct = rows["correct"].to_numpy().astype(bool)
        ids = rows["request_id"].to_list()
        seeds = rows["seed"].to_list()
        fit = find_threshold(confidence, correct, ids, ROUTER_TARGET_ACCURACY)
        gap = tercile_gap(confidence, correct, ids, seeds)
        coverage = coverage_curve(confidence, correct)
        out.append(Calibration(arm=s["arm"], rung=s["rung"], n=s["n"], accuracy=s["accuracy"],
                               mean_confidence=s["mean_confidence"], ece=s["ece"], brier=s["brier"],
                               terciles=terciles[s["arm"]], bins=bins[s["arm"]], threshold=fit, gap=gap,
                               coverage=coverage, n_requests=len(set(ids)),
                               tercile_intervals=tercile_intervals(confidence, correct, ids, seeds),
                               bin_intervals=bin_intervals(confidence, correct, ids),
                               brier_interval=brier_interval(confidence, correct, ids),
                               ece_if_calibrated=ece_if_calibrated(confidence, correct, ids)))
    return out
