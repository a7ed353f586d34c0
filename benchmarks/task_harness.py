"""Speed of the task harness (tasks done on a tool surface).

    python benchmarks/task_harness.py [--latency-ms 200] [--concurrency 32] [--tasks 500] [--turns 2]
                                      [--through-cli RUNS [--cli-checkout DIR ...] [--cli-max-calls N]]

1. Harness cost per task step, offline: the bundled four-arm experiment (tasksets/support_tasks: 5 arms x
   3 seeds x 250 tasks) through the plain function the flow's task wraps (``run_unit``: agent loop,
   backend, scoring, rows, Parquet), cache off, no Prefect. Reported per agent turn (a step), split into the
   offline baseline agent's own time (BM25 routing and argument filling) and the rest (the harness).
2. Per-task throughput against the loopback server (a separate process) answering after ``--latency-ms``:
   an OpenAI agent arm through the official SDK, ``--tasks`` tasks of the bundled set, each a conversation of
   ``--turns`` replies (a tool call, then text), ``--concurrency`` calls in flight (the endpoint's gate), units
   of 250 tasks run four at a time as the flow's thread runner runs them. The bound is
   concurrency / (turns x latency) tasks per second. As benchmarks/provider_throughput.py does, a warm-up
   unit of 8 tasks runs first, untimed (the SDK's import, ~1.5 CPU s, and its client set-up): its wall time is
   printed apart. The server (benchmarks/timed_loopback.py) clocks every call: the first reading is from the
   first call's arrival to the last answer, with the slots' use (the time calls spent in the server over
   concurrency x that window) and the calls in flight each half second; the second is from the units'
   start to their rows landed.
3. Beside Inspect AI (``--inspect-python``: the Python of a venv with inspect_ai 0.3.285, e.g. the one
   benchmarks/startup_vs_peers.py --with-inspect installs into its cache folder, which this script looks for
   by default): the same scripted tasks with no network on either side. tooleval runs the agent arm of part 2
   with its provider replaced by an in-process one replying as the loopback server does (the first offered
   tool with ``{}``, then "Done."), ``--scripted-tasks`` tasks (default 250: one seed) one after another
   (the arm's concurrency 1), through ``run_unit`` (loop, the real toolkit, scoring, rows, Parquet); Inspect
   runs the same tasks
   (benchmarks/peers/inspect_agent_tasks.py: a mockllm scripted alike, ToolDefs running the same toolkit tools
   on a fresh state per sample, ``generate`` looping over calls, its log written). Reported per agent turn.
   Without an Inspect venv the Inspect line is skipped (this script never installs anything).
4. Through the CLI (``--through-cli RUNS``): part 2's experiment (every seed of 250 tasks ``--tasks`` needs)
   run by ``tooleval tasks run EXPERIMENT --no-cache`` as its own process, on the kept Prefect server, into a
   scratch warehouse, RUNS times, against the same timed server. Read from the first call's arrival to the
   last answer: the process's start-up (imports, the server, the checks) and its end (registration, report)
   are a fixed cost measured by benchmarks/startup_vs_peers.py, printed here only as the start-to-exit time.
   ``--cli-checkout DIR`` (twice: A, B, A, B) runs another tree of this project with this venv, for a
   before/after; ``--cli-max-calls N`` gives the run a call cap (every call then reserves its place in the
   run's ledger).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
from tasks.selectors.providers import provider_calls  # noqa: E402
from tasks.selectors.providers.chat_types import ChatReply  # noqa: E402
from tasks.surface.agent_types import ProposedCall  # noqa: E402
from tasks.surface.conversation_wire import Called  # noqa: E402
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


class Loopback:
    """The timed loopback server (benchmarks/timed_loopback.py) as its own process."""

    def __init__(self, latency_ms: float, turns: int) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "benchmarks.timed_loopback", "--latency-ms",
                                         str(latency_ms), "--turns", str(turns)], cwd=ROOT, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        self.url = f"http://127.0.0.1:{int(self.process.stdout.readline().split()[1])}/v1"

    def window(self) -> dict:
        """The calls answered since the last reading: count, first arrival to last answer, most in flight."""
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=10)


def of_bound(n_tasks: int, seconds: float, bound: float) -> str:
    return f"{n_tasks / seconds:.1f} tasks/s, {100 * n_tasks / seconds / bound:.1f}% of the bound"


def stops_of(rows: list[dict]) -> dict[str, int]:
    return {s: sum(r["stop_reason"] == s for r in rows) for s in {r["stop_reason"] for r in rows}}


def print_window(window: dict, n_tasks: int, bound: float, concurrency: int) -> None:
    """The fair reading: from the first call's arrival to the last answer, with the slots' use in it."""
    use = window["served_s"] / (window["window_s"] * concurrency)
    print(f"  first call to last answer {window['window_s']:.2f} s: {of_bound(n_tasks, window['window_s'], bound)}; "
          f"{window['calls']:,} calls, slot use {100 * use:.1f}% of {concurrency}, "
          f"at most {window['most_in_flight']} in flight")
    print(f"  in flight each 0.5 s: {' '.join(f'{n:.0f}' for n in window['in_flight'])}")


def hosted(warehouse: Path, latency_ms: float, concurrency: int, n_tasks: int, turns: int) -> None:
    server = Loopback(latency_ms, turns)
    try:
        experiment = hosted_experiment(warehouse, server.url, concurrency, n_tasks)
        units = exactly(plan_units(prepare_run(experiment)), n_tasks)
        started = time.perf_counter()
        run_unit(exactly(units, 8)[0], RunContext(run_id="bench-warm-up", experiment="bench",
                                                  warehouse=warehouse / "warm-up", cache_path=None))  # not measured
        print(f"hosted warm-up (8 tasks: SDK import, client set-up): {time.perf_counter() - started:.2f} s")
        server.window()
        ctx = RunContext(run_id="bench-hosted", experiment="bench", warehouse=warehouse / "hosted", cache_path=None)
        started, cpu = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(max_workers=4) as pool:  # the flow's thread runner: four units at a time
            list(pool.map(lambda u: run_unit(u, ctx), units))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        rows = landed(warehouse / "hosted" / "task_runs")
        bound = concurrency / (turns * latency_ms / 1000)
        print(f"hosted in process: {len(rows):,} tasks x {turns} turns at {latency_ms:g} ms latency, concurrency "
              f"{concurrency}, bound {bound:.1f} tasks/s; stops {stops_of(rows)}")
        print_window(server.window(), len(rows), bound, concurrency)
        print(f"  units start to units landed {wall:.2f} s: {of_bound(len(rows), wall, bound)}")
        print(f"  client CPU {cpu:.2f} s: {1000 * cpu / (len(rows) * turns):.2f} ms per model call (SDK, HTTP, loop, "
              "backend, scoring, rows)")
    finally:
        server.close()


def through_cli(warehouse: Path, latency_ms: float, concurrency: int, n_tasks: int, turns: int, runs: int,
                checkouts: list[Path], max_calls: int | None = None) -> None:
    """``tooleval tasks run`` as its own process (the kept Prefect server, a scratch warehouse per run, cache off)
    against the timed loopback server: every seed of 250 tasks that ``n_tasks`` needs. With several
    ``checkouts`` (trees of this project sharing this venv) their runs take turns: A, B, A, B. ``max_calls``:
    the run's call cap (``--max-calls``), which makes every call reserve its place in the run's ledger."""
    server = Loopback(latency_ms, turns)
    try:
        experiment = hosted_experiment(warehouse, server.url, concurrency, n_tasks, "-cli")
        bound = concurrency / (turns * latency_ms / 1000)
        for run in range(runs):
            for checkout in checkouts:
                env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(checkout)}
                env.pop("TOOLEVAL_WAREHOUSE", None)
                scratch = Path(tempfile.mkdtemp(prefix="cli-", dir=warehouse))
                argv = [sys.executable, "-m", "flows.launch", "tasks", "run", str(experiment), "--no-cache",
                        "--warehouse", str(scratch), *(["--max-calls", str(max_calls)] if max_calls else [])]
                load = os.getloadavg()[0]
                started = time.perf_counter()
                done = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True)
                wall = time.perf_counter() - started
                window = server.window()
                name = "" if len(checkouts) == 1 else f" {checkout}"
                if done.returncode != 0:
                    print(f"through the CLI{name}, run {run + 1}: exit {done.returncode}\n{done.stdout[-1500:]}"
                          f"\n{done.stderr[-1500:]}")
                    continue
                rows = landed(scratch / "task_runs")
                print(f"through the CLI{name}, run {run + 1} (load {load:.1f}): {len(rows):,} tasks x {turns} turns "
                      f"at {latency_ms:g} ms, concurrency {concurrency}, bound {bound:.1f} tasks/s; "
                      f"stops {stops_of(rows)}")
                print_window(window, len(rows), bound, concurrency)
                tail = started + wall - window["last"]
                print(f"  the process, start to exit {wall:.2f} s: start to the first call "
                      f"{window['first'] - started:.2f} s, the last answer to exit {tail:.2f} s")
                shutil.rmtree(scratch, ignore_errors=True)
    finally:
        server.close()


def hosted_experiment(warehouse: Path, base_url: str, concurrency: int, n_tasks: int, tag: str = "") -> Path:
    """The experiment of one OpenAI agent arm at ``base_url``: as many seeds of the 250 tasks as ``n_tasks`` needs."""
    seeds = max(1, -(-n_tasks // 250))
    experiment = warehouse / f"hosted{tag}.yaml"
    experiment.write_text(
        f"name: bench-hosted\ntaskset: {FOLDER}\nversion: t1\nseeds: {list(range(1, seeds + 1))}\n"
        "declared: {few_seeds: benchmark}\nbatch_size: 250\n"
        "arms:\n  - {name: gpt, surface: legacy, prompt: default, agent: openai, "
        f"model: gpt-4.1-mini-2025-04-14, options: {{base_url: '{base_url}', concurrency: {concurrency}}}}}\n")
    return experiment


def exactly(units: list[WorkUnit], n_tasks: int) -> list[WorkUnit]:
    """The first ``n_tasks`` tasks of the planned units."""
    kept, left = [], n_tasks
    for unit in units:
        if left > 0:
            kept.append(WorkUnit(arm=unit.arm, seed=unit.seed, batch_index=unit.batch_index, batch=unit.batch[:left],
                                 taskset=unit.taskset, taskset_version=unit.taskset_version))
            left -= len(kept[-1].batch)
    return kept


class ScriptedProvider:
    """The loopback server's ``--turns 2`` script, in process: the first offered tool with ``{}``, then text."""

    provider, endpoint = "openai", "in-process"

    def complete(self, request, timeout_s):
        if request.tools and not any(isinstance(event, Called) for event in request.events):
            name = request.tools[0].name
            return ChatReply(served_model=request.model, tool_name=name, arguments="{}", input_tokens=500,
                             output_tokens=12, stop_reason="tool_calls", n_tool_calls=1,
                             extra={"calls": [ProposedCall("call_0", name, "{}")]})
        return ChatReply(served_model=request.model, tool_name=None, text="Done.", input_tokens=520, output_tokens=2,
                         stop_reason="stop", extra={"calls": []})


def inspect_spec(unit: WorkUnit, path: Path) -> None:
    """What benchmarks/peers/inspect_agent_tasks.py runs: the unit's tasks, prompt and tools in its seed's order."""
    from tasks.surface.chat_agent import ChatAgent
    from tasks.selectors.providers.call_budget import RunLedger
    from tasks.surface.run_unit import plan_tasks

    tools, planned = plan_tasks(unit)
    surface = unit.arm.surface
    wired = ChatAgent("openai", unit.arm.model_id, unit.arm.options, RunLedger(None, "spec")).wired(tools)
    spec = {"prompt": unit.arm.prompt_text, "taskset_dir": str(FOLDER), "toolkit": surface.backend.reference,
            "tools": [{"name": w.name, "description": w.description, "parameters": w.parameters,
                       "backend": surface.offered(t.name).backend.name} for t, w in zip(tools, wired.tools)],
            "tasks": [{"id": p.task.id, "messages": [{"role": m.role, "content": m.content} for m in p.task.messages],
                       "fixtures": p.fixtures} for p in planned]}
    path.write_text(json.dumps(spec, default=str))


def default_inspect_python() -> Path | None:
    from benchmarks.startup_vs_peers import default_cache_dir, inspect_python

    python = inspect_python(default_cache_dir())
    return python if python.exists() else None


def beside_inspect(warehouse: Path, n_tasks: int, inspect: Path | None) -> None:
    experiment = hosted_experiment(warehouse, "http://127.0.0.1:9/v1", 1, n_tasks, "-scripted")
    units = exactly(plan_units(prepare_run(experiment)), n_tasks)
    real = provider_calls.make_provider
    provider_calls.make_provider = lambda kind, options, key, adapters=None: ScriptedProvider()
    try:
        run_unit(exactly(units, 8)[0], RunContext(run_id="bench-scripted-warm-up", experiment="bench",
                                                  warehouse=warehouse / "scripted-warm-up", cache_path=None))
        ctx = RunContext(run_id="bench-scripted", experiment="bench", warehouse=warehouse / "scripted",
                         cache_path=None)
        started, cpu = time.perf_counter(), time.process_time()
        for unit in units:
            run_unit(unit, ctx)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        provider_calls.make_provider = real
    rows = landed(warehouse / "scripted" / "task_runs")
    turns = sum(r["n_turns"] for r in rows)
    print(f"scripted in process, no network: tooleval {len(rows):,} tasks, {turns:,} turns in {wall:.2f} s wall "
          f"({cpu:.2f} s CPU): {1000 * wall / turns:.2f} ms per turn ({1000 * cpu / turns:.2f} ms CPU)")
    if inspect is None or not inspect.exists():
        print(f"  Inspect AI: no venv ({inspect or 'none in the cache folder'}; --inspect-python, or "
              "benchmarks/startup_vs_peers.py --with-inspect installs one)")
        return
    inspect_spec(units[0], warehouse / "inspect-spec.json")
    env = {**os.environ, "DO_NOT_TRACK": "1", "INSPECT_DISPLAY": "none", "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([str(inspect), str(ROOT / "benchmarks" / "peers" / "inspect_agent_tasks.py"), "--spec",
                           str(warehouse / "inspect-spec.json"), "--epochs", str(len(units)),
                           "--log-dir", str(warehouse / "inspect-logs")],
                          cwd=warehouse, env=env, capture_output=True, text=True)
    line = next((x for x in done.stdout.splitlines() if x.startswith("inspect:")), None)
    print(f"  {line}" if line and done.returncode == 0 else f"  Inspect AI failed: {done.stderr[-1500:]}")


def main() -> int:
    os.environ["OPENAI_API_KEY"] = KEY
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--skip-offline", action="store_true")
    parser.add_argument("--skip-hosted", action="store_true")
    parser.add_argument("--through-cli", type=int, default=0, metavar="RUNS",
                        help="also run part 2's experiment RUNS times through `tooleval tasks run` (part 4)")
    parser.add_argument("--cli-checkout", type=Path, action="append", default=None, metavar="DIR",
                        help="a tree of this project whose `tooleval tasks run` part 4 runs (default: this one); "
                        "given twice, the two take turns")
    parser.add_argument("--cli-max-calls", type=int, default=None, metavar="N",
                        help="part 4's call cap (tasks run --max-calls; default none)")
    parser.add_argument("--skip-inspect", action="store_true", help="skip part 3 (tooleval and Inspect AI scripted)")
    parser.add_argument("--scripted-tasks", type=int, default=250, help="tasks of part 3 (each side)")
    parser.add_argument("--inspect-python", type=Path, default=None,
                        help="Python of a venv with inspect_ai (default: startup_vs_peers.py's cache folder)")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="tooleval-bench-tasks-") as directory:
        if not args.skip_offline:
            offline(Path(directory))
        if not args.skip_hosted:
            hosted(Path(directory), args.latency_ms, args.concurrency, args.tasks, args.turns)
        if args.through_cli:
            through_cli(Path(directory), args.latency_ms, args.concurrency, args.tasks, args.turns, args.through_cli,
                        [c.resolve() for c in args.cli_checkout or [ROOT]], args.cli_max_calls)
        if not args.skip_inspect:
            beside_inspect(Path(directory), args.scripted_tasks, args.inspect_python or default_inspect_python())
    return 0


if __name__ == "__main__":
    sys.exit(main())
