"""The drill's machinery: run ``tooleval`` as a real process (``python -m flows.launch``, what the console
script runs), kill it at a named point, rerun it, and count what the warehouse holds afterwards.

How kills are placed: the environment hook ``TOOLEVAL_DRILL_KILL_AT=POINT[:N]`` (tasks/drill_points.py):
the run sends itself SIGKILL when it reaches the point, which is what ``kill -9`` from outside does, but at
a step that does not depend on the machine's speed (a timed kill on a loaded 2-core machine lands
anywhere). ``TOOLEVAL_DRILL_LOG`` records every point reached, flushed before any kill, so the drill knows
which selector calls had completed and which were in flight.

What is counted after the rerun (``census``):
- rows per (run, arm, seed, request) in DuckDB (``landed_rows``) and in the Parquet files: any count above
  1 is a duplicate; a registered run with fewer rows than planned has lost rows;
- Parquet folders of runs that are not registered (leftovers the rerun should have removed or registered),
  ``.tmp-*`` files, registered runs without their reports;
- calls: for offline selectors one work unit's batch is one call. A unit of the killed run is *in flight*
  when its call started (``unit-selecting``) and its answers were not cached and landed yet; a call is
  *repeated* when the rerun calls a unit again (rows with ``cache_hit = false``) whose call had completed in
  the killed run (``unit-selected``). The bound is repeated <= in flight.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import duckdb

from tests.factories import ROOT
from tests.factories.criteria import criteria_text, gate
from tests.factories.prefect_api import SHARED_SERVER_ENV, shared_prefect_api
from tests.factories.taskset import write_experiment, write_taskset

PHRASES = {
    "refund_order": ["my parcel arrived smashed, I want my money back", "refund me for the broken kettle",
                     "the order never came, give me a refund", "money back please, the item is damaged"],
    "track_shipment": ["where is my parcel right now", "when will the delivery arrive",
                       "track my shipment please", "has my package left the warehouse"],
    "reset_password": ["cannot log in, send a password reset link", "I forgot my password",
                       "reset my account password", "the login page rejects my password"],
    "search_kb": ["what is your return window policy", "do you ship to Canada",
                  "how long is the warranty", "what does the help centre say about exchanges"],
    "none": ["tell me a joke about penguins", "what is the weather like", "sing me a song",
             "who won the football yesterday"],
}


def drill_requests(copies: int = 1) -> list[dict]:
    """Distinct labelled requests over the shop catalogue (5 labels x 4 phrasings x ``copies``)."""
    out = []
    for copy in range(copies):
        for label, phrases in PHRASES.items():
            for number, phrase in enumerate(phrases):
                text = phrase if copy == 0 else f"{phrase} (order {copy}{number})"
                out.append({"id": f"{label[:3]}-{copy}-{number}", "expected": label, "slice": "existing",
                            "messages": [{"role": "user", "content": text}]})
    return out


DRILL_CRITERIA = criteria_text(
    "drill-gates",
    gate("slice-floor", "slice_floor", floors={"existing": 0.0}, arms="all"),
    gate("few-failures", "failure_rate", max_rate=0.5))


@dataclass(frozen=True)
class DrillExperiment:
    path: Path
    n_requests: int
    seeds: int
    arms: int
    batch_size: int

    @property
    def planned_rows(self) -> int:
        return self.n_requests * self.seeds * self.arms

    @property
    def units(self) -> int:
        return -(-self.n_requests // self.batch_size) * self.seeds * self.arms


def drill_experiment(root: Path, copies: int = 2, batch_size: int = 4) -> DrillExperiment:
    """A small offline experiment with registered criteria: 2 lexical arms x 3 seeds x 20*copies requests."""
    requests = drill_requests(copies)
    taskset = write_taskset(root, requests=requests)
    (taskset / "experiments").mkdir(exist_ok=True)
    (taskset / "experiments" / "criteria.yaml").write_text(DRILL_CRITERIA)
    path = write_experiment(taskset, "drill.yaml", name="drill", batch_size=batch_size, criteria="criteria.yaml")
    return DrillExperiment(path, len(requests), seeds=3, arms=2, batch_size=batch_size)


# --------------------------------------------------------------------------------------------------
# running tooleval as a process
# --------------------------------------------------------------------------------------------------



def cli_env(prefect_home: Path | None = None, *, own_server: bool = False, **extra: str) -> dict[str, str]:
    """The user's environment with this checkout first on the path and no leftover drill or warehouse settings.
    Prefect: the test session's shared server (tests/factories/prefect_api.py) when the session offers one
    (``SHARED_SERVER_ENV``) and ``own_server`` is False; else no configured API and no kept server
    (``TOOLEVAL_KEEP_SERVER=0``: each run starts its temporary server, which the drill checks dies with it)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TOOLEVAL_DRILL", "PREFECT_API_URL")) and k != "TOOLEVAL_WAREHOUSE"}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "300")
    env.setdefault("TOOLEVAL_KEEP_SERVER", "0")
    if prefect_home is not None:
        env["PREFECT_HOME"] = str(prefect_home)
    if os.environ.get(SHARED_SERVER_ENV) and not own_server:
        env["PREFECT_API_URL"] = shared_prefect_api()
    env.update(extra)
    return env


def own_env(prefect_home: Path | None = None, **extra: str) -> dict[str, str]:
    """``cli_env`` for a run that starts its own temporary Prefect server (the drill checks it dies with it)."""
    return cli_env(prefect_home, own_server=True, **extra)


@dataclass
class CliResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    children: list[tuple[int, float]] = field(default_factory=list)
    """(pid, create time) of every descendant seen while it ran (the temporary Prefect server among them)."""

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class Running:
    """A ``tooleval`` process started in the background; ``finish()`` waits for it (bounded)."""

    def __init__(self, args: list[str], env: dict[str, str], workdir: Path, name: str) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.args, self.started = list(args), time.monotonic()
        self.out_path, self.err_path = workdir / f"{name}.out", workdir / f"{name}.err"
        self._out, self._err = open(self.out_path, "wb"), open(self.err_path, "wb")
        self.process = subprocess.Popen([sys.executable, "-m", "flows.launch", *args], env=env, cwd=ROOT,
                                        stdin=subprocess.DEVNULL, stdout=self._out, stderr=self._err)
        self.children: dict[int, float] = {}

    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def _note_children(self) -> None:
        import psutil

        try:
            for child in psutil.Process(self.process.pid).children(recursive=True):
                self.children.setdefault(child.pid, child.create_time())
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            pass

    def wait_for(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll (noting children) until ``condition`` holds; fail after ``timeout`` s or if the process ended."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._note_children()
            if condition():
                return
            if self.process.poll() is not None:
                raise AssertionError(f"tooleval ended (exit {self.process.returncode}) before {what}:\n"
                                     f"{self.stderr()[-3000:]}")
            time.sleep(0.1)
        raise AssertionError(f"no {what} within {timeout:.0f} s:\n{self.stderr()[-3000:]}")

    def finish(self, timeout: float = 1200) -> CliResult:
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self._note_children()
            time.sleep(0.1)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"tooleval {' '.join(self.args)} did not end within {timeout:.0f} s")
        self._out.close()
        self._err.close()
        return CliResult(self.args, self.process.returncode, self.out_path.read_text(errors="replace"),
                         self.stderr(), time.monotonic() - self.started, sorted(self.children.items()))


def tooleval(args: list[str], env: dict[str, str], workdir: Path, name: str, timeout: float = 1200) -> CliResult:
    return Running(args, env, workdir, name).finish(timeout)


def orphans(result: CliResult, timeout: float = 60) -> list[int]:
    """Descendants of a finished ``tooleval`` still alive after ``timeout`` s (each is then killed, so a
    drill never leaves one behind). The temporary server must die with its parent, even a kill -9'd one."""
    import psutil

    deadline = time.monotonic() + timeout
    alive: list[psutil.Process] = []
    while True:
        alive = []
        for pid, created in result.children:
            try:
                process = psutil.Process(pid)
                if process.create_time() == created and process.status() != psutil.STATUS_ZOMBIE:
                    alive.append(process)
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    return [p.pid for p in alive]


# --------------------------------------------------------------------------------------------------
# what the warehouse holds
# --------------------------------------------------------------------------------------------------


@dataclass
class Census:
    registered: dict[str, int]
    """run id -> rows in DuckDB."""
    duplicated_duckdb: int
    parquet_rows: dict[str, int]
    """run id -> rows in Parquet files."""
    duplicated_parquet: int
    unregistered_parquet_runs: list[str]
    temporary_files: int
    unreported_runs: list[str]
    fresh_units: dict[str, set[str]]
    """run id -> work units ('arm/seed=S/batch=B') with at least one row selected afresh (no cache hit)."""
    cache_hits: dict[str, int]


def census(warehouse: Path) -> Census:
    rows_dir = warehouse / "rows"
    registered: dict[str, int] = {}
    dup_db = 0
    if (warehouse / "tooleval.duckdb").is_file():
        con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
        try:
            registered = dict(con.execute("SELECT run_id, count(*) FROM landed_rows GROUP BY run_id").fetchall())
            for run_id in (r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()):
                registered.setdefault(run_id, 0)
            dup_db = con.execute("""SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM landed_rows
                                    GROUP BY run_id, arm, seed, request_id)""").fetchall()[0][0]
        finally:
            con.close()
    parquet_rows: dict[str, int] = {}
    keys: Counter = Counter()
    fresh: dict[str, set[str]] = {}
    hits: Counter = Counter()
    files = sorted(rows_dir.glob("run_id=*/arm=*/seed=*/part-*.parquet")) if rows_dir.is_dir() else []
    if files:
        con = duckdb.connect()
        try:
            for run_id, arm, seed, request_id, cache_hit, filename in con.execute(
                    "SELECT run_id, arm, seed, request_id, cache_hit, filename FROM read_parquet(?, filename = true)",
                    [[str(f) for f in files]]).fetchall():
                parquet_rows[run_id] = parquet_rows.get(run_id, 0) + 1
                keys[(run_id, arm, seed, request_id)] += 1
                hits[run_id] += bool(cache_hit)
                if not cache_hit:
                    batch = int(Path(filename).stem.removeprefix("part-"))
                    fresh.setdefault(run_id, set()).add(f"{arm}/seed={seed}/batch={batch}")
        finally:
            con.close()
    runs_on_disk = {p.name.removeprefix("run_id=") for p in rows_dir.glob("run_id=*")} if rows_dir.is_dir() else set()
    unreported = [r for r in registered if not ((warehouse / "reports" / r / "report.md").is_file()
                                                and (warehouse / "reports" / r / "report.html").is_file())]
    return Census(registered=registered, duplicated_duckdb=int(dup_db), parquet_rows=parquet_rows,
                  duplicated_parquet=sum(n - 1 for n in keys.values() if n > 1),
                  unregistered_parquet_runs=sorted(runs_on_disk - set(registered)),
                  temporary_files=len(list(rows_dir.rglob(".tmp-*"))) if rows_dir.is_dir() else 0,
                  unreported_runs=sorted(unreported), fresh_units=fresh, cache_hits=dict(hits))


def points_log(path: Path) -> list[tuple[str, str]]:
    if not path.is_file():
        return []
    return [tuple(line.split("\t", 1)) for line in path.read_text().splitlines() if "\t" in line]  # type: ignore


def run_id_of(result: CliResult) -> str | None:
    for line in result.stdout.splitlines():
        if line.startswith("run ") and ":" in line:
            return line.split()[1].rstrip(":")
    return None


# --------------------------------------------------------------------------------------------------
# kill -9 at a point, then rerun
# --------------------------------------------------------------------------------------------------

KILL_POINTS = ("label-checks", "server-started", "unit-selecting:1", "unit-selected:1", "unit-landed:7",
               "all-landed", "records-saved", "registration-uncommitted", "registered", "report-verdict-saved",
               "published")
"""Where the full drill kills a run (POINT:N = the N-th time a run reaches POINT)."""

FINISHED = (0, 1)
"""A run that completed: every gate passed (0) or one failed (1). The drill's criteria pass."""


@dataclass
class KillOutcome:
    point: str
    killed_exit: int
    rerun_exit: int
    rerun_seconds: float
    planned_rows: int
    registered_runs: int
    rows_lost: int
    duplicated_duckdb: int
    duplicated_parquet: int
    leftover_parquet_runs: int
    temporary_files: int
    unreported_runs: int
    calls_in_killed_run: int
    calls_in_flight: int
    calls_repeated: int
    orphaned_processes: int
    traceback_shown: bool
    rerun_said: list[str]
    problems: list[str] = field(default_factory=list)

    @property
    def resumed(self) -> bool:
        return not self.problems


def kill_and_resume(point: str, experiment: DrillExperiment, workdir: Path, prefect_home: Path) -> KillOutcome:
    """Kill a run at ``point``, rerun the same command, and count (a fresh warehouse per point)."""
    name = point.replace(":", "-")
    warehouse = workdir / f"wh-{name}"
    log = workdir / f"{name}.points"
    args = ["run", str(experiment.path), "--warehouse", str(warehouse)]
    killed = tooleval(args, own_env(prefect_home, TOOLEVAL_DRILL_KILL_AT=point, TOOLEVAL_DRILL_LOG=str(log)),
                      workdir, f"{name}-killed")
    orphaned = orphans(killed)
    reached = points_log(log)
    selected = {detail for p, detail in reached if p == "unit-selected"}
    started = {detail for p, detail in reached if p == "unit-selecting"}
    landed = {detail for p, detail in reached if p == "unit-landed"}

    rerun = tooleval(args, own_env(prefect_home), workdir, f"{name}-rerun")
    orphaned += orphans(rerun)
    after = census(warehouse)
    rerun_id = run_id_of(rerun)

    problems = []
    if killed.returncode != -signal.SIGKILL:
        problems.append(f"the run was not killed at {point} (exit {killed.returncode})")
    if rerun.returncode not in FINISHED:
        problems.append(f"the rerun ended with exit {rerun.returncode}: {rerun.stderr[-2000:]}")
    lost = sum(max(0, experiment.planned_rows - n) for n in after.registered.values())
    if rerun_id not in after.registered:
        problems.append("the rerun is not registered")
        lost += experiment.planned_rows
    repeated = selected & after.fresh_units.get(rerun_id or "", set())
    in_flight = started - landed
    checks = {"rows lost": lost, "duplicated rows in DuckDB": after.duplicated_duckdb,
              "duplicated rows in Parquet": after.duplicated_parquet,
              "Parquet runs left unregistered": len(after.unregistered_parquet_runs),
              "registered runs without reports": len(after.unreported_runs),
              "processes outliving tooleval": len(orphaned)}
    problems += [f"{what}: {n}" for what, n in checks.items() if n]
    if len(repeated) > len(in_flight):
        problems.append(f"{len(repeated)} completed calls repeated, more than the {len(in_flight)} in flight")
    shown = any(word in text for word in ("Traceback", "CancelledError") for text in (killed.output, rerun.output))
    if shown:
        problems.append("a traceback reached the terminal")
    return KillOutcome(
        point=point, killed_exit=killed.returncode, rerun_exit=rerun.returncode, rerun_seconds=rerun.seconds,
        planned_rows=experiment.planned_rows, registered_runs=len(after.registered), rows_lost=lost,
        duplicated_duckdb=after.duplicated_duckdb, duplicated_parquet=after.duplicated_parquet,
        leftover_parquet_runs=len(after.unregistered_parquet_runs), temporary_files=after.temporary_files,
        unreported_runs=len(after.unreported_runs), calls_in_killed_run=len(selected),
        calls_in_flight=len(in_flight), calls_repeated=len(repeated), orphaned_processes=len(orphaned),
        traceback_shown=shown,
        rerun_said=[line for line in rerun.output.splitlines() if line.startswith(("leftovers:", "also registered"))],
        problems=problems)


# --------------------------------------------------------------------------------------------------
# readers and a second writer
# --------------------------------------------------------------------------------------------------

HOLDER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == "ro")
print("held", flush=True)
sys.stdin.readline()  # hold until told (or until the drill's end closes the pipe)
con.close()
"""


class Holder:
    """Another process with the DuckDB file open (read-only, or read-write as a second writer would)."""

    def __init__(self, db_path: Path, read_only: bool) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", HOLDER, str(db_path), "ro" if read_only else "rw"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline().strip()
        if line != "held":
            self.release()
            raise AssertionError(f"the holder could not open {db_path}")

    def release(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.write("\n")
                self.process.stdin.flush()
            except BrokenPipeError:
                pass
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> "Holder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@dataclass
class SharedOutcome:
    case: str
    exits: list[int]
    registered_runs: int
    rows_lost: int
    duplicated: int
    waited_message: bool
    traceback_shown: bool
    problems: list[str] = field(default_factory=list)


WAITING = "waiting up to"


def _check_shared(case: str, warehouse: Path, experiment: DrillExperiment, results: list[CliResult],
                  expected_runs: set[str], waited: bool) -> SharedOutcome:
    after = census(warehouse)
    problems = []
    lost = sum(max(0, experiment.planned_rows - after.registered.get(r, 0)) for r in expected_runs)
    missing = sorted(expected_runs - set(after.registered))
    if missing:
        problems.append(f"runs not registered: {missing}")
    if lost:
        problems.append(f"rows lost: {lost}")
    duplicated = after.duplicated_duckdb + after.duplicated_parquet
    if duplicated:
        problems.append(f"duplicated rows: {duplicated}")
    shown = any("Traceback" in r.output for r in results)
    if shown:
        problems.append("a traceback reached the terminal")
    for result in results:
        problems += [f"process {pid} outlived tooleval" for pid in orphans(result)]
    return SharedOutcome(case, [r.returncode for r in results], len(after.registered), lost, duplicated, waited,
                         shown, problems)


def run_while_held(experiment: DrillExperiment, warehouse: Path, workdir: Path, prefect_home: Path,
                   read_only: bool) -> SharedOutcome:
    """Another process holds the file while a run registers; it lets go once the run says it waits: the
    run registers and completes (its own exit code, not a lock traceback)."""
    case = f"run while a {'read-only' if read_only else 'read-write'} connection is held"
    before = set(census(warehouse).registered)
    with Holder(warehouse / "tooleval.duckdb", read_only) as holder:
        running = Running(["run", str(experiment.path), "--warehouse", str(warehouse)],
                          own_env(prefect_home, TOOLEVAL_LOCK_WAIT_S="900"), workdir,
                          f"held-{'ro' if read_only else 'rw'}")
        running.wait_for(lambda: WAITING in running.stderr(), 1200, "message that the run waits for the file")
        holder.release()
        result = running.finish()
    outcome = _check_shared(case, warehouse, experiment, [result], before | {run_id_of(result) or "?"}, True)
    if result.returncode not in FINISHED:
        outcome.problems.append(f"exit {result.returncode}: {result.stderr[-1500:]}")
    return outcome


def run_past_the_wait(experiment: DrillExperiment, warehouse: Path, workdir: Path, prefect_home: Path) -> SharedOutcome:
    """The file stays held past the bounded wait: exit 5 and ``tooleval register RUN_ID`` then registers the
    run without selecting again."""
    before = set(census(warehouse).registered)
    with Holder(warehouse / "tooleval.duckdb", read_only=True):
        held = tooleval(["run", str(experiment.path), "--warehouse", str(warehouse)],
                        own_env(prefect_home, TOOLEVAL_LOCK_WAIT_S="2"), workdir, "held-past-wait")
    problems = []
    if held.returncode != 5 or "tooleval register " not in held.stderr:
        problems.append(f"expected exit 5 and the register command, got exit {held.returncode}: {held.stderr[-1500:]}")
        run_id = "?"
    else:
        run_id = held.stderr.split("tooleval register ")[1].split()[0]
    registered = tooleval(["register", run_id, "--warehouse", str(warehouse)], own_env(prefect_home), workdir,
                          "register-late")
    if registered.returncode not in FINISHED:
        problems.append(f"tooleval register ended with exit {registered.returncode}: {registered.stderr[-1500:]}")
    outcome = _check_shared("run held past the wait, then `tooleval register`", warehouse, experiment,
                            [held, registered], before | {run_id}, WAITING in held.stderr)
    outcome.problems += problems
    return outcome


def report_while_written(warehouse: Path, workdir: Path, prefect_home: Path) -> SharedOutcome:
    """``tooleval report`` while another process writes the file: it waits, then prints the report.

    The reports' kept copies are removed first: with a copy kept for the file's current state the report
    answers from it at once without opening the file (tasks/report/stored_report.py), and the case is the
    report that has to read the file."""
    from tasks.report.stored_report import LATEST_FILE, STORED_FILE

    for kept in [*(warehouse / "reports").glob(f"*/{STORED_FILE}"), warehouse / "reports" / LATEST_FILE]:
        kept.unlink(missing_ok=True)
    with Holder(warehouse / "tooleval.duckdb", read_only=False) as holder:
        running = Running(["report", "--warehouse", str(warehouse)], own_env(prefect_home, TOOLEVAL_LOCK_WAIT_S="900"),
                          workdir, "report-held")
        running.wait_for(lambda: WAITING in running.stderr(), 600, "message that the report waits for the file")
        holder.release()
        result = running.finish()
    problems = [] if result.returncode == 0 and "VERDICT" in result.stdout else [
        f"report ended with exit {result.returncode}: {result.stderr[-1500:]}"]
    shown = "Traceback" in result.output
    return SharedOutcome("report while another process writes", [result.returncode], 0, 0, 0, True, shown,
                         problems + (["a traceback reached the terminal"] if shown else []))


def concurrent_runs(experiment: DrillExperiment, warehouse: Path, workdir: Path, prefect_home: Path,
                    n: int = 2) -> SharedOutcome:
    """``n`` runs of the same experiment into one warehouse at once: every one lands and registers."""
    before = set(census(warehouse).registered)
    running = [Running(["run", str(experiment.path), "--warehouse", str(warehouse)],
                       own_env(prefect_home, TOOLEVAL_LOCK_WAIT_S="900"), workdir, f"concurrent-{i}")
               for i in range(n)]
    results = [r.finish() for r in running]
    outcome = _check_shared(f"{n} runs into one warehouse at once", warehouse, experiment, results,
                            before | {run_id_of(r) or f"?{i}" for i, r in enumerate(results)}, False)
    outcome.problems += [f"run {i} exit {r.returncode}: {r.stderr[-1500:]}" for i, r in enumerate(results)
                         if r.returncode not in FINISHED]
    return outcome


def as_json(outcomes: list) -> str:
    from dataclasses import asdict

    return json.dumps([asdict(o) for o in outcomes], indent=2)


# --------------------------------------------------------------------------------------------------
# the Prefect API goes away during a run
# --------------------------------------------------------------------------------------------------


@dataclass
class LostApiOutcome:
    exit_code: int
    seconds_after_loss: float
    message: str
    rerun_exit: int
    rows_lost: int
    duplicated: int
    traceback_shown: bool
    problems: list[str] = field(default_factory=list)


def lose_the_api(experiment: DrillExperiment, workdir: Path, prefect_home: Path, at: str = "unit-landed") -> LostApiOutcome:
    """Kill the run's temporary Prefect server once the run reaches ``at``: the run must end on its own with
    exit 6 and one message (not a minute of client retries and a traceback); the rerun resumes."""
    import psutil

    warehouse, log = workdir / "wh-lost-api", workdir / "lost-api.points"
    args = ["run", str(experiment.path), "--warehouse", str(warehouse)]
    running = Running(args, own_env(prefect_home, TOOLEVAL_DRILL_LOG=str(log)), workdir, "lost-api")
    running.wait_for(lambda: any(p == at for p, _ in points_log(log)), 1200, f"the run reaching {at}")
    servers = [c for c in psutil.Process(running.process.pid).children(recursive=True)
               if "uvicorn" in " ".join(c.cmdline())]
    lost_at = time.monotonic()
    for server in servers:
        server.kill()
    result = running.finish()
    seconds = time.monotonic() - lost_at
    rerun = tooleval(args, own_env(prefect_home), workdir, "lost-api-rerun")
    after = census(warehouse)
    lost = sum(max(0, experiment.planned_rows - n) for n in after.registered.values())
    problems = []
    if not servers:
        problems.append("no temporary server found to kill")
    if result.returncode != 6 or "Prefect server exited" not in result.stderr:
        problems.append(f"expected exit 6 saying the server exited, got {result.returncode}: {result.stderr[-1500:]}")
    if rerun.returncode not in FINISHED or run_id_of(rerun) not in after.registered:
        problems.append(f"the rerun did not complete (exit {rerun.returncode}): {rerun.stderr[-1500:]}")
    duplicated = after.duplicated_duckdb + after.duplicated_parquet
    shown = "Traceback" in result.output or "Traceback" in rerun.output
    problems += [f"{what}: {n}" for what, n in (("rows lost", lost), ("duplicated rows", duplicated)) if n]
    problems += ["a traceback reached the terminal"] if shown else []
    problems += [f"process {pid} outlived tooleval" for pid in orphans(result) + orphans(rerun)]
    message = next((line for line in result.stderr.splitlines() if line.startswith("tooleval: failed")), "")
    return LostApiOutcome(result.returncode, seconds, message, rerun.returncode, lost, duplicated, shown, problems)


# --------------------------------------------------------------------------------------------------
# the warehouse made immutable mid-run
# --------------------------------------------------------------------------------------------------


@dataclass
class FrozenOutcome:
    exit_code: int
    message: list[str]
    rerun_exit: int
    rows_lost: int
    duplicated: int
    problems: list[str] = field(default_factory=list)


def can_freeze(folder: Path) -> bool:
    """Root with ``chattr`` on a file system that has the immutable attribute."""
    probe = folder / ".freeze-probe"
    probe.write_text("x")
    try:
        return subprocess.run(["chattr", "+i", str(probe)], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False
    finally:
        subprocess.run(["chattr", "-i", str(probe)], capture_output=True)
        probe.unlink()


def freeze_the_warehouse(experiment: DrillExperiment, workdir: Path, prefect_home: Path,
                         at: str = "unit-landed:3") -> FrozenOutcome:
    """``chattr -R +i`` the warehouse once the run reaches ``at`` (a frozen warehouse once killed a run with
    SIGBUS, exit -7, and no message): the run must stop at the first refused write, as on a full disk (no unit
    retried or started after it), end with exit 6 and a message that the warehouse stopped accepting writes, no
    traceback on the terminal; once writable again, the rerun completes with nothing lost or duplicated."""
    warehouse, log = workdir / "wh-frozen", workdir / "frozen.points"
    args = ["run", str(experiment.path), "--warehouse", str(warehouse)]
    running = Running(args, own_env(prefect_home, TOOLEVAL_DRILL_LOG=str(log)), workdir, "frozen")
    try:
        point, _, nth = at.partition(":")
        running.wait_for(lambda: sum(p == point for p, _ in points_log(log)) >= int(nth or 1), 1200,
                         f"the run reaching {at}")
        subprocess.run(["chattr", "-R", "+i", str(warehouse)], check=True)
        result = running.finish()
    finally:
        subprocess.run(["chattr", "-R", "-i", str(warehouse)], capture_output=True)
    rerun = tooleval(args, own_env(prefect_home), workdir, "frozen-rerun")
    after = census(warehouse)
    lost = sum(max(0, experiment.planned_rows - n) for n in after.registered.values())
    duplicated = after.duplicated_duckdb + after.duplicated_parquet
    problems = []
    if result.returncode != 6 or "the warehouse stopped accepting writes" not in result.stderr:
        problems.append(f"expected exit 6 saying the warehouse stopped accepting writes, got {result.returncode}: "
                        f"{result.stderr[-1500:]}")
    if "Traceback" in result.output:
        problems.append("a traceback reached the terminal")
    if rerun.returncode not in FINISHED or run_id_of(rerun) not in after.registered:
        problems.append(f"the rerun did not complete (exit {rerun.returncode}): {rerun.stderr[-1500:]}")
    problems += [f"{what}: {n}" for what, n in (("rows lost", lost), ("duplicated rows", duplicated)) if n]
    problems += [f"process {pid} outlived tooleval" for pid in orphans(result) + orphans(rerun)]
    if (starts := sum(p == "unit-selecting" for p, _ in points_log(log))) >= experiment.units:
        problems.append(f"units kept starting after the first refused write ({starts} starts of {experiment.units} "
                        "units): a refused write stops the run, as a full disk does")
    message = [line for line in result.stderr.splitlines() if line.startswith(("tooleval: failed", "the warehouse"))]
    return FrozenOutcome(result.returncode, message, rerun.returncode, lost, duplicated, problems)


# --------------------------------------------------------------------------------------------------
# a hosted selector killed between calls: each answer is cached as it completes
# --------------------------------------------------------------------------------------------------

HOSTED_MODEL = "gpt-4.1-mini-2025-04-14"
FAKE_KEY = "sk-tooleval-drill-FAKE-not-a-key"


def hosted_experiment(experiment: DrillExperiment, concurrency: int = 2) -> DrillExperiment:
    """The drill's task set read by one OpenAI arm (sent to the loopback provider server)."""
    taskset = experiment.path.parent.parent
    path = write_experiment(taskset, "hosted.yaml", name="drill-hosted", batch_size=8, arms=[{
        "name": "gpt", "selector": "openai", "model": HOSTED_MODEL,
        "options": {"concurrency": concurrency, "timeout_s": 60, "retry_base_delay_s": 0.01, "retry_max_delay_s": 0.05}}])
    return DrillExperiment(path, experiment.n_requests, experiment.seeds, arms=1, batch_size=8)


@dataclass
class HostedKillOutcome:
    killed_after_calls: int
    calls_cached_at_kill: int
    calls_in_flight: int
    calls_repeated: int
    rerun_calls: int
    rerun_exit: int
    rows_lost: int
    duplicated: int
    problems: list[str] = field(default_factory=list)


def hosted_kill_and_resume(experiment: DrillExperiment, workdir: Path, prefect_home: Path,
                           kill_at_call: int = 30) -> HostedKillOutcome:
    """kill -9 from outside when the provider receives its ``kill_at_call``-th request (a point fixed by the
    count of calls, not by time), then rerun against the same provider: the calls made again are at most the
    calls that were in flight (sent, answer not cached yet)."""
    import sqlite3
    import threading

    from tests.provider_server import ProviderServer, oracle

    hosted = hosted_experiment(experiment)
    expected = {phrase if copy == 0 else f"{phrase} (order {copy}{number})": label
                for copy in range(hosted.n_requests // 20) for label, phrases in PHRASES.items()
                for number, phrase in enumerate(phrases)}
    answer = oracle(expected)
    state = {"pid": None, "count": 0}
    lock = threading.Lock()

    def script(seen):
        with lock:
            state["count"] += 1
            if state["count"] == kill_at_call and state["pid"]:
                os.kill(state["pid"], signal.SIGKILL)
        return answer(seen)

    warehouse = workdir / "wh-hosted"
    args = ["run", str(hosted.path), "--warehouse", str(warehouse)]
    env = own_env(prefect_home, OPENAI_API_KEY=FAKE_KEY)
    with ProviderServer(script, api_key=FAKE_KEY) as server:
        env["OPENAI_BASE_URL"] = server.openai_url
        running = Running(args, env, workdir, "hosted-killed")
        state["pid"] = running.process.pid
        killed = running.finish()
        orphaned = orphans(killed)
        before = list(server.requests())
        with sqlite3.connect(str(warehouse / "cache" / "selections.sqlite")) as cache:
            cached = cache.execute("SELECT count(*) FROM selections").fetchall()[0][0]
        state["pid"] = None
        rerun = tooleval(args, env, workdir, "hosted-rerun")
        orphaned += orphans(rerun)
        after_requests = list(server.requests())[len(before):]
    keys_before = Counter((s.user_text, s.tools) for s in before)
    keys_rerun = Counter((s.user_text, s.tools) for s in after_requests)
    repeated = sum(min(keys_before[k], keys_rerun[k]) for k in keys_rerun)
    in_flight = len(before) - cached
    after = census(warehouse)
    lost = sum(max(0, hosted.planned_rows - n) for n in after.registered.values())
    duplicated = after.duplicated_duckdb + after.duplicated_parquet
    problems = []
    if killed.returncode != -signal.SIGKILL:
        problems.append(f"the run was not killed (exit {killed.returncode}): {killed.stderr[-1500:]}")
    if rerun.returncode not in FINISHED or run_id_of(rerun) not in after.registered:
        problems.append(f"the rerun did not complete (exit {rerun.returncode}): {rerun.stderr[-1500:]}")
    if repeated > in_flight:
        problems.append(f"{repeated} calls repeated, more than the {in_flight} in flight")
    if len(after_requests) != hosted.planned_rows - cached:
        problems.append(f"the rerun made {len(after_requests)} calls, expected {hosted.planned_rows - cached}")
    problems += [f"{what}: {n}" for what, n in (("rows lost", lost), ("duplicated rows", duplicated),
                                                 ("processes outliving tooleval", len(orphaned))) if n]
    if any("Traceback" in r.output for r in (killed, rerun)):
        problems.append("a traceback reached the terminal")
    return HostedKillOutcome(len(before), cached, in_flight, repeated, len(after_requests), rerun.returncode, lost,
                             duplicated, problems)
