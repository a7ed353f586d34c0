"""How a perfectly calibrated router's fitted threshold is read (the point reading and the interval's), by simulation.

    python benchmarks/threshold_confirmation.py [--replicates 1000] [--seed 20261201] [--requests 200]

Model in ``benchmarks/simulations/threshold.py``: confidences ~ Beta(6, 1.5), each request right with
exactly its confidence, the threshold fitted on the fit half for a 90% target and judged on the confirm
half with the report's own ``find_threshold``. "Before": the confirm half's point estimate against the
target (confirmed / not confirmed). "After": its 95% interval (confirmed when wholly at or above the
target, not confirmed when wholly below, inconclusive when it straddles).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.simulations.threshold import CalibratedRouter, simulate  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args(argv)
    results = simulate(CalibratedRouter(requests=args.requests), args.replicates, args.seed)
    judged = [(p, i) for p, i in results if p is not None]
    n = len(judged)
    before = Counter(p for p, _ in judged)
    after = Counter(i for _, i in judged)
    missed = [i for p, i in judged if p == "not confirmed"]
    print(f"calibrated router, {args.requests} requests, target 90%: {args.replicates} runs, {n} with a threshold "
          f"to confirm (seed {args.seed})")
    print(f"before (point estimate): confirmed {100 * before['confirmed'] / n:.1f}%, "
          f"not confirmed {100 * before['not confirmed'] / n:.1f}%")
    print(f"  of the 'not confirmed': interval wholly below the target "
          f"{100 * missed.count('not confirmed') / max(1, len(missed)):.1f}%, straddling "
          f"{100 * missed.count('inconclusive') / max(1, len(missed)):.1f}%")
    print(f"after (95% interval):    confirmed {100 * after['confirmed'] / n:.1f}%, "
          f"inconclusive {100 * after['inconclusive'] / n:.1f}%, not confirmed {100 * after['not confirmed'] / n:.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
