"""Speed of tasks on an MCP surface: what tooleval adds around the real reference servers (memory and
filesystem, tasksets/mcp_office/node_modules), and how many tasks a second it gets through.

    python benchmarks/mcp_harness.py [--tasks 200] [--calls 4]

A scripted agent (no model: its turns cost nothing) runs tasks of ``--calls`` calls each (a read of the
graph, a search, a file read, a directory listing; the last turn replies) on a surface of both servers,
through the agent loop the flow runs (``run_task``: reset to the task's fixtures, calls, probes, scoring).

1. Per call: the agent loop's call (``execute_call``: offered-name lookup, JSON-schema check, the thread hop
   to the MCP event loop, the SDK's JSON-RPC, the server's work, the result read back) against the SDK's
   bare round trip for the same call awaited on the event loop itself. Harness cost = the difference.
2. Per task: a task's wall time minus its calls (reset of the state folder, fixture files, session,
   probes, scoring).
3. Server start-up: one instance (both servers) started cold; and at concurrency 1, 4 and 16 (one instance
   per concurrent task, kept warm across tasks) the start-up's share of a cold run of ``--tasks`` tasks:
   (cold wall - warm wall) / cold wall.
4. Tasks per second at concurrency 1, 4 and 16, warm and cold (start-up included).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schemas.surface.task import SurfaceTask  # noqa: E402
from tasks.mcp.connection import runtime_loop  # noqa: E402
from tasks.surface.agent_loop import run_task  # noqa: E402
from tasks.surface.agent_types import ProposedCall  # noqa: E402
from tasks.surface.execute_call import execute_call  # noqa: E402
from tasks.surface.load_surface import load_surface  # noqa: E402
from tasks.surface.mcp_backend import close_pools, pool_for  # noqa: E402
from tests.surface.mcp_office import CRM, write_office  # noqa: E402
from tests.surface.scripted_agent import ScriptedAgent, calls, say  # noqa: E402

SCRIPT = [("read_graph", {}), ("search_nodes", {"query": "enterprise"}), ("read_text_file", {"path": "notes/acme.txt"}),
          ("list_directory", {"path": "."}), ("open_nodes", {"names": ["Acme"]}), ("get_file_info", {"path": "notes"})]
FIXTURES = {"files": {"memory.jsonl": CRM, "files/notes/acme.txt": "Acme renews in March."}}
TASK = SurfaceTask.model_validate({
    "id": "bench", "slice": "s", "request": "go",
    "assert": {"probes": [{"probe": {"tool": "read_text_file", "args": {"path": "notes/acme.txt"}},
                           "contains": "March"}]}})


def per_call(surface, n: int) -> tuple[float, float]:
    """(median ms of a call through execute_call, median ms of the SDK's bare round trip) over ``n`` calls."""
    session = surface.backend.open(FIXTURES)
    loop = runtime_loop()
    connection = session.instance.connections["memory"]
    through, bare = [], []
    try:
        for _ in range(20):  # warm both paths
            execute_call(surface, session, ProposedCall("c", "read_graph", "{}"))
        for i in range(n):
            started = time.perf_counter()
            execute_call(surface, session, ProposedCall("c", "read_graph", "{}"))
            through.append(time.perf_counter() - started)

            async def round_trip():
                began = time.perf_counter()
                await connection._client.call_tool("read_graph", {})
                return time.perf_counter() - began

            bare.append(asyncio.run_coroutine_threadsafe(round_trip(), loop).result())
    finally:
        session.close(broken=False)
    return statistics.median(through) * 1000, statistics.median(bare) * 1000


def one_task(surface, calls_per_task: int) -> tuple[float, float]:
    """(task wall s, of which in calls s)."""
    script = [calls(SCRIPT[i % len(SCRIPT)]) for i in range(calls_per_task)] + [say("done")]
    agent = ScriptedAgent(lambda _task: list(script))
    started = time.perf_counter()
    outcome = run_task(agent, surface, TASK, FIXTURES, surface.specs, "p")
    wall = time.perf_counter() - started
    assert outcome.success and outcome.stop_reason == "model_stop", outcome
    return wall, sum(c.backend_ms for c in outcome.calls) / 1000


def run_tasks(surface, n: int, concurrency: int, calls_per_task: int) -> tuple[float, list[tuple[float, float]]]:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(lambda _: one_task(surface, calls_per_task), range(n)))
    return time.perf_counter() - started, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--calls", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        surface = load_surface(write_office(Path(tmp)), "both")
        pool = pool_for(surface.backend)
        one_task(surface, args.calls)  # the first instance, imports
        cold_start = pool.start_s
        through, bare = per_call(surface, 300)
        print(f"per call (read_graph on the memory server, median of 300): {through:.2f} ms through the agent "
              f"loop's call, {bare:.2f} ms the SDK's bare round trip: harness {through - bare:.2f} ms a call")
        walls = [one_task(surface, args.calls) for _ in range(50)]
        outside = statistics.median(w - c for w, c in walls) * 1000
        print(f"per task ({args.calls} calls, warm instance, median of 50): "
              f"{statistics.median(w for w, _ in walls) * 1000:.1f} ms, of which {outside:.1f} ms outside the agent's "
              "calls (reset of the state folder, fixture files, session, the probe's call, scoring)")
        print(f"start-up of one instance (memory + filesystem servers): {cold_start:.2f} s")
        close_pools()
        for concurrency in (1, 4, 16):
            surface = load_surface(surface.taskset_dir, "both")
            pool = pool_for(surface.backend)
            cold, _ = run_tasks(surface, args.tasks, concurrency, args.calls)
            starts, start_s = pool.starts, pool.start_s
            warm, _ = run_tasks(surface, args.tasks, concurrency, args.calls)
            print(f"concurrency {concurrency:>2}: {args.tasks} tasks warm {warm:.2f} s "
                  f"({args.tasks / warm:.0f} tasks/s); "
                  f"cold {cold:.2f} s ({args.tasks / cold:.0f} tasks/s): {starts} instances started (each "
                  f"{start_s / max(starts, 1):.2f} s), start-up {max(cold - warm, 0.0):.2f} s = "
                  f"{max(cold - warm, 0.0) / cold:.0%} of the cold run")
            close_pools()
    print(json.dumps({"tasks": args.tasks, "calls_per_task": args.calls}))


if __name__ == "__main__":
    main()
