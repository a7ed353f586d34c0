"""Coverage of the report's 95% intervals by simulation: how often each holds the true figure.

    python benchmarks/interval_coverage.py [--replicates 2000] [--seed 20261201] [--markdown]
                                           [--only paired weighted interaction proportion]

Scenarios and the data-generating model are in ``tasks/stats/coverage.py`` (request accuracy ~ Beta,
3 seeds whose verdicts correlate by 0 / 0.5 / 1, changes in one direction, churn, shifts, a 2x2; each
data set's true figure drawn within +-20% of the scenario's). Every interval is computed by the
project's own functions, exactly as the report computes it. For reference, the intervals the report
printed before issue 11 are re-run on the same data where they were simple to keep here: the request
bootstrap of a paired change (percentile, 1,000 resamples) and the uncorrected Kish-Wilson interval.

Prints one row per (method, requests, scenario): coverage in percent, the earlier method's coverage
where run, and the mean width in points; ``--markdown`` prints the same as a markdown table.

    python benchmarks/interval_coverage.py --summarize OUT.txt [OUT2.txt ...]

reads the markdown tables of saved runs and prints the condensed table in docs/numbers-coverage.md (per method and
number of requests: the lowest and highest coverage over the scenarios with a change, the earlier
method's lowest, the no-change scenario apart, identical seeds apart for the clustered interval).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tasks.stats.coverage import (  # noqa: E402
    Coverage,
    InteractionScenario,
    PairedScenario,
    ProportionScenario,
    WeightedScenario,
    paired_key,
    proportion_key,
    run_interaction,
    run_paired,
    run_proportion,
    run_weighted,
    simulate,
    three_tools,
    weighted_accuracy_interval,
)
from tasks.stats.estimate import Interval  # noqa: E402
from tasks.stats.wilson import wilson_bounds  # noqa: E402

TASKSET = ROOT / "tasksets" / "support"
PARTS = ["paired", "weighted", "interaction", "proportion"]
DEMO_DROPS = {"refund_order": 0.10, "track_shipment": 0.05, "cancel_order": 0.20, "open_dispute": 0.15}
"""The demo-set scenario: these tools drop (points as fractions), the other 29 hold."""


# the intervals printed before issue 11, kept here only as a reference -----------------------------------


def bootstrap_change(before, after, resamples: int = 1000, seed: int = 20261130) -> Interval:
    """The earlier paired change interval: percentile bootstrap over whole requests (patterns pooled)."""
    (ka, ma), (kb, mb) = before, after
    patterns, counts = np.unique(np.stack([ka, ma, kb, mb], axis=1), axis=0, return_counts=True)
    rng = np.random.default_rng(seed)
    w = rng.multinomial(int(counts.sum()), counts / counts.sum(), size=resamples).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = (w @ patterns[:, 2]) / (w @ patterns[:, 3]) - (w @ patterns[:, 0]) / (w @ patterns[:, 1])
    estimate = float(kb.sum() / mb.sum() - ka.sum() / ma.sum())
    low, high = np.quantile(replicates, [0.025, 0.975])
    return Interval(estimate, min(low, estimate), max(high, estimate), "request bootstrap")


def kish_wilson(arm) -> Interval:
    """The earlier clustered interval: Wilson with z on Kish's effective n, no small-sample correction."""
    k, m = arm
    rows = float(m.sum())
    p = float(k.sum()) / rows
    variance = float(((k - p * m) ** 2).sum()) / rows**2
    if p in (0.0, 1.0):
        n_eff = float(len(k))
    else:
        n_eff = rows if variance <= 0 else min(rows, p * (1 - p) / variance)
    low, high = wilson_bounds(p, n_eff, 1.959963984540054)
    return Interval(p, low, high, "kish wilson", n_eff)


# the grid -----------------------------------------------------------------------------------------------


def demo_tools() -> tuple[tuple[int, float, float], ...]:
    weights = json.loads(next((TASKSET / "weights").glob("*.json")).read_text())["weights"]
    counts = Counter(json.loads(line)["expected"] for line in (TASKSET / "v1.jsonl").read_text().splitlines()
                     if line.strip())
    return tuple((n, weights.get(tool, 0.0), DEMO_DROPS.get(tool, 0.0)) for tool, n in sorted(counts.items()))


def paired_grid() -> list[PairedScenario]:
    grid = []
    for n in (10, 20, 40, 200, 540):
        drops = (0.1, 0.2) if n <= 40 else (0.05, 0.1)
        for drop in drops:
            grid.append(PairedScenario("one-way", n, drop))
            grid.append(PairedScenario("one-way", n, drop, seed_correlation=0.5))
            grid.append(PairedScenario("shift", n, drop, seed_correlation=0.5))
        grid.append(PairedScenario("shift", n, drops[0], seed_correlation=0.0))
        grid.append(PairedScenario("two-way", n, 0.05))
        grid.append(PairedScenario("none", n, 0.0, seed_correlation=0.5))
    return grid


def weighted_grid() -> list[WeightedScenario]:
    grid = []
    for n in (10, 20, 40):
        for correlation in (1.0, 0.5):
            for weighted in (True, False):
                grid.append(WeightedScenario(three_tools(n), "one-way", correlation, weighted, name="3 tools"))
    demo = demo_tools()
    for correlation in (1.0, 0.5):
        for weighted in (True, False):
            grid.append(WeightedScenario(demo, "one-way", correlation, weighted, name="demo set, 33 tools"))
    return grid


def interaction_grid() -> list[InteractionScenario]:
    return [InteractionScenario(n, seed_correlation=c) for n in (20, 40, 200) for c in (1.0, 0.5)]


def proportion_grid() -> list[ProportionScenario]:
    return [ProportionScenario(n, p, c) for n in (20, 24, 40, 200) for p in (0.8, 0.9, 0.97) for c in (0.0, 0.5, 1.0)]


def summarize(paths: list[str]) -> None:
    """The condensed table of docs/numbers-coverage.md from saved ``--markdown`` outputs (a method in a later file replaces
    that method's rows from earlier ones: a part re-run with ``--only``)."""
    cells: dict[tuple[str, int, str], list[tuple[float, float | None]]] = {}
    order: list[tuple[str, int, str]] = []
    for path in paths:
        lines = Path(path).read_text().splitlines()
        methods = {line.strip().strip("|").split("|")[0].strip() for line in lines if line.startswith("| ")}
        for key in [k for k in order if k[0] in methods]:
            order.remove(key)
            del cells[key]
        for line in lines:
            parts = [p.strip() for p in line.strip().strip("|").split("|")]
            if len(parts) != 6 or not parts[1].isdigit():
                continue
            method, n, scenario, cover, before = parts[0], int(parts[1]), parts[2], float(parts[3]), parts[4]
            group = ("no change (reaches 0 whenever exact McNemar cannot reject)" if scenario.startswith("none")
                     else "identical seeds (= Wilson on the requests)" if scenario.endswith("seed corr 1")
                     else "seeds vary" if method == "clustered Wilson"
                     else "one arm, seeds vary" if method == "weighted accuracy" else "changes")
            key = (method, n, group)
            if key not in cells:
                cells[key] = []
                order.append(key)
            cells[key].append((cover, None if before == "—" else float(before)))
    print("| interval | requests | scenarios | coverage % (lowest–highest) | before, lowest % |")
    print("|---|---:|---|---:|---:|")
    for key in order:
        values = cells[key]
        low, high = min(v for v, _ in values), max(v for v, _ in values)
        befores = [b for _, b in values if b is not None]
        earlier = f"{min(befores):.1f}" if befores else "—"
        span = f"{low:.1f}" if len(values) == 1 else f"{low:.1f}–{high:.1f}"
        print(f"| {key[0]} | {key[1]} | {key[2]} ({len(values)}) | {span} | {earlier} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    parser.add_argument("--only", nargs="+", choices=PARTS, default=PARTS, help="run only these parts of the grid")
    parser.add_argument("--summarize", nargs="+", metavar="OUT", help="condense saved --markdown outputs")
    args = parser.parse_args()
    if args.summarize:
        summarize(args.summarize)
        return
    reps, seed = args.replicates, args.seed
    rows: list[tuple[Coverage, Coverage | None]] = []
    started = time.perf_counter()

    def report(current: Coverage, before: Coverage | None = None) -> None:
        rows.append((current, before))
        earlier = f"{100 * before.rate:5.1f}" if before else "    —"
        print(f"{current.method:18s} {current.n:4d}  {current.label:58s} {100 * current.rate:5.1f}  {earlier}  "
              f"{current.mean_width_points:5.1f}", flush=True)

    print(f"{'method':18s} {'n':>4s}  {'scenario':58s} {'cover':>5s}  {'before':>5s}  width")
    parts = set(args.only)
    for scenario in paired_grid() if "paired" in parts else []:
        before = simulate(scenario.draw, bootstrap_change, reps, seed, scenario.label(), "request bootstrap",
                          scenario.n, key=paired_key)
        report(run_paired(scenario, reps, seed), before)
    for scenario in weighted_grid() if "weighted" in parts else []:
        report(run_weighted(scenario, reps if scenario.n <= 40 else max(500, reps // 2), seed))
    for scenario in weighted_grid() if "weighted" in parts else []:
        if scenario.weighted and scenario.seed_correlation == 0.5:
            def draw_before(rng, scenario=scenario):  # truth: every tool's population accuracy
                names, before, after, weights, _ = scenario.draw(rng)
                return names, before, after, weights, scenario.accuracy

            report(simulate(draw_before, weighted_accuracy_interval, max(500, reps // 2), seed,
                            f"weighted accuracy, {scenario.name}, before arm",
                            "weighted accuracy", scenario.n))
    for scenario in interaction_grid() if "interaction" in parts else []:
        report(run_interaction(scenario, reps, seed))
    for scenario in proportion_grid() if "proportion" in parts else []:
        before = simulate(scenario.draw, kish_wilson, reps, seed, scenario.label(), "kish wilson", scenario.n,
                          key=proportion_key)
        report(run_proportion(scenario, reps, seed), before)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan
    print(f"\n{len(rows)} cells, {reps} replicates each (weighted demo-set cells {max(500, reps // 2)}), seed {seed}: "
          f"{time.perf_counter() - started:.0f} s, load {load:.1f}")
    if args.markdown:
        print("\n| method | requests | scenario | coverage % | before % | mean width, pts |")
        print("|---|---:|---|---:|---:|---:|")
        for current, before in rows:
            earlier = f"{100 * before.rate:.1f}" if before else "—"
            print(f"| {current.method} | {current.n} | {current.label} | {100 * current.rate:.1f} | {earlier} | "
                  f"{current.mean_width_points:.1f} |")


if __name__ == "__main__":
    main()
