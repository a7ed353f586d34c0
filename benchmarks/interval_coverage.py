"""Coverage of the report's 95% intervals by simulation: how often each holds the true figure.

    python benchmarks/interval_coverage.py [--replicates 2000] [--seed 20261201] [--markdown]
                                           [--only paired weighted interaction proportion]

Scenarios and the data-generating model are in ``benchmarks/simulations/coverage.py`` (request accuracy ~ Beta,
3 seeds whose verdicts correlate by 0 / 0.5 / 1, changes in one direction, churn, shifts, a 2x2; each
data set's true figure drawn within +-20% of the scenario's; seeds that disagree, with the two arms' seeds
paired as a position-sensitive model's are, or not). Every interval is computed by the project's own
functions, exactly as the report computes it; for a paired change the report's own reading and p-value are
checked against the interval on every data set (``disagreed``: how often they said otherwise; must be 0).
For reference, the uncorrected Kish-Wilson interval the report printed earlier is re-run on the same
data for a proportion.

Prints one row per (method, requests, scenario): coverage in percent, the earlier method's coverage
where run, the mean width in points and the disagreements; ``--markdown`` prints the same as a markdown
table.

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

from benchmarks.simulations.coverage import (  # noqa: E402
    Coverage,
    InteractionScenario,
    PairedScenario,
    ProportionScenario,
    WeightedScenario,
    paired_key,
    proportion_key,
    run_interaction,
    run_proportion,
    run_weighted,
    simulate,
    three_tools,
    weighted_accuracy_interval,
)
from tasks.selection.figures import Change  # noqa: E402
from tasks.selection.tables import reading  # noqa: E402
from tasks.stats.estimate import Interval  # noqa: E402
from tasks.stats.paired import paired_comparison  # noqa: E402
from tasks.stats.wilson import wilson_bounds  # noqa: E402

TASKSET = ROOT / "tasksets" / "support"
PARTS = ["paired", "weighted", "interaction", "proportion"]
DEMO_DROPS = {"refund_order": 0.10, "track_shipment": 0.05, "cancel_order": 0.20, "open_dispute": 0.15}
"""The demo-set scenario: these tools drop (points as fractions), the other 29 hold."""


# the interval printed earlier, kept here only as a reference -----------------------------------


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
    """Every seed correlation (0, 0.5: seeds disagree, with the arms' seeds paired as a position-sensitive
    model's are or not; 1: a deterministic router) at 10 to 540 requests, small and large changes."""
    grid = []
    for n in (10, 20, 40, 200, 540):
        drops = (0.1, 0.2) if n <= 40 else (0.01, 0.02, 0.05, 0.1)
        for correlation in (0.0, 0.5):
            for paired_seeds in (False, True):
                for kind in ("shift", "one-way"):
                    grid += [PairedScenario(kind, n, drop, correlation, paired_seeds=paired_seeds) for drop in drops]
            grid.append(PairedScenario("none", n, 0.0, seed_correlation=correlation))
        grid += [PairedScenario("one-way", n, drop) for drop in drops]
        grid.append(PairedScenario("two-way", n, 0.05))
    return grid


def reported_reading(before, after) -> tuple[Interval, bool]:
    """The report's paired change, and whether its printed reading or p-value disagrees with its interval."""
    paired = paired_comparison(before[0], before[1], after[0], after[1])
    change = Change("from", "to", "slice", None, paired, 0.0, 0.0)
    shown = reading(change) in ("▼ drop", "▲ gain")
    excludes = not paired.change.contains(0.0)
    return paired.change, shown != excludes or (paired.p_value < 0.05) != excludes


def weighted_grid() -> list[WeightedScenario]:
    grid = []
    for n in (10, 20, 40, 200, 540):
        for correlation in (1.0, 0.5, 0.0):
            for weighted in (True, False):
                grid.append(WeightedScenario(three_tools(n), "one-way", correlation, weighted, name="3 tools"))
    demo = demo_tools()
    for correlation in (1.0, 0.5, 0.0):
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
            if len(parts) != 7 or not parts[1].isdigit():
                continue
            method, n, scenario, cover, before = parts[0], int(parts[1]), parts[2], float(parts[3]), parts[4]
            group = ("no change" if scenario.startswith("none")
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
              f"{current.mean_width_points:5.1f}  {current.disagreed:8d}", flush=True)

    print(f"{'method':18s} {'n':>4s}  {'scenario':58s} {'cover':>5s}  {'before':>5s}  width  disagreed")
    parts = set(args.only)
    for scenario in paired_grid() if "paired" in parts else []:
        report(simulate(scenario.draw, reported_reading, reps, seed, scenario.label(), "paired change", scenario.n,
                        key=paired_key))
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
        print("\n| method | requests | scenario | coverage % | before % | mean width, pts | disagreed |")
        print("|---|---:|---|---:|---:|---:|---:|")
        for current, before in rows:
            earlier = f"{100 * before.rate:.1f}" if before else "—"
            print(f"| {current.method} | {current.n} | {current.label} | {100 * current.rate:.1f} | {earlier} | "
                  f"{current.mean_width_points:.1f} | {current.disagreed} |")


if __name__ == "__main__":
    main()
