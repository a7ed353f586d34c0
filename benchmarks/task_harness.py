"""Speed of the task harness (tasks done on a tool surface).

    python benchmarks/task_harness.py [--latency-ms 200] [--concurrency 32] [--tasks 500] [--turns 2]

1. Harness cost per task step, offline: the bundled four-arm experiment (tasksets/support_tasks: 5 arms x
   3 seeds x 250 tasks) through the plain function the flow's task wraps (``run_unit``: agent loop,
   backend, scoring, rows, Parquet), cache off, no Prefect. Reported per agent turn (a step), split into the
   offline baseline agent's own time (BM25 routing and argument filling) and the rest (the harness).
2. Per-task throughput against the loopback server (a separate process) answering after ``--latency-ms``:
   an OpenAI agent arm through the official SDK, ``--tasks`` tasks of the bundled set, each a conversation of
   ``--turns`` replies (a tool call, then text), ``--concurrency`` calls in flight (the endpoint's gate), units
   of 250 tasks run four at a time as the flow's thread runner runs them. The bound is
   concurrency / (turns x latency) tasks per second.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pyarrow.parquet as pq  # noqa: E402

from tasks.run.prepare_run import prepare_run  # noqa: E402
from tasks.run.work_units import RunContext, WorkUnit, plan_units, run_unit  # noqa: E402

FOLDER = ROOT / "tasksets" / "support_tasks"
KEY = "sk-benchmark-not-a-real-key"


def landed(directory: Path) -> list[dict]:
    rows: list[dict] = []
    for path in sorted(directory.rglob("part-*.parquet")):
        rows += pq.read_table(path, columns=["n_turns", "n_calls", "agent_ms", "wall_ms", "stop_reason"]).to_pylist()
    return rows


def offline(warehouse: Path) -> None:
    prepared = prepare_run(FOLDER / "experiments" / "four_arms.yaml")
    units = plan_units(prepared)
    ctx = RunContext(run_id="bench-offline", experiment="bench", warehouse=warehouse, cache_path=None)
    run_unit(units[0], RunContext(run_id="bench-warm-up", experiment="bench", warehouse=warehouse / "warm-up",
                                  cache_path=None))  # imports, BM25 indexes of the first arm
    started, cpu = time.perf_counter(), time.process_time()
    for unit in units:
        run_unit(unit, ctx)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    rows = landed(warehouse / "task_runs")
    turns = sum(r["n_turns"] for r in rows)
    agent = sum(r["agent_ms"] for r in rows) / 1000
    in_runs = sum(r["wall_ms"] for r in rows) / 1000
    print(f"offline: {len(rows):,} task runs, {turns:,} agent turns, {sum(r['n_calls'] for r in rows):,} calls in "
          f"{wall:.2f} s wall ({cpu:.2f} s CPU)")
    print(f"  per step (agent turn), everything: {1000 * wall / turns:.3f} ms; of which the baseline agent "
          f"{1000 * agent / turns:.3f} ms, the loop + backend + scoring {1000 * (in_runs - agent) / turns:.3f} ms, "
          f"rows + Parquet + planning per unit {1000 * (wall - in_runs) / turns:.3f} ms")
    print(f"  per task run: {1000 * wall / len(rows):.2f} ms")


def hosted(warehouse: Path, latency_ms: float, concurrency: int, n_tasks: int, turns: int) -> None:
    server = subprocess.Popen([sys.executable, "-m", "tests.provider_server", "--latency-ms", str(latency_ms),
                               "--turns", str(turns)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline().split()[1])
        seeds = max(1, -(-n_tasks // 250))
        experiment = warehouse / "hosted.yaml"
        experiment.write_text(
            f"name: bench-hosted\ntaskset: {FOLDER}\nversion: t1\nseeds: {list(range(1, seeds + 1))}\n"
            "declared: {few_seeds: benchmark}\nbatch_size: 250\n"
            "arms:\n  - {name: gpt, surface: legacy, prompt: default, agent: openai, "
            f"model: gpt-4.1-mini-2025-04-14, options: {{base_url: 'http://127.0.0.1:{port}/v1', "
            f"concurrency: {concurrency}}}}}\n")
        os.environ["OPENAI_API_KEY"] = KEY
        prepared = prepare_run(experiment)
        units, left = [], n_tasks
        for unit in plan_units(prepared):  # exactly n_tasks tasks
            if left > 0:
                units.append(WorkUnit(arm=unit.arm, seed=unit.seed, batch_index=unit.batch_index,
                                      batch=unit.batch[:left], taskset=unit.taskset,
                                      taskset_version=unit.taskset_version))
                left -= len(units[-1].batch)
        ctx = RunContext(run_id="bench-hosted", experiment="bench", warehouse=warehouse / "hosted", cache_path=None)
        started, cpu = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(max_workers=4) as pool:  # the flow's thread runner: four units at a time
            list(pool.map(lambda u: run_unit(u, ctx), units))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        rows = landed(warehouse / "hosted" / "task_runs")
        bound = concurrency / (turns * latency_ms / 1000)
        stops = {s: sum(r["stop_reason"] == s for r in rows) for s in {r["stop_reason"] for r in rows}}
        print(f"hosted: {len(rows):,} tasks x {turns} turns at {latency_ms:g} ms latency, concurrency {concurrency}: "
              f"{wall:.2f} s, {len(rows) / wall:.1f} tasks/s against a bound of {bound:.1f} tasks/s "
              f"({100 * len(rows) / wall / bound:.0f}%); stops {stops}")
        print(f"  client CPU {cpu:.2f} s: {1000 * cpu / (len(rows) * turns):.2f} ms per model call (SDK, HTTP, loop, "
              "backend, scoring, rows)")
    finally:
        server.terminate()
        server.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--skip-offline", action="store_true")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="tooleval-bench-tasks-") as directory:
        if not args.skip_offline:
            offline(Path(directory))
        hosted(Path(directory), args.latency_ms, args.concurrency, args.tasks, args.turns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
