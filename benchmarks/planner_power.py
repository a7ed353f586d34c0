"""Does the planner's detectable drop have the power it claims? Simulated power of the report's reading.

    python benchmarks/planner_power.py [--replicates 1000] [--seed 20261207] [--markdown]
                                       [--accuracy 0.9 0.8] [--requests 20 40 200 540] [--seeds 1 3 5]
                                       [--icc 0 0.5 1]

For each cell (accuracy, requests, seeds, icc): the drop ``tooleval plan`` prints (80% power, 5% two-sided;
``tasks/stats/change_power.py``), then ``--replicates`` data sets drawn from the project's simulation
model at exactly that drop (``benchmarks/simulations/coverage.py``: request accuracy ~ Beta(accuracy, 4); seeds copy
a shared verdict with probability sqrt(icc); icc < 1 a shift, icc 1 a deterministic router losing
requests one way), and the share of them whose paired change interval, computed live by
``tasks.stats.paired.paired_change_interval``, lies wholly below 0. The goal: 78-82% in every cell.
Prints a line a cell as it goes, then the worst cell; with ``--markdown`` the lines go to stderr and stdout
gets the table as markdown, then the worst cell.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tasks.stats.change_power import planned_drop, seed_correlation  # noqa: E402
from benchmarks.simulations.coverage import PairedScenario, paired_key  # noqa: E402
from tasks.stats.paired import paired_change_interval  # noqa: E402


def scenario(accuracy: float, requests: int, seeds: int, icc: float, drop: float) -> PairedScenario:
    """The model's data at exactly ``drop`` (no band): a shift with seeds that vary, or, at icc 1, a
    deterministic router whose right requests go wrong one way."""
    if icc >= 1.0:
        return PairedScenario("one-way", requests, drop, 1.0, seeds, accuracy, band=0.0)
    return PairedScenario("shift", requests, drop, seed_correlation(icc), seeds, accuracy, band=0.0)


def simulated_power(s: PairedScenario, replicates: int, seed: int) -> float:
    """Share of ``replicates`` data sets whose live paired change interval lies below 0."""
    rng = np.random.default_rng(seed)
    cache: dict[bytes, bool] = {}
    detected = 0
    for _ in range(replicates):
        before, after, _truth = s.draw(rng)
        key = paired_key(before, after)
        if key not in cache:
            interval = paired_change_interval(before[0], before[1], after[0], after[1])
            cache[key] = interval.high < 0
        detected += cache[key]
    return detected / replicates


def cell_seed(seed: int, accuracy: float, requests: int, seeds: int, icc: float) -> int:
    return seed + int(1000 * accuracy) * 1_000_003 + requests * 1009 + seeds * 101 + int(100 * icc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261207)
    parser.add_argument("--accuracy", type=float, nargs="+", default=[0.9, 0.8])
    parser.add_argument("--requests", type=int, nargs="+", default=[20, 40, 200, 540])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 3, 5])
    parser.add_argument("--icc", type=float, nargs="+", default=[0.0, 0.5, 1.0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    rows = []
    for accuracy in args.accuracy:
        for requests in args.requests:
            for seeds in args.seeds:
                for icc in args.icc:
                    planned = planned_drop(accuracy, requests, seeds, icc)
                    kind = "one-way" if icc >= 1.0 else "shift"  # the change the model assumes
                    if planned.drop is None:
                        rows.append((accuracy, requests, seeds, icc, None, float("nan"), kind))
                        continue
                    s = scenario(accuracy, requests, seeds, icc, planned.drop)
                    power = simulated_power(s, args.replicates, cell_seed(args.seed, accuracy, requests, seeds, icc))
                    rows.append((accuracy, requests, seeds, icc, planned.drop, power, kind))
                    print(f"accuracy {accuracy:g}  requests {requests:4d}  seeds {seeds}  icc {icc:g}  "
                          f"({kind}): drop {100 * planned.drop:5.1f} pts  power {100 * power:5.1f}%",
                          file=sys.stderr if args.markdown else sys.stdout, flush=True)
    elapsed = time.perf_counter() - started
    measured = [r for r in rows if r[4] is not None]
    worst = max(measured, key=lambda r: abs(r[5] - 0.8))
    sd = math.sqrt(0.8 * 0.2 / args.replicates)
    if args.markdown:
        print("| accuracy | requests | seeds | icc | change | planned drop (pts) | simulated power |")
        print("|---:|---:|---:|---:|---|---:|---:|")
        for accuracy, requests, seeds, icc, drop, power, kind in rows:
            drop_text = "none detectable" if drop is None else f"{100 * drop:.1f}"
            power_text = "" if drop is None else f"{100 * power:.1f}%"
            print(f"| {100 * accuracy:g}% | {requests} | {seeds} | {icc:g} | {kind} | {drop_text} | {power_text} |")
        print()
    print(f"worst cell: accuracy {worst[0]:g}, {worst[1]} requests x {worst[2]} seeds, icc {worst[3]:g}: "
          f"{100 * worst[5]:.1f}% at a planned drop of {100 * worst[4]:.1f} points "
          f"({len(measured)} cells within {100 * max(abs(r[5] - 0.8) for r in measured):.1f} points of 80%; "
          f"{args.replicates} replicates a cell, sampling sd {100 * sd:.1f} points; {elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
