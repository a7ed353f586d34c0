"""What tracing costs a 1,620-row offline run: the evaluate flow's time with and without ``--trace``.

    python benchmarks/tracing_overhead.py [--repeats 3] [--workdir DIR]

The run is ``tasksets/support/experiments/traced.yaml`` (BM25 on the 30-tool catalogue, 540 requests x 3
seeds = 1,620 rows, 9 work units), cache off so every run selects. In one process: Prefect's temporary
server is started and the imports warmed by one untimed run each way; then ``flows.evaluate.evaluate`` is
timed ``--repeats`` times each way, alternating (off, on, off, on, ...) so the machine's load falls on both
alike. Traced runs export to a real Phoenix server started here (``make phoenix`` builds its venv) on free
ports: 1,620 spans (the offline router is the decision model: one DECISION span per row) and 1,620
label-check annotations per run.
Tracing's flow time includes building the spans and annotations in the units and queueing them; the spans
and annotations leave from background threads, and what is still queued when the units are done is sent
while the run registers and reports, without the flow waiting for it. "sent s" is the time until this
process had sent everything (``RunSummary.trace_warnings`` waits for it; the CLI prints the report first).

Prints each run's seconds and this process's CPU seconds, the medians and the overhead in per cent of the
untraced median (target <= 10%); then how long Phoenix took to store the traced runs' spans (after the last
flow returned, not part of it). Phoenix stores spans on the same cores while later runs go: on a busy
2-core machine that slows the runs after a traced one, traced or not.
"""

from __future__ import annotations

import argparse
import logging
import os
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


def run(args: argparse.Namespace, workdir: Path) -> None:
    from flows.evaluate import evaluate
    from tasks.selectors import registry
    from tests.tracing.phoenix_server import PhoenixServer

    import bm25s  # noqa: F401
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    print(f"{os.cpu_count()} cores; {load_average()}", flush=True)
    with PhoenixServer(workdir / "phoenix") as phoenix:
        print(f"Phoenix at {phoenix.base_url} (working dir {phoenix.working_dir})", flush=True)

        def one(traced: bool, index: int) -> tuple[float, float, float, int]:
            registry.clear_selectors()  # as a fresh CLI process
            started, cpu = time.perf_counter(), time.process_time()
            summary = evaluate(experiment_path=str(EXPERIMENT), warehouse_dir=str(workdir / f"wh-{index}"),
                               use_cache=False, trace=phoenix.otlp if traced else "off")
            seconds = time.perf_counter() - started
            warnings = summary.trace_warnings  # waits until this process has sent the run's spans
            sent, cpu = time.perf_counter() - started, time.process_time() - cpu
            assert summary.n_rows == 1620 and not warnings, warnings
            return seconds, sent, cpu, summary.n_rows

        for traced in (False, True):  # warm-up: Prefect's server, GE, bm25s, OpenTelemetry imports
            seconds, _, _, _ = one(traced, -1 - traced)
            print(f"warm-up, {'traced' if traced else 'untraced'}: {seconds:.2f} s (not counted)", flush=True)
        times: dict[bool, list[float]] = {False: [], True: []}
        sents: dict[bool, list[float]] = {False: [], True: []}
        cpus: dict[bool, list[float]] = {False: [], True: []}
        print(f"\n{'run':>4s} {'tracing':>8s} {'rows':>6s} {'flow s':>7s} {'sent s':>7s} {'CPU s':>6s}  load before",
              flush=True)
        for index in range(args.repeats):
            for traced in (False, True):
                load = load_average()
                seconds, sent, cpu, n_rows = one(traced, 2 * index + traced)
                times[traced].append(seconds)
                sents[traced].append(sent)
                cpus[traced].append(cpu)
                print(f"{index + 1:>4d} {'on' if traced else 'off':>8s} {n_rows:>6,d} {seconds:>7.2f} {sent:>7.2f} "
                      f"{cpu:>6.2f}  {load}", flush=True)
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
        started = time.perf_counter()
        client = phoenix.client()
        expected = 1620 * (args.repeats + 1)
        while time.perf_counter() - started < 300:
            try:
                stored = len(client.spans.get_spans(project_identifier="tooleval-support", limit=100_000))
            except Exception:  # noqa: BLE001  (404 before the project exists)
                stored = 0
            if stored >= expected:
                break
            time.sleep(1.0)
        print(f"Phoenix stored {stored:,} of {expected:,} spans {time.perf_counter() - started:.1f} s after the "
              "last flow returned")


if __name__ == "__main__":
    main()
