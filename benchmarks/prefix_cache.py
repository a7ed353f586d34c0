"""Prefix-cache scheduling, before and after: the share of prompt tokens served from the server's cache, and
the wall time, when an arm's units run as the evaluate flow's thread runner runs them.

The loopback server models a llama.cpp-style server (``tests/provider_server.py``: ``PrefixCache``): a
request takes a slot, the prefix it shares with that slot's last prompt is cached, and the rest is
evaluated at ``--per-token-ms`` a token (so time is proportional to uncached prompt tokens). The arm is
the support agent's 30 tools with its real prompt; one unit is a batch of ``--batch`` requests of one seed.

    PYTHONPATH=. .venv/bin/python benchmarks/prefix_cache.py [--slots 1] [--concurrency 4] [--requests 180]

"before": units of different seeds run side by side (no prefix lanes); "after": one
(arm, seed) at a time per endpoint (``tasks/run/prefix_lanes.py``). Anthropic is not measured here: before
prefix lanes no ``cache_control`` was sent, so nothing was cached; after, every request of a seed but the first
reads the tool list (``tests/selectors/providers/test_prefix_lanes.py``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from tests.provider_server import PrefixCache, ProviderServer, first_tool
from tests.selectors.providers.prefix_units import hosted_units, run_like_the_thread_runner

MODEL = "gpt-4.1-mini-2025-04-14"


def measure(prefix_lanes: bool, args: argparse.Namespace) -> dict[str, float]:
    cache = PrefixCache(slots=args.slots, per_token_s=args.per_token_ms / 1000)
    with ProviderServer(first_tool, prefix_cache=cache, record=True) as server, \
            tempfile.TemporaryDirectory() as tmp:
        options = {"base_url": server.openai_url, "concurrency": args.concurrency, "timeout_s": 600.0}
        units = hosted_units("openai", MODEL, options, args.requests, list(range(1, args.seeds + 1)), args.batch)
        started = time.perf_counter()
        results = run_like_the_thread_runner(units, Path(tmp), prefix_lanes=prefix_lanes)
        wall = time.perf_counter() - started
        rows = [row for r in results for row in pq.read_table(r.paths[0], columns=["input_tokens",
                                                                              "cached_input_tokens"]).to_pylist()]
        orders = [seen.tools for seen in server.requests()]
    prompt = sum(r["input_tokens"] for r in rows)
    cached = sum(r["cached_input_tokens"] or 0 for r in rows)
    return {"calls": len(rows), "wall_s": wall, "cached_share": cached / prompt, "uncached": prompt - cached,
            "mean_prompt": prompt / len(rows), "switches": sum(a != b for a, b in zip(orders, orders[1:]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", type=int, default=1, help="server slots (llama.cpp --parallel)")
    parser.add_argument("--concurrency", type=int, default=4, help="the arm's calls in flight per endpoint")
    parser.add_argument("--requests", type=int, default=180, help="requests per seed")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=60, help="requests per work unit")
    parser.add_argument("--per-token-ms", type=float, default=0.5, help="evaluation time per uncached prompt token")
    parser.add_argument("--repeat", type=int, default=2, help="before/after pairs, alternated")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "local")
    print(f"{args.seeds} seeds x {args.requests} requests, units of {args.batch}, {args.slots} slot(s), "
          f"concurrency {args.concurrency}, {args.per_token_ms} ms per uncached prompt token")
    warm = argparse.Namespace(**{**vars(args), "requests": 4, "seeds": 1, "batch": 4})
    measure(True, warm)  # imports, clients, schema validators: paid once, outside both measurements
    runs = [("before (units interleaved)", False), ("after (prefix lanes)", True)] * args.repeat
    for label, lanes in runs:
        m = measure(lanes, args)
        print(f"{label:<28} {m['calls']} calls, {m['mean_prompt']:,.0f} prompt tokens each: "
              f"cached {100 * m['cached_share']:.2f}% ({m['uncached']:,} evaluated), wall {m['wall_s']:.1f} s, "
              f"tool-order switches on arrival {m['switches']}")


if __name__ == "__main__":
    main()
