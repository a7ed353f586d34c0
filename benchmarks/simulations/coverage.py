"""Coverage of the report's 95% intervals, by simulation: how often each interval holds the true figure.

Requests are drawn from a population (request accuracy ~ Beta with mean ``accuracy``, concentration
``KAPPA``); each request is answered under ``seeds`` seeds whose verdicts are correlated by
``seed_correlation`` (a seed copies one shared verdict with that probability, else draws its own:
0 = independent seeds, 1 = a deterministic router). The true figure is the population's, so an interval
must carry both the choice of requests and the seeds' noise. Scenarios:

- ``one-way``: a share of the requests that were right go wrong, none goes the other way (every
  discordant request moves the same way; with a deterministic router the classic small-set trap);
- ``two-way``: as one-way plus churn, requests going wrong -> right and more right -> wrong
  (deterministic router);
- ``shift``: every request loses the same fraction of its accuracy (seeds vary, so changes go both ways);
- ``none``: nothing changes (seeds vary).

With ``paired_seeds`` the two arms' seeds are paired the way a position-sensitive model's are: seed s offers
the tools in the same recorded order in both arms, so its luck (one uniform draw per request and seed, shared
with the request's other seeds with probability ``seed_correlation``) is the same in both arms, and a seed
that was right before stays right unless the change takes it. Without it the arms' seeds are independent.

Used by ``tests/stats/test_stats_coverage.py`` (a small grid, fixed seed) and
``benchmarks/interval_coverage.py`` (the full grid, the table in docs/numbers-coverage.md). numpy only; nothing here
runs in the report (whose statistics, in tasks/stats, it reads).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from tasks.stats.estimate import Interval
from tasks.stats.interaction import interaction_table
from tasks.stats.paired import paired_comparison
from tasks.stats.weighted import weighted_accuracy, weighted_change
from tasks.stats.wilson import clustered_wilson_interval

KAPPA = 4.0
"""Concentration of the Beta the request accuracies are drawn from (smaller = requests differ more)."""

BAND = 0.2
"""The true figure of each simulated data set is drawn within +-20% of the scenario's (a change; a
failure rate; a 2x2's two changes): coverage is then an average over a small range, not read at one
lucky or unlucky point of the binomial lattice (at a fixed figure the coverage of any interval for counts
swings by a point or two between neighbours, e.g. Wilson's between 93% and 97% at 40 requests)."""

Arms = tuple[np.ndarray, np.ndarray]
"""(correct per request, seeds per request) of one arm."""


def _verdicts(rng: np.random.Generator, p: np.ndarray, seeds: int, correlation: float) -> np.ndarray:
    """Correct seeds per request: each seed copies a shared verdict with probability ``correlation``."""
    shared = rng.random(p.shape) < p
    own = rng.random(p.shape + (seeds,)) < p[..., None]
    copy = rng.random(p.shape + (seeds,)) < correlation
    return np.where(copy, shared[..., None], own).sum(axis=-1).astype(float)


def _paired_verdicts(rng: np.random.Generator, before: np.ndarray, after: np.ndarray, seeds: int,
                     correlation: float) -> tuple[np.ndarray, np.ndarray]:
    """Correct seeds per request in two arms whose seeds share their luck (see ``paired_seeds``)."""
    shared = rng.random(before.shape)[..., None]
    own = rng.random(before.shape + (seeds,))
    luck = np.where(rng.random(before.shape + (seeds,)) < correlation, shared, own)
    return ((luck < before[..., None]).sum(axis=-1).astype(float),
            (luck < after[..., None]).sum(axis=-1).astype(float))


def _accuracies(rng: np.random.Generator, n: int, accuracy: float, deterministic: bool) -> np.ndarray:
    if deterministic:
        return (rng.random(n) < accuracy).astype(float)
    return rng.beta(accuracy * KAPPA, (1 - accuracy) * KAPPA, n)


@dataclass(frozen=True)
class PairedScenario:
    """Two arms on the same ``n`` requests; the true change is ``-drop`` (points as a fraction)."""

    kind: str
    """'one-way', 'two-way', 'shift' or 'none' (see the module notes)."""
    n: int
    drop: float
    seed_correlation: float = 1.0
    seeds: int = 3
    accuracy: float = 0.9
    churn: float = 0.05
    """two-way: share of requests going wrong -> right (as many more go right -> wrong)."""
    band: float = BAND
    """Each data set's true drop is drawn uniformly within +-band x drop (see BAND)."""
    paired_seeds: bool = False
    """The arms' seeds share their luck, as a position-sensitive model's do (see the module notes)."""

    @property
    def deterministic(self) -> bool:
        return self.seed_correlation >= 1.0

    def label(self) -> str:
        seeds = "deterministic" if self.deterministic else f"seeds vary (corr {self.seed_correlation:g})"
        if self.paired_seeds and not self.deterministic:
            seeds += ", seeds paired"
        return f"{self.kind}, {seeds}, change {-100 * self.drop:+g} pts"

    def draw_probabilities(self, rng: np.random.Generator, drop: float) -> tuple[np.ndarray, np.ndarray]:
        """Request accuracies before and after, for a true change of -drop."""
        before = _accuracies(rng, self.n, self.accuracy, self.deterministic)
        if self.kind == "none":
            return before, before
        if self.kind == "shift":
            return before, before * (1 - drop / self.accuracy)
        if self.kind == "two-way" and not self.deterministic:
            raise ValueError("two-way churn is a scenario for a deterministic router (seeds vary: use 'shift')")
        churn = self.churn if self.kind == "two-way" else 0.0
        # right -> wrong with probability (drop + churn) / accuracy; wrong -> right with churn / (1 - accuracy)
        lose = rng.random(self.n) < (drop + churn) / self.accuracy
        if self.deterministic:
            gain = rng.random(self.n) < churn / (1 - self.accuracy)
            return before, np.where(before == 1, (~lose).astype(float), gain.astype(float))
        return before, np.where(lose, 0.0, before)

    def draw(self, rng: np.random.Generator) -> tuple[Arms, Arms, float]:
        """Both arms' per-request counts and this population's true change."""
        drop = 0.0 if self.kind == "none" else self.drop * rng.uniform(1 - self.band, 1 + self.band)
        before, after = self.draw_probabilities(rng, drop)
        m = np.full(self.n, float(self.seeds))
        correlation = 1.0 if self.deterministic else self.seed_correlation
        if self.paired_seeds and not self.deterministic:
            ka, kb = _paired_verdicts(rng, before, after, self.seeds, correlation)
            return (ka, m), (kb, m), -drop
        return ((_verdicts(rng, before, self.seeds, correlation), m),
                (_verdicts(rng, after, self.seeds, correlation), m), -drop)


@dataclass(frozen=True)
class ProportionScenario:
    """One arm's accuracy on ``n`` requests x ``seeds``; each data set's true accuracy is drawn with its
    failure rate within +-band of the scenario's (see BAND)."""

    n: int
    accuracy: float
    seed_correlation: float
    seeds: int = 3
    band: float = BAND

    def label(self) -> str:
        return f"accuracy {100 * self.accuracy:g}%, seed corr {self.seed_correlation:g}"

    def draw(self, rng: np.random.Generator) -> tuple[Arms, float]:
        accuracy = 1 - (1 - self.accuracy) * rng.uniform(1 - self.band, 1 + self.band)
        p = _accuracies(rng, self.n, accuracy, False)
        return (_verdicts(rng, p, self.seeds, self.seed_correlation), np.full(self.n, float(self.seeds))), accuracy


@dataclass(frozen=True)
class WeightedScenario:
    """Tools (requests, traffic weight, drop) compared on the same requests; truth = the weighted (or,
    with ``weighted=False``, the set-share) mean of the tools' changes."""

    tools: tuple[tuple[int, float, float], ...]
    kind: str = "one-way"
    seed_correlation: float = 1.0
    weighted: bool = True
    seeds: int = 3
    accuracy: float = 0.9
    name: str = ""

    @property
    def n(self) -> int:
        return sum(t[0] for t in self.tools)

    def label(self) -> str:
        seeds = "deterministic" if self.seed_correlation >= 1 else f"seeds vary (corr {self.seed_correlation:g})"
        what = "weighted" if self.weighted else "unweighted"
        return f"{what}, {self.name or f'{len(self.tools)} tools'}, {self.kind}, {seeds}"

    def draw(self, rng: np.random.Generator) -> tuple[list[str], Arms, Arms, dict[str, float], float]:
        names, ka, kb, m = [], [], [], []
        weights, truth, total = {}, 0.0, 0.0
        for i, (n, weight, drop) in enumerate(self.tools):
            scenario = PairedScenario(self.kind, n, drop, self.seed_correlation, self.seeds, self.accuracy)
            (a, ma), (b, _), true_change = scenario.draw(rng)
            name = f"tool{i:02d}"
            names += [name] * n
            ka.append(a)
            kb.append(b)
            m.append(ma)
            weights[name] = weight
            share = weight if self.weighted else n
            truth += share * true_change
            total += share
        mm = np.concatenate(m)
        return names, (np.concatenate(ka), mm), (np.concatenate(kb), mm), weights, truth / total


@dataclass(frozen=True)
class InteractionScenario:
    """A 2x2 on the same requests: baseline, first change, second change, both. Each change makes a
    request always wrong with probability ``first`` / ``second``; both together lose the union, so the
    measured arm is better than the additive prediction by accuracy x first x second (the true gap).
    Each data set draws ``first`` and ``second`` within +-band of the scenario's (see BAND)."""

    n: int
    first: float = 0.3
    second: float = 0.3
    seed_correlation: float = 1.0
    seeds: int = 3
    accuracy: float = 0.9
    band: float = BAND

    def label(self) -> str:
        seeds = "deterministic" if self.seed_correlation >= 1 else f"seeds vary (corr {self.seed_correlation:g})"
        return f"2x2 gap, {seeds}, gap +{100 * self.accuracy * self.first * self.second:.1f} pts"

    def draw(self, rng: np.random.Generator) -> tuple[list[Arms], float]:
        deterministic = self.seed_correlation >= 1
        first = self.first * rng.uniform(1 - self.band, 1 + self.band)
        second = self.second * rng.uniform(1 - self.band, 1 + self.band)
        base = _accuracies(rng, self.n, self.accuracy, deterministic)
        u1 = rng.random(self.n) < first
        u2 = rng.random(self.n) < second
        arms = [base, base * ~u1, base * ~u2, base * ~u1 * ~u2]
        m = np.full(self.n, float(self.seeds))
        return ([(_verdicts(rng, p, self.seeds, min(1.0, self.seed_correlation)), m) for p in arms],
                self.accuracy * first * second)


@dataclass
class Coverage:
    """How often the intervals held the truth, with the mean width (points)."""

    label: str
    method: str
    n: int
    replicates: int
    covered: int
    widths: list[float] = field(default_factory=list)
    disagreed: int = 0
    """Data sets whose reading (or p-value) said otherwise than their interval (must be 0)."""

    @property
    def rate(self) -> float:
        return self.covered / self.replicates

    @property
    def mean_width_points(self) -> float:
        return 100 * float(np.mean(self.widths)) if self.widths else float("nan")


def simulate(draw: Callable[[np.random.Generator], tuple], interval: Callable[..., Interval], replicates: int,
             seed: int, label: str, method: str, n: int, key: Callable[..., object] | None = None) -> Coverage:
    """Draw ``replicates`` data sets; ``interval(*data)`` gives an Interval, ``data[-1]`` is the truth.

    ``key(*data)`` (optional) names a data set's sufficient statistics, so equal data sets are computed
    once (small deterministic sets repeat a lot)."""
    rng = np.random.default_rng(seed)
    result = Coverage(label, method, n, replicates, 0)
    cache: dict[object, Interval] = {}
    for _ in range(replicates):
        *data, truth = draw(rng)
        k = key(*data) if key is not None else None
        if k is not None and k in cache:
            value = cache[k]
        else:
            value = interval(*data)
            if k is not None:
                cache[k] = value
        if isinstance(value, tuple):  # (interval, whether its reading disagreed with it)
            value, disagreed = value
            result.disagreed += bool(disagreed)
        result.covered += bool(value.low - 1e-12 <= truth <= value.high + 1e-12)
        result.widths.append(value.high - value.low)
    return result


def paired_key(before: Arms, after: Arms) -> bytes:
    """Counts of each (correct before, correct after, seeds) pattern: all a paired interval depends on."""
    (ka, ma), (kb, mb) = before, after
    patterns = np.stack([ka, kb, ma, mb], axis=1)
    unique, counts = np.unique(patterns, axis=0, return_counts=True)
    return unique.tobytes() + counts.tobytes()


def cells(values: Sequence[Coverage]) -> list[tuple[str, str, int, float, float]]:
    """(method, scenario, n, coverage %, mean width in points) rows for a table."""
    return [(c.method, c.label, c.n, 100 * c.rate, c.mean_width_points) for c in values]


# The report's intervals, as the simulation calls them ------------------------------------------------


def reported_change(before: Arms, after: Arms) -> tuple[Interval, bool]:
    """The paired change interval the report prints, and whether the p-value printed beside it disagrees
    with it (p < 0.05 while the interval holds 0, or the reverse)."""
    paired = paired_comparison(before[0], before[1], after[0], after[1])
    return paired.change, (paired.p_value < 0.05) == paired.change.contains(0.0)


def weighted_change_interval(weighted: bool) -> Callable[..., Interval]:
    def interval(names: list[str], before: Arms, after: Arms, weights: dict[str, float]) -> Interval:
        change = weighted_change(names, before[0], before[1], after[0], after[1], weights)
        return change.weighted if weighted else change.unweighted
    return interval


def weighted_accuracy_interval(names: list[str], before: Arms, after: Arms, weights: dict[str, float]) -> Interval:
    interval, _ = weighted_accuracy(names, before[0], before[1], weights)
    return interval


def interaction_gap(arms: list[Arms]) -> Interval:
    return interaction_table([a[0] for a in arms], [a[1] for a in arms]).gap


def clustered_interval(arm: Arms) -> Interval:
    return clustered_wilson_interval(arm[0], arm[1])


def proportion_key(arm: Arms) -> bytes:
    unique, counts = np.unique(np.stack(arm, axis=1), axis=0, return_counts=True)
    return unique.tobytes() + counts.tobytes()


def run_paired(scenario: PairedScenario, replicates: int, seed: int) -> Coverage:
    return simulate(scenario.draw, reported_change, replicates, seed, scenario.label(), "paired change",
                    scenario.n, key=paired_key)


def run_weighted(scenario: WeightedScenario, replicates: int, seed: int) -> Coverage:
    method = "weighted change" if scenario.weighted else "unweighted change"
    return simulate(scenario.draw, weighted_change_interval(scenario.weighted), replicates, seed,
                    scenario.label(), method, scenario.n)


def run_interaction(scenario: InteractionScenario, replicates: int, seed: int) -> Coverage:
    return simulate(scenario.draw, interaction_gap, replicates, seed, scenario.label(), "2x2 gap", scenario.n)


def run_proportion(scenario: ProportionScenario, replicates: int, seed: int) -> Coverage:
    return simulate(scenario.draw, clustered_interval, replicates, seed, scenario.label(), "clustered Wilson",
                    scenario.n, key=proportion_key)


def three_tools(n: int) -> tuple[tuple[int, float, float], ...]:
    """n requests over three tools (50/30/20% of the set; 20/50/30% of traffic); the two larger ones drop
    10 and 20 points, the third holds."""
    first, second = round(n * 0.5), round(n * 0.3)
    return ((first, 0.2, 0.1), (second, 0.5, 0.2), (n - first - second, 0.3, 0.0))
