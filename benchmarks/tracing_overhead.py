"""What tracing costs a 1,620-row offline run: the evaluate flow's time with and without ``--trace``.

    python benchmarks/tracing_overhead.py [--repeats 3] [--workdir DIR] [--prefect-heartbeat]
        [--requests N]

The run is ``tasksets/support/experiments/traced.yaml`` (BM25 on the 30-tool catalogue, 540 requests x 3
seeds = 1,620 rows, 9 work units), cache off so every run selects. In one process: Prefect's temporary
server is started and the imports warmed by one untimed run each way; then ``flows.evaluate.evaluate`` is
timed ``--repeats`` times each way, alternating (off, on, off, on, ...) so the machine's load falls on both
alike. Traced runs export to a real Phoenix server started here (``make phoenix`` builds its venv) on free
ports: 1,620 spans (the offline router is the decision model: one DECISION span per row) and 1,620
label-check annotations per run.
Tracing's flow time includes handing each landed unit's rows to the trace process (a pickle over a pipe,
from a background thread); the trace process builds the spans and annotations and sends them, and what it
still holds when the units are done is sent while the run registers and reports, without the flow waiting
for it. "sent s" is the time until the trace process had sent everything and exited
(``RunSummary.trace_warnings`` waits for it; the CLI prints the report first).

Prefect's flow heartbeat makes every flow end on a whole second after it began (its thread sleeps in 1 s
steps and the flow joins it as it ends: 1.08 s or 2.08 s here, whatever the work), which hides any cost
under a second. It is turned off for both ways unless ``--prefect-heartbeat``.

Phoenix stores what it is sent on the same two cores, for several seconds of CPU a run: after each traced
run the benchmark waits until Phoenix is idle, so every run starts on a quiet machine (as one run, then a
look at Phoenix, would).

``--requests N`` runs a larger offline run instead: ``benchmarks/synthetic.py``'s task set of N requests
(the support ladder's four rungs, 3 seeds: 12N rows, 500 requests a unit), to see where the trace process
falls behind an offline run (the run never waits for it: the traces it cannot take are dropped and
counted in the run's one warning, printed here).

Prints each run's seconds, this process's CPU seconds and the trace process's, the medians and the overhead
in per cent of the untraced median (target <= 10%), the CPU Phoenix spent storing a run, and how long
Phoenix took to have every span of the traced runs stored.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flows.prefect_settings import apply_prefect_defaults  # noqa: E402

EXPERIMENT = ROOT / "tasksets" / "support" / "experiments" / "traced.yaml"
TARGET_PCT = 10.0


def load_average() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--requests", type=int, default=None,
                        help="a synthetic task set of this many requests (4 arms, 3 seeds) instead of traced.yaml")
    parser.add_argument("--prefect-heartbeat", action="store_true",
                        help="keep Prefect's flow heartbeat (flow times then come in whole seconds)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tooleval-tracing-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PREFECT_HOME", str(workdir / "prefect-home"))
    apply_prefect_defaults()
    try:
        run(args, workdir)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def children_cpu() -> float:
    """CPU seconds of this process's children that have ended (the trace processes, once waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid: int) -> float:
    """CPU seconds a running process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until_idle(pid: int, timeout_s: float = 300.0) -> tuple[float, float]:
    """Wait until the process (Phoenix) has used under 0.02 s of CPU in each of two half seconds in a row;
    (the seconds waited, the CPU seconds it used meanwhile)."""
    started, first = time.perf_counter(), process_cpu(pid)
    last, quiet = first, 0
    while quiet < 2 and time.perf_counter() - started < timeout_s:
        time.sleep(0.5)
        now = process_cpu(pid)
        quiet = quiet + 1 if now - last < 0.02 else 0
        last = now
    return time.perf_counter() - started, last - first


def run(args: argparse.Namespace, workdir: Path) -> None:
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with (contextlib.nullcontext() if args.prefect_heartbeat
          else temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})):
        measure(args, workdir)


def measure(args: argparse.Namespace, workdir: Path) -> None:
    from flows.evaluate import evaluate
    from tasks.selectors import registry
    from tests.tracing.phoenix_server import PhoenixServer

    import bm25s  # noqa: F401
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    print(f"{os.cpu_count()} cores; {load_average()}; Prefect's flow heartbeat "
          f"{'on' if args.prefect_heartbeat else 'off'}", flush=True)
    experiment, project, expected_rows = EXPERIMENT, "tooleval-support", 1620
    if args.requests:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from synthetic import write_large_taskset

        experiment = write_large_taskset(workdir / "synthetic", args.requests, arms=4, seeds=(1, 2, 3))
        project, expected_rows = "tooleval", 12 * args.requests
        print(f"synthetic task set: {args.requests:,} requests x 4 arms x 3 seeds = {expected_rows:,} rows",
              flush=True)
    with PhoenixServer(workdir / "phoenix") as phoenix:
        print(f"Phoenix at {phoenix.base_url} (working dir {phoenix.working_dir})", flush=True)
        all_warnings: list[str] = []

        phoenix_cpus: list[float] = []

        def one(traced: bool, index: int) -> tuple[float, float, float, float, int]:
            registry.clear_selectors()  # as a fresh CLI process
            started, cpu, child_cpu = time.perf_counter(), time.process_time(), children_cpu()
            summary = evaluate(experiment_path=str(experiment), warehouse_dir=str(workdir / f"wh-{index}"),
                               use_cache=False, trace=phoenix.otlp if traced else "off")
            seconds = time.perf_counter() - started
            warnings = summary.trace_warnings  # waits until the trace process has sent the run's spans
            sent, cpu = time.perf_counter() - started, time.process_time() - cpu
            assert summary.n_rows == expected_rows, summary.n_rows
            assert args.requests or not warnings, warnings  # the 1,620-row run must trace every row
            all_warnings.extend(warnings)
            if traced:  # every run starts on a quiet machine: Phoenix has stored the last traced run
                waited, stored_cpu = wait_until_idle(phoenix.process.pid)
                phoenix_cpus.append(stored_cpu)
            return seconds, sent, cpu, children_cpu() - child_cpu, summary.n_rows

        for traced in (False, True):  # warm-up: Prefect's server, GE, bm25s, OpenTelemetry imports
            seconds, _, _, _, _ = one(traced, -1 - traced)
            print(f"warm-up, {'traced' if traced else 'untraced'}: {seconds:.2f} s (not counted)", flush=True)
        times: dict[bool, list[float]] = {False: [], True: []}
        sents: dict[bool, list[float]] = {False: [], True: []}
        cpus: dict[bool, list[float]] = {False: [], True: []}
        child_cpus: list[float] = []
        print(f"\n{'run':>4s} {'tracing':>8s} {'rows':>8s} {'flow s':>7s} {'sent s':>7s} {'CPU s':>6s} "
              f"{'tracer CPU s':>12s}  load before", flush=True)
        for index in range(args.repeats):
            for traced in (False, True):
                load = load_average()
                seconds, sent, cpu, child_cpu, n_rows = one(traced, 2 * index + traced)
                times[traced].append(seconds)
                sents[traced].append(sent)
                cpus[traced].append(cpu)
                if traced:
                    child_cpus.append(child_cpu)
                print(f"{index + 1:>4d} {'on' if traced else 'off':>8s} {n_rows:>8,d} {seconds:>7.2f} {sent:>7.2f} "
                      f"{cpu:>6.2f} {child_cpu if traced else 0.0:>12.2f}  {load}", flush=True)
        off, on = statistics.median(times[False]), statistics.median(times[True])
        overhead = 100.0 * (on - off) / off
        cpu_off, cpu_on = statistics.median(cpus[False]), statistics.median(cpus[True])
        print(f"\nmedian flow time: untraced {off:.2f} s, traced {on:.2f} s; tracing costs {on - off:+.2f} s = "
              f"{overhead:+.1f}% (target <= {TARGET_PCT:.0f}%: {'met' if overhead <= TARGET_PCT else 'NOT met'})")
        sent_on = statistics.median(sents[True])
        print(f"median time until the traced run's spans and annotations were sent (the CLI prints the report "
              f"before): {sent_on:.2f} s = {100.0 * (sent_on - off) / off:+.1f}% over the untraced flow")
        print(f"median CPU of this process (Prefect's server and Phoenix apart): untraced {cpu_off:.2f} s, traced "
              f"{cpu_on:.2f} s = {100.0 * (cpu_on - cpu_off) / cpu_off:+.1f}%")
        print(f"median CPU of the trace process (its start, building and sending the spans and annotations, on "
              f"the other core): {statistics.median(child_cpus):.2f} s")
        print(f"median CPU Phoenix used storing a traced run's spans and annotations (it was waited for before "
              f"the next run): {statistics.median(phoenix_cpus):.2f} s")
        print(f"mean flow time: untraced {statistics.mean(times[False]):.2f} s, traced "
              f"{statistics.mean(times[True]):.2f} s")
        started = time.perf_counter()
        client = phoenix.client()
        for warning in all_warnings:
            print(f"warning of a traced run: {warning}")
        dropped = sum(int(w.split("the traces of ")[1].split(" of ")[0].replace(",", ""))
                      for w in all_warnings if "fell behind" in w)
        expected = expected_rows * (args.repeats + 1) - dropped
        while time.perf_counter() - started < 300:
            try:
                stored = len(client.spans.get_spans(project_identifier=project, limit=10_000_000))
            except Exception:  # noqa: BLE001  (404 before the project exists)
                stored = 0
            if stored >= expected:
                break
            time.sleep(1.0)
        print(f"Phoenix stored {stored:,} of the {expected:,} spans sent {time.perf_counter() - started:.1f} s "
              "after the last flow returned")


if __name__ == "__main__":
    main()
