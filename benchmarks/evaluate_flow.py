"""Per-row cost of the whole evaluate flow (lexical router) on a large synthetic task set.

    python benchmarks/evaluate_flow.py [--requests 4200] [--arms 4] [--seeds 3] [--batch-size 500]
        [--units-per-arm-seed N] [--task-run-per-unit] [--workdir DIR] [--keep] [--no-breakdown] [--profile]
        [--cache-off-only]

Builds a task set in a temporary folder (``benchmarks/synthetic.py``: the support catalogues, prompt and
weights; ``--requests`` requests derived from support v1 with perturbed, distinct texts; frozen with
``freeze_version``) and a lexical ladder experiment (``--arms`` rungs x ``--seeds`` seeds). Then, in one
process:

1. starts Prefect's ephemeral server with a trivial flow, then warms the imports (Great Expectations,
   bm25s, DuckDB) with an evaluate run on a 60-request set: process start-up, not counted below;
2. times ``flows.evaluate.evaluate(...)`` three times: cache OFF (``use_cache=False``) into a fresh
   warehouse, then cache ON into another fresh warehouse twice (cold fill, then warm: every selection a
   cache hit; ``--cache-off-only``: the first only). Before each run the selector registry is emptied, as
   in a fresh CLI process;
3. prints ms per row against the 0.5 ms target, Prefect's bookkeeping measured in each run, per thread
   (``InRunBookkeeping``: its task engine around each unit, the flow's main thread around the plain steps,
   its client threads, its server), the peak memory (ru_maxrss of this process; the peak RSS
   during each run; the Prefect server subprocess apart: ru_maxrss does not count it);
4. (unless ``--no-breakdown``) times the plain functions the flow calls, without Prefect, on the same
   experiment: prepare (resolve, load, GE label checks), plan, select-and-land (split into planning the
   batch, cache, selector, row building, Arrow, Parquet write), registration, report; the rest of the
   flow's time is Prefect's (task runs, state tracking, result handling): its share of the cache-off run's
   CPU (this process and the Prefect server) is printed as Prefect's bookkeeping.

``--units-per-arm-seed N`` plans the runs with ``tasks.run.work_units.UNITS_PER_ARM_SEED = N`` (0: no
limit, every unit ``--batch-size`` items), to compare unit sizes on the same task set.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import logging
import os
import pstats
import resource
import shutil
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from flows.prefect_settings import apply_prefect_defaults  # noqa: E402

TARGET_MS_PER_ROW = 0.5


# --------------------------------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------------------------------


def maxrss_mib() -> float:
    """Peak resident set of this process since it started (Linux: KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _status_kib(pid: int | str, field: str) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return float(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak() -> bool:
    """Reset this process's VmHWM (peak RSS) so the next reading is the peak of one phase."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def phase_peak_mib() -> float | None:
    value = _status_kib("self", "VmHWM")
    return None if value is None else value / 1024


def server_processes() -> list[tuple[int, str, float, float]]:
    """(pid, command, RSS MiB, peak RSS MiB) of this process's children: the Prefect server."""
    import psutil

    out = []
    for child in psutil.Process().children(recursive=True):
        try:
            command = " ".join(child.cmdline()[:4])[:70]
            rss = child.memory_info().rss / 2**20
        except psutil.Error:
            continue
        peak = _status_kib(child.pid, "VmHWM")
        out.append((child.pid, command, rss, (peak or 0) / 1024))
    return out


def server_cpu_seconds() -> float:
    """CPU seconds (user + system) used so far by this process's children (the Prefect server)."""
    import psutil

    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


# --------------------------------------------------------------------------------------------------
# Breakdown of the plain functions
# --------------------------------------------------------------------------------------------------


class Stopwatch:
    """Seconds accumulated per label, by wrapping functions in place."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[label] += time.perf_counter() - started

        setattr(owner, name, timed)
        self._undo.append(lambda: setattr(owner, name, original))

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()


class InRunBookkeeping:
    """Prefect's share of one flow run's CPU, measured in that run, per thread.

    The plain functions the flow calls (``PLAIN`` in flows/evaluate.py's namespace) are wrapped to add up
    the CPU of the thread that runs them (``time.thread_time``); so is Prefect's task engine
    (``prefect.task_engine.run_task_sync``, what its thread-pool runner hands each worker). Prefect's CPU
    is then: in each worker, its engine's CPU minus the unit's; in the main thread, the flow call's CPU
    minus the plain functions'; the CPU of Prefect's own Python threads (its API client's event loops,
    events) across the run, from /proc/self/task; and its server's. What no Python thread names (the
    native threads of DuckDB, Arrow, Polars) is the work's. tooleval's few lines in the flow body itself
    (progress, sums) count as Prefect's: an upper bound.
    """

    PLAIN = ("prepare_run", "plan_units", "run_unit", "cache_use", "registration_records", "save_registration",
             "register_run", "judge_and_publish", "tidy_after_run", "register_criteria", "mark_owner")

    def __init__(self) -> None:
        self.plain = {"main": 0.0, "workers": 0.0}
        self.engine = 0.0
        self.tasks = 0
        self._lock = threading.Lock()
        self._undo: list[Callable[[], None]] = []

    def _add(self, key: str, seconds: float) -> None:
        with self._lock:
            self.plain[key] += seconds

    def __enter__(self) -> "InRunBookkeeping":
        import prefect.task_engine as task_engine

        import flows.evaluate as evaluate_module

        main = threading.main_thread()
        for name in self.PLAIN:
            original = getattr(evaluate_module, name)

            def timed(*args: Any, __original: Callable = original, **kwargs: Any) -> Any:
                started = time.thread_time()
                try:
                    return __original(*args, **kwargs)
                finally:
                    self._add("main" if threading.current_thread() is main else "workers",
                              time.thread_time() - started)

            setattr(evaluate_module, name, timed)
            self._undo.append(lambda name=name, original=original: setattr(evaluate_module, name, original))
        engine = task_engine.run_task_sync

        def engine_timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return engine(*args, **kwargs)
            finally:
                if threading.current_thread() is not main:
                    with self._lock:
                        self.engine += time.thread_time() - started
                        self.tasks += 1

        task_engine.run_task_sync = engine_timed
        self._undo.append(lambda: setattr(task_engine, "run_task_sync", engine))
        self._threads_before = self._background_cpu()
        self._main_before = time.thread_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.main_cpu = time.thread_time() - self._main_before
        after = self._background_cpu()
        self.background = sum(cpu - self._threads_before.get(tid, 0.0) for tid, cpu in after.items())
        while self._undo:
            self._undo.pop()()

    @staticmethod
    def _background_cpu() -> dict[int, float]:
        """CPU seconds of each long-lived Python thread but the main one and the flow's workers (Prefect's
        client threads), by native thread id."""
        ticks = os.sysconf("SC_CLK_TCK")
        out = {}
        for thread in threading.enumerate():
            if thread is threading.main_thread() or thread.native_id is None or "ThreadPoolExecutor" in thread.name:
                continue
            try:
                fields = Path(f"/proc/self/task/{thread.native_id}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[thread.native_id] = (int(fields[11]) + int(fields[12])) / ticks
        return out

    def prefect_cpu(self, server_cpu: float) -> dict[str, float]:
        return {"workers (engine - unit)": self.engine - self.plain["workers"],
                "main thread (flow - plain steps)": self.main_cpu - self.plain["main"],
                "Prefect's client threads": self.background, "Prefect server": server_cpu}


def breakdown(experiment: Path, workdir: Path, profile: bool) -> tuple[dict[str, float], dict[str, float]]:
    """Seconds per step of the flow, calling the plain functions in order (cache off), no Prefect."""
    from datetime import datetime, timezone

    import tasks.run.work_units as work_units
    import tasks.selection.select_batch as select_batch
    from tasks.experiment.resolve_experiment import resolve_experiment
    from tasks.report.publish import judge_and_publish
    from tasks.run.prepare_run import prepare_run
    from tasks.run.registration_records import new_run_id, registration_records
    from tasks.run.result_cache import ResultCache
    from tasks.run.work_units import RunContext, plan_units
    from tasks.selectors import registry
    from tasks.selectors.providers.call_budget import RunLedger, ledger_path
    from tasks.taskset.label_checks import check_labels
    from tasks.taskset.load_taskset import load_version, load_weights
    from warehouse.location import warehouse_at
    from warehouse.register_run import register_run

    out: dict[str, float] = {}
    cpu_seconds: dict[str, float] = {}

    def timed(label: str, call: Callable[[], Any]) -> Any:
        started, cpu = time.perf_counter(), time.process_time()
        value = call()
        out[label] = time.perf_counter() - started
        cpu_seconds[label] = time.process_time() - cpu
        return value

    resolved = timed("prepare: resolve experiment", lambda: resolve_experiment(experiment))
    weights = load_weights(resolved.taskset_dir, resolved.spec.weights)
    version = timed("prepare: load version (validate, columnar)", lambda: load_version(resolved.taskset_dir, "v1"))
    catalogues = [arm.catalogue for arm in resolved.arms if arm.catalogue is not None]
    timed("prepare: GE label checks", lambda: check_labels(version, catalogues, weights, None))
    prepared = timed("prepare_run (all of the above)", lambda: prepare_run(experiment))
    units = timed("plan_units", lambda: plan_units(prepared))

    def select_all(warehouse_dir: Path, use_cache: bool, run_id: str) -> RunContext:
        warehouse = warehouse_at(warehouse_dir)
        # as flows/evaluate.py builds it (the run ledger is a file beside the cache, cache on or off)
        cache_path = warehouse.root / "cache" / prepared.instrument.store.cache_file
        ctx = RunContext(run_id=run_id, experiment=prepared.experiment.name, warehouse=warehouse.root,
                         cache_path=cache_path if use_cache else None, ledger_path=ledger_path(cache_path))
        for unit in units:
            select_batch.select_and_land(unit, ctx)
        return ctx

    watch = Stopwatch()
    watch.wrap(select_batch, "plan_batch", "  plan_batch (tools in seed order, labels, cache keys)")
    watch.wrap(select_batch, "build_row", "  build_row (scoring + dict)")
    watch.wrap(select_batch, "to_arrow_table", "  to_arrow_table")
    watch.wrap(work_units, "write_partition", "  write_partition (Parquet + fsync)")
    watch.wrap(ResultCache, "get_many", "  cache get_many")
    watch.wrap(ResultCache, "put_many", "  cache put_many")
    watch.wrap(RunLedger, "__init__", "  run ledger open (SQLite file, WAL)")
    watch.wrap(RunLedger, "close", "  run ledger close (WAL checkpoint)")
    registry.clear_selectors()
    original_selector_for = select_batch.selector_for

    def selector_for(*args: Any, **kwargs: Any) -> Any:
        selector = original_selector_for(*args, **kwargs)
        if not getattr(selector.select, "_timed", False):
            watch.wrap(selector, "select", "  selector.select (BM25 + Selection objects)")
            selector.select._timed = True  # type: ignore[attr-defined]
        return selector

    select_batch.selector_for = selector_for
    warehouse_dir = workdir / "warehouse-breakdown"
    run_id = new_run_id(datetime.now(timezone.utc))
    started_at = datetime.now(timezone.utc)
    profiler = cProfile.Profile() if profile else None
    try:
        if profiler:
            profiler.enable()
        timed("select_and_land, every unit (cache off)", lambda: select_all(warehouse_dir, False, run_id))
        if profiler:
            profiler.disable()
    finally:
        select_batch.selector_for = original_selector_for
        watch.restore()
    out.update(watch.seconds)

    registration = timed("registration_records", lambda: registration_records(prepared, units, run_id, started_at))
    warehouse = warehouse_at(warehouse_dir)
    timed("register_run (DuckDB load)", lambda: register_run(warehouse.root, registration))
    timed("judge_and_publish (views -> md + html)", lambda: judge_and_publish(warehouse, run_id))

    cache_dir = workdir / "warehouse-breakdown-cache"
    for label, tag in (("cache cold fill", "c"), ("cache warm", "w")):
        watch = Stopwatch()
        watch.wrap(ResultCache, "__init__", "  cache open (SQLite file, WAL)")
        watch.wrap(ResultCache, "get_many", "  cache get_many (SELECT + validate_json)")
        watch.wrap(ResultCache, "put_many", "  cache put_many (model_dump_json + INSERT)")
        watch.wrap(ResultCache, "close", "  cache close (WAL checkpoint)")
        registry.clear_selectors()
        try:
            timed(f"select_and_land, every unit ({label})", lambda: select_all(cache_dir, True, run_id + tag))
        finally:
            watch.restore()
        out.update({f"{key} [{label}]": value for key, value in watch.seconds.items()})

    if profiler:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
        print("\ncProfile of select_and_land over every unit (cache off), top 25 by own time:")
        print(text.getvalue())
    return out, cpu_seconds


# --------------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4200, help="requests in the task set (rows = x arms x seeds)")
    parser.add_argument("--arms", type=int, default=4, choices=[1, 2, 3, 4], help="rungs of the support ladder")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=500, help="requests per selection task")
    parser.add_argument("--units-per-arm-seed", type=int, default=None,
                        help="most units an arm x seed is cut into (0: no limit); default: the flow's own")
    parser.add_argument("--task-run-per-unit", action="store_true",
                        help="a Prefect task run per work unit, as with a Dask runner (default with threads: "
                             "flows.evaluate.MAX_WORKERS task runs pull the units)")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--no-breakdown", dest="breakdown", action="store_false")
    parser.add_argument("--profile", action="store_true", help="cProfile the plain select-and-land pass")
    parser.add_argument("--cache-off-only", action="store_true",
                        help="time the cache-off run only (a 1M-row memory measurement need not fill a cache)")
    args = parser.parse_args()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tooleval-flow-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PREFECT_HOME", str(workdir / "prefect-home"))  # a private server DB
    apply_prefect_defaults()

    try:
        run(args, workdir)
    finally:
        if args.keep or args.workdir is not None:
            print(f"\nwork directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def run(args: argparse.Namespace, workdir: Path) -> None:
    print(f"{os.cpu_count()} cores; {load_average()}; PREFECT_HOME={os.environ['PREFECT_HOME']}", flush=True)
    started = time.perf_counter()
    from prefect import flow

    from flows.evaluate import MAX_WORKERS, evaluate
    from synthetic import write_large_taskset
    from tasks.selectors import registry

    if args.units_per_arm_seed is not None:
        import tasks.run.work_units as work_units

        work_units.UNITS_PER_ARM_SEED = args.units_per_arm_seed or 10**9
    if args.task_run_per_unit:
        import flows.evaluate as evaluate_module

        evaluate_module._pulled_units = evaluate_module._task_run_per_unit
    import bm25s  # noqa: F401  (it sets its own logger to DEBUG on import, which Prefect's console prints)
    logging.getLogger("bm25s").setLevel(logging.WARNING)

    print(f"imports (prefect, flows.evaluate): {time.perf_counter() - started:.1f} s", flush=True)

    @flow(name="warm-up")
    def warm_up() -> int:
        return 1

    started = time.perf_counter()
    warm_up()
    print(f"warm-up flow (ephemeral server start): {time.perf_counter() - started:.1f} s", flush=True)
    tiny = write_large_taskset(workdir / "warmup", 60, seed=1, batch_size=args.batch_size, arms=args.arms,
                               seeds=tuple(range(1, args.seeds + 1)))
    started = time.perf_counter()
    evaluate(experiment_path=str(tiny), warehouse_dir=str(workdir / "warehouse-warmup"), use_cache=False)
    print(f"warm-up evaluate on 60 requests (imports GE, bm25s, DuckDB): {time.perf_counter() - started:.1f} s",
          flush=True)

    started = time.perf_counter()
    experiment = write_large_taskset(workdir / "synthetic", args.requests, batch_size=args.batch_size,
                                     arms=args.arms, seeds=tuple(range(1, args.seeds + 1)))
    expected_rows = args.requests * args.arms * args.seeds
    print(f"task set: {args.requests:,} requests x {args.arms} arms x {args.seeds} seeds = {expected_rows:,} rows, "
          f"batch size {args.batch_size}, flow max_workers={MAX_WORKERS}; "
          f"built in {time.perf_counter() - started:.1f} s",
          flush=True)

    runs = [("cache off", workdir / "warehouse-nocache", False),
            ("cache on, cold fill", workdir / "warehouse-cache", True),
            ("cache on, warm", workdir / "warehouse-cache", True)]
    if args.cache_off_only:
        runs = runs[:1]
    print(f"\n{'run':22s} {'rows':>8s} {'units':>6s} {'cache hits':>10s} {'seconds':>8s} {'ms/row':>7s} "
          f"{'<=0.5':>6s} {'CPU s (self+server)':>20s} {'peak RSS this run':>18s} {'ru_maxrss after':>16s}"
          "  load before",
          flush=True)
    flow_cpu: dict[str, float] = {}
    in_run: dict[str, tuple[InRunBookkeeping, float, float]] = {}
    n_units = 0
    for label, warehouse, use_cache in runs:
        registry.clear_selectors()  # a fresh CLI process starts with no selector (no tokenizer/index caches)
        load = load_average()
        reset_peak()
        cpu_before, server_before = time.process_time(), server_cpu_seconds()
        started = time.perf_counter()
        with InRunBookkeeping() as measured:
            summary = evaluate(experiment_path=str(experiment), warehouse_dir=str(warehouse), use_cache=use_cache)
        elapsed = time.perf_counter() - started
        own_cpu, server_cpu = time.process_time() - cpu_before, server_cpu_seconds() - server_before
        in_run[label] = (measured, own_cpu + server_cpu, server_cpu)
        flow_cpu[label] = own_cpu + server_cpu
        cpu = f"{own_cpu:.1f}+{server_cpu:.1f}"
        peak = phase_peak_mib()
        ms = elapsed / summary.n_rows * 1000
        assert summary.n_rows == expected_rows, summary
        n_units = n_units if label != "cache off" else summary.n_units
        print(f"{label:22s} {summary.n_rows:>8,d} {summary.n_units:>6d} {summary.n_cache_hits:>10,d} "
              f"{elapsed:8.2f} {ms:7.3f} {'yes' if ms <= TARGET_MS_PER_ROW else 'NO':>6s} {cpu:>20s} "
              f"{(f'{peak:.0f} MiB' if peak else '?'):>18s} {maxrss_mib():>12.0f} MiB  {load}", flush=True)

    print("\nPrefect's bookkeeping, measured in each run (CPU s; an upper bound, see InRunBookkeeping):")
    for label, (measured, total, server) in in_run.items():
        parts = measured.prefect_cpu(server)
        prefect = sum(parts.values())
        print(f"  {label}: {prefect:.1f} of {total:.1f} CPU s = {prefect / total:.1%}, "
              f"{prefect / max(measured.tasks, 1) * 1000:.0f} ms a task run ({measured.tasks} in workers); "
              + ", ".join(f"{name} {seconds:.1f}" for name, seconds in parts.items()), flush=True)

    print(f"\npeak memory: ru_maxrss of this process {maxrss_mib():.0f} MiB (whole life, warm-ups included). "
          "The Prefect server is a subprocess and is NOT counted in it (RUSAGE_CHILDREN only counts children "
          "that have exited); it stands apart:")
    for pid, command, rss, peak in server_processes():
        print(f"  pid {pid}: {command}  RSS {rss:.0f} MiB, peak {peak:.0f} MiB")
    print(f"({load_average()})", flush=True)

    if args.breakdown:
        print("\nbreakdown: the plain functions the flow calls, in order, no Prefect (one thread):", flush=True)
        parts, cpu_parts = breakdown(experiment, workdir, args.profile)
        print(f"  {'step':62s} {'wall s':>7s}  {'ms/row':>7s}  {'CPU s':>6s}")
        for label, seconds in parts.items():
            cpu = f"{cpu_parts[label]:6.2f}" if label in cpu_parts else ""
            print(f"  {label:62s} {seconds:7.2f}  {seconds / expected_rows * 1000:7.3f}  {cpu}")
        flow_parts = ("prepare_run (all of the above)", "plan_units", "select_and_land, every unit (cache off)",
                      "registration_records", "register_run (DuckDB load)", "judge_and_publish (views -> md + html)")
        total = sum(parts[p] for p in flow_parts)
        plain_cpu = sum(cpu_parts[p] for p in flow_parts)
        print(f"  {'sum of the flow steps (cache off)':62s} {total:7.2f}  {total / expected_rows * 1000:7.3f}  "
              f"{plain_cpu:6.2f}")
        bookkeeping = flow_cpu["cache off"] - plain_cpu
        print(f"  Prefect's bookkeeping, cache off: {flow_cpu['cache off']:.1f} CPU s of the flow (self + server) - "
              f"{plain_cpu:.1f} of the plain steps = {bookkeeping:.1f} s, {bookkeeping / flow_cpu['cache off']:.0%} "
              f"of the run's CPU, {bookkeeping / n_units * 1000:.0f} ms a unit ({n_units} units)")
        print("  (indented lines: parts of the select_and_land pass above; the flow runs that pass in "
              f"{MAX_WORKERS} threads)")
        print(f"({load_average()})")


if __name__ == "__main__":
    main()
