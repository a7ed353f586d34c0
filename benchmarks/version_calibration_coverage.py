"""Coverage of the version-calibration interval by simulation: how often it holds the true difference between
two task-set versions' expected success (one arm on both, each version over its own tasks).

    python benchmarks/version_calibration_coverage.py [--replicates 2000] [--seed 20261201] [--markdown]

Scenarios and the model are in ``benchmarks/simulations/coverage_versions.py``: disjoint versions (e.g. 61% ->
79%), a new version that keeps every old task and adds a few harder ones (v1 plus 5 harder
tasks), and one that keeps half; 3 seeds correlated by 0.5, or a deterministic agent. Each cell also runs
the same two intervals combined as if the versions shared nothing (plain MOVER), to show what the
correlation through the shared tasks buys. Prints coverage in percent and the mean width in points.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.simulations.coverage_versions import VersionScenario, run_version  # noqa: E402


def grid() -> list[VersionScenario]:
    cells = []
    for corr in (0.0, 0.5, 1.0):
        cells += [VersionScenario("disjoint", 20, 12, 0.61, 0.79, corr),
                  VersionScenario("disjoint", 50, 50, 0.61, 0.79, corr),
                  VersionScenario("disjoint", 200, 200, 0.8, 0.8, corr),
                  VersionScenario("nested", 20, 5, 0.83, 0.3, corr),
                  VersionScenario("nested", 50, 10, 0.83, 0.3, corr),
                  VersionScenario("nested", 200, 50, 0.8, 0.5, corr),
                  VersionScenario("overlap", 50, 25, 0.8, 0.6, corr),
                  VersionScenario("overlap", 200, 100, 0.8, 0.8, corr)]
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    args = parser.parse_args()
    started = time.perf_counter()
    rows = []
    print(f"{'scenario':74s} {'cover':>5s} {'width':>5s}  {'as if disjoint':>14s} {'width':>5s}")
    for scenario in grid():
        shown = run_version(scenario, args.replicates, args.seed)
        plain = run_version(scenario, args.replicates, args.seed, independent=True)
        rows.append((scenario, shown, plain))
        print(f"{scenario.label():74s} {100 * shown.rate:5.1f} {shown.mean_width_points:5.1f}  "
              f"{100 * plain.rate:14.1f} {plain.mean_width_points:5.1f}", flush=True)
    print(f"\n{len(rows)} cells, {args.replicates} replicates each, seed {args.seed}: "
          f"{time.perf_counter() - started:.0f} s")
    if args.markdown:
        print("\n| scenario | coverage % | mean width, pts | as if disjoint: coverage % | width, pts |")
        print("|---|---:|---:|---:|---:|")
        for scenario, shown, plain in rows:
            print(f"| {scenario.label()} | {100 * shown.rate:.1f} | {shown.mean_width_points:.1f} | "
                  f"{100 * plain.rate:.1f} | {plain.mean_width_points:.1f} |")


if __name__ == "__main__":
    main()
