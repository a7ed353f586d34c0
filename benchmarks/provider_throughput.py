"""Throughput of the hosted-model selectors against the bound concurrency / latency, and the harness's own
cost per call, through the real openai / anthropic SDKs and the loopback server (a separate process).

    python benchmarks/provider_throughput.py [--latency-ms 200] [--concurrency 32] [--units 8]
        [--parallel-units 4] [--batch 200] [--overhead-calls 400] [--kind openai|anthropic|both]

1. Throughput: ``--units`` work units of ``--batch`` support requests (the 30-tool catalogue, tools in a
   seed's order), ``--parallel-units`` of them at a time as the evaluate flow runs them (Prefect's thread
   runner), each through ``select_and_land`` (cache, ledger, scoring, Parquet landing) and one process-wide
   gate of ``--concurrency`` calls in flight. The bound is concurrency / latency; the goal is >= 90% of it.
   A single unit alone is reported too: its last wave is only partly full.
2. Harness cost per call, with a zero-latency server: client-process CPU seconds per call at full
   concurrency, and wall time per call one at a time (SDK, HTTP, reading the reply, cache and ledger).
3. The harness alone, with the SDK and HTTP replaced by an in-process provider: its own ceiling against the
   bound, and its own CPU per call; and the bare SDK from as many threads with the same payload (no
   harness), the machine's ceiling for each provider. Figures swing with the machine's load: it is printed.
"""

from __future__ import annotations

import argparse
import json
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

from schemas.catalogue import Catalogue, ToolSpec  # noqa: E402
from schemas.taskset import LabelledRequest  # noqa: E402
from tasks.selection.plan_batch import plan_arm_seed  # noqa: E402
from tasks.selection.arms import SelectionArm  # noqa: E402
from tasks.run.work_units import RunContext
from tasks.selection.select_batch import select_and_land
from tasks.selectors.providers.wire_tools import wire_schema  # noqa: E402

SUPPORT = ROOT / "tasksets" / "support"
MODELS = {"openai": "gpt-4.1-mini-2025-04-14", "anthropic": "claude-haiku-4-5-20251001"}
KEY = "sk-benchmark-not-a-real-key"


def start_server(latency_ms: float) -> tuple[subprocess.Popen, int]:
    process = subprocess.Popen([sys.executable, "-m", "tests.provider_server", "--latency-ms", str(latency_ms)],
                               cwd=ROOT, stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline().strip()
    return process, int(line.split()[1])


def support_catalogue() -> Catalogue:
    tools: list[ToolSpec] = []
    for name in ("base", "disputes", "subscriptions", "giftcards"):
        tools += [ToolSpec(**t) for t in json.loads((SUPPORT / "catalogues" / f"{name}.json").read_text())["tools"]]
    return Catalogue(name="giftcards", tools=tuple(tools))


def requests(n: int, offset: int) -> tuple[LabelledRequest, ...]:
    lines = [json.loads(line) for line in (SUPPORT / "v1.jsonl").read_text().splitlines() if line.strip()]
    out = []
    for i in range(offset, offset + n):
        record = dict(lines[i % len(lines)])
        messages = [dict(m) for m in record["messages"]]
        messages[-1]["content"] += f" (#{i})"  # every request distinct: no cache hit between units
        out.append(LabelledRequest(**{**record, "id": f"{record['id']}-{i}", "messages": messages}))
    return tuple(out)


def units_for(kind: str, port: int, concurrency: int, n_units: int, batch: int, tag: str):
    base_url = f"http://127.0.0.1:{port}" + ("/v1" if kind == "openai" else "")
    arm = SelectionArm(name=f"{kind}-{tag}", rung=1, catalogue_name="giftcards", catalogue=support_catalogue(),
                      prompt_name="default", prompt_text=(SUPPORT / "prompts" / "default.md").read_text(),
                      model_id=MODELS[kind], selector=kind, version="v1",
                      options={"base_url": base_url, "concurrency": concurrency, "max_retries": 0, "tag": tag})
    return [unit for i in range(n_units)
            for unit in plan_arm_seed(arm, 1, requests(batch, i * batch), "support", batch)]


def run_units(units, parallel: int, workdir: Path, run_id: str) -> tuple[float, float, int]:
    ctx = RunContext(run_id, "bench", workdir / "rows", workdir / "cache" / "selections.sqlite",
                     workdir / "cache" / "run_ledger.sqlite")
    cpu, started = time.process_time(), time.perf_counter()
    with ThreadPoolExecutor(parallel) as pool:
        results = list(pool.map(lambda unit: select_and_land(unit, ctx), units))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    n = sum(r.n_rows for r in results)
    errors = sum(sum(pq.read_table(r.paths[0], columns=["error"]).column("error").to_pylist()) for r in results)
    # every call answered (the loopback script calls the first tool with '{}': rows are invalid, not errors)
    assert sum(r.n_cache_hits for r in results) == 0 and errors == 0, f"{errors} error rows"
    return wall, cpu, n


def bare_sdk(kind: str, port: int, concurrency: int, n: int) -> float:
    """Calls/s of the bare SDK from ``concurrency`` threads with the same payload: the ceiling on this machine
    (no routing, validation, cache, ledger or landing)."""
    catalogue, prompt = support_catalogue(), (SUPPORT / "prompts" / "default.md").read_text()
    sendable = [(t.name, t.description, wire_schema(t.parameters)[0]) for t in catalogue.tools]
    if kind == "openai":
        import openai

        client = openai.OpenAI(api_key=KEY, base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
        tools = [{"type": "function", "function": {"name": name, "description": text, "parameters": schema}}
                 for name, text, schema in sendable]

        def call(i: int) -> None:
            client.chat.completions.with_raw_response.create(
                model=MODELS[kind], messages=[], max_completion_tokens=1024,
                extra_body={"messages": [{"role": "system", "content": prompt},
                                         {"role": "user", "content": f"where is my order? (#{i})"}], "tools": tools})
    else:
        import anthropic

        client = anthropic.Anthropic(api_key=KEY, base_url=f"http://127.0.0.1:{port}", max_retries=0)
        tools = [{"name": name, "description": text, "input_schema": schema} for name, text, schema in sendable]

        def call(i: int) -> None:
            client.messages.with_raw_response.create(
                model=MODELS[kind], messages=[], max_tokens=1024, system=prompt,
                extra_body={"messages": [{"role": "user", "content": f"where is my order? (#{i})"}], "tools": tools})

    call(0)
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(call, range(n)))
    return n / (time.perf_counter() - started)


def harness_alone(latency_s: float, concurrency: int, n_units: int, batch: int, parallel: int, work: Path
                  ) -> tuple[float, float, int]:
    """The harness with the SDK and HTTP taken out: a provider that waits ``latency_s`` and answers. Its
    CPU per call is the harness's own (routing, name map, schema check, ledger, cache, scoring, landing)."""
    from tasks.selectors.providers import provider_calls
    from tasks.selectors.providers.chat_types import ChatReply

    class Instant:
        provider, endpoint = "openai", "in-process"

        def complete(self, request, timeout_s):
            if latency_s:
                time.sleep(latency_s)
            return ChatReply(served_model=request.model, tool_name=request.tools[0].name, arguments="{}",
                             input_tokens=5000, output_tokens=12, stop_reason="tool_calls", n_tool_calls=1)

    real = provider_calls.make_provider
    provider_calls.make_provider = lambda kind, options, key, adapters=None: Instant()
    try:
        units = units_for("openai", 1, concurrency, n_units, batch, f"alone-{latency_s}")
        return run_units(units, parallel, work, f"alone-{latency_s}")
    finally:
        provider_calls.make_provider = real


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=200)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--units", type=int, default=8)
    parser.add_argument("--parallel-units", type=int, default=4)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--overhead-calls", type=int, default=400)
    parser.add_argument("--kind", choices=["openai", "anthropic", "both"], default="both")
    parser.add_argument("--trials", type=int, default=3, help="repeats of the throughput run (machine noise)")
    args = parser.parse_args()
    os.environ["OPENAI_API_KEY"] = os.environ["ANTHROPIC_API_KEY"] = KEY
    kinds = ["openai", "anthropic"] if args.kind == "both" else [args.kind]

    slow, slow_port = start_server(args.latency_ms)
    fast, fast_port = start_server(0)
    try:
        bound = args.concurrency / (args.latency_ms / 1000)
        print(f"bound: concurrency {args.concurrency} / latency {args.latency_ms:.0f} ms = {bound:.1f} calls/s; "
              f"{args.units} units of {args.batch} requests, {args.parallel_units} at a time; 30 tools per call; "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        with tempfile.TemporaryDirectory() as tmp:
            wall, cpu, n = harness_alone(args.latency_ms / 1000, args.concurrency, args.units, args.batch,
                                         args.parallel_units, Path(tmp))
            print(f"  harness alone (no SDK, no HTTP), {args.latency_ms:.0f} ms: {n / wall:7.1f} calls/s = "
                  f"{100 * n / wall / bound:5.1f}% of the bound")
            wall, cpu, n = harness_alone(0.0, args.concurrency, max(1, args.overhead_calls // args.batch), args.batch,
                                         args.parallel_units, Path(tmp))
            print(f"  harness alone, zero latency: {1000 * cpu / n:.2f} ms CPU/call (routing, name map, schema "
                  f"check, ledger, cache, scoring, Parquet)")
        for kind in kinds:
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                warm = units_for(kind, slow_port, args.concurrency, 1, 8, "warm")
                run_units(warm, 1, work, "warm")  # SDK import and client set-up, not measured
                one = units_for(kind, slow_port, args.concurrency, 1, args.batch, "single")
                wall, _, n = run_units(one, 1, work, "single")
                print(f"  {kind:9} one unit alone:      {n / wall:7.1f} calls/s = {100 * n / wall / bound:5.1f}% "
                      f"of the bound ({n} calls in {wall:.2f} s)")
                rates = []
                for trial in range(args.trials):
                    many = units_for(kind, slow_port, args.concurrency, args.units, args.batch, f"many{trial}")
                    wall, cpu, n = run_units(many, args.parallel_units, work, f"many{trial}")
                    rates.append(n / wall)
                    print(f"  {kind:9} {args.parallel_units} units at a time: {n / wall:7.1f} calls/s = "
                          f"{100 * n / wall / bound:5.1f}% of the bound ({n} calls in {wall:.2f} s; "
                          f"client CPU {1000 * cpu / n:.2f} ms/call)")
                reference = bare_sdk(kind, slow_port, args.concurrency, args.units * args.batch // 2)
                print(f"  {kind:9} best of {args.trials}: {100 * max(rates) / bound:.1f}% of the bound; the bare SDK "
                      f"from {args.concurrency} threads, same payload: {reference:.1f} calls/s = "
                      f"{100 * reference / bound:.1f}% (load average now {os.getloadavg()[0]:.1f})")

                calls = args.overhead_calls
                busy = units_for(kind, fast_port, args.concurrency, max(1, calls // args.batch), args.batch, "cpu")
                wall, cpu, n = run_units(busy, args.parallel_units, work, "cpu")
                print(f"  {kind:9} harness cost, zero latency, concurrency {args.concurrency}: "
                      f"{1000 * cpu / n:.2f} ms CPU/call, {n / wall:.0f} calls/s on this machine")
                serial = units_for(kind, fast_port, 1, 1, min(calls, 200), "serial")
                wall, cpu, n = run_units(serial, 1, work, "serial")
                print(f"  {kind:9} harness cost, zero latency, one at a time: {1000 * wall / n:.2f} ms wall/call "
                      f"({1000 * cpu / n:.2f} ms CPU)")
    finally:
        for process in (slow, fast):
            process.terminate()
            process.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
