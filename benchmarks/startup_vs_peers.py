"""Start-up against peers: a 1,620-row offline ``tooleval run`` beside promptfoo (and Inspect AI) on the same work.

    python benchmarks/startup_vs_peers.py [--runs 5] [--sizes 1620,16200] [--only tooleval|promptfoo|inspect]
        [--with-inspect [SIZES]] [--tooleval-checkout DIR] [--before-checkout DIR] [--tooleval-cmd CMD]
        [--no-warmup] [--isolate-network] [--cache-dir DIR] [--import-breakdown] [--keep]

The work, the same for every tool: the support task set's 540 requests (tasksets/support/v1.jsonl) x 3
repeats = 1,620 evaluations (``--sizes``: any multiple of 540; 16,200 = 540 x 30 repeats: tooleval seeds
1-30, promptfoo ``--repeat 30``, Inspect ``--epochs 30``), one arm (the 30-tool ``giftcards`` catalogue, the default prompt), an instant
offline selector and a tool-name check per row.

- tooleval: ``tooleval run benchmarks/peers/one_arm.yaml --no-cache --warehouse <fresh temporary dir>``
  (lexical BM25 router, seeds [1, 2, 3], no criteria file, no weights). Run as ``<python> -m flows.launch`` (the console script's entry point)
  with PYTHONPATH and the working directory set to the checkout being measured: by default the checkout
  this script is in (its .venv's python if it has one, else the python running this script);
  ``--tooleval-checkout DIR`` measures another checkout, ``--tooleval-cmd CMD`` replaces the command
  (e.g. ``"/work/main/.venv/bin/tooleval"``); the experiment path and the flags above are appended.
  Prefect runs as it would for a user: with no PREFECT_API_URL in the environment the first run starts the
  server kept between runs (flows/prefect_server.py) and later runs use it, or with TOOLEVAL_KEEP_SERVER=0
  each run starts a temporary server (the header says which); PREFECT_HOME is the user's. A run that used the
  kept server starts a warm runner (flows/warm_runner.py) at its end, and later runs start warm, in its child
  (unless TOOLEVAL_WARM_RUN=0): each run is shown warm or cold, the runs counted say how many were warm, and
  a warm run's CPU and RSS include its child's. The kept
  server's CPU during each run (its process and any children, from ``tooleval-server/server.json``) is
  added to tooleval's CPU and shown as its server's (its RSS is the server's, outside the tree). So is a
  server PREFECT_API_URL names (``prefect server start --background``: its pid in
  ``$PREFECT_HOME/server.pid``, or ``--server-pid PID``).
- promptfoo 0.121.20 (the newest that runs on Node 20), installed with npm into the cache folder only when
  missing: ``promptfoo eval -c promptfooconfig.json --repeat 3 --no-cache`` with a config generated from
  the same requests (benchmarks/peers/work.py: system prompt + conversation, the 30 tools offered to the
  provider, one test per request), the in-process JavaScript provider benchmarks/peers/instant_provider.js
  (an OpenAI-style tool call to the expected tool at once; it reads the 30 tools from a file, which keeps
  promptfoo from copying and masking their schemas into every stored result) and a javascript assertion
  on the tool name. Offline: telemetry, update checks, sharing and the debug log file off, cache off,
  results written to a fresh SQLite database per run (PROMPTFOO_CONFIG_DIR in a temporary folder), as
  tooleval writes a fresh warehouse.
  ``--isolate-network`` runs every tool in a new network namespace with only loopback (root only), which
  shows that none of them needs the network.
- Inspect AI 0.3.285 (``--with-inspect``), pip-installed into its own venv in the cache folder when missing:
  benchmarks/peers/inspect_task.py, the same samples x 3 epochs, an in-process instant model that answers
  with a tool call to the expected tool and reports its token usage (so nothing reaches for tiktoken).

``--before-checkout DIR`` adds a column ``tooleval-before``: the same tooleval command from another checkout
(e.g. main, to measure a change), interleaved with the rest. ``--with-inspect`` alone adds Inspect at every
size; ``--with-inspect 1620`` only at the sizes named (Inspect AI at 16,200 takes minutes a run).

The tools run interleaved (tooleval, promptfoo[, inspect], tooleval, ...) ``--runs`` times per size, the
sizes one after the other, after one untimed warm-up round at the first size (page cache, Prefect's database, npm's module cache; ``--no-warmup`` skips it). Per
run: wall time; CPU seconds of the child's whole process tree, tooleval's temporary Prefect server included (user + sys: getrusage(RUSAGE_CHILDREN) deltas, or
the sum over the tree sampled from /proc when larger: a grandchild that is not waited for escapes rusage);
peak RSS of the whole tree (sum of VmRSS over the tree, sampled every 0.1 s; tooleval's Prefect server
is in its tree) and of its largest process; for tooleval the Prefect server's own CPU seconds and peak RSS;
time to the first and last output lines (Python children run with PYTHONUNBUFFERED=1, else a pipe holds
their lines until exit) and, for tooleval, to the spawn of Prefect's temporary server
process (what comes before it: interpreter, imports, preparation, label checks); the 1-minute load
average at its start. Every run is checked to have done 1,620
evaluations: tooleval's ``run ...: 1,620 rows`` line, promptfoo's ``1,620 passed`` summary and the rows in
its results database, Inspect's printed sample count. A run that exits non-zero or fails the check is
not counted: the benchmark says so, keeps its output and files, goes on, and exits 1 at the end.
The import breakdown's run is cold (TOOLEVAL_WARM_RUN=0). A timed tooleval run that started a new kept server instead of using the one kept (the pid in
``server.json`` changed across it) is flagged RESTARTED, and the end says how many were: its figures
include a server start.

Prints one table per size: tool, wall min / median, CPU s (median), peak RSS tree / largest process (max),
time to the first output line (median), the load at the runs' starts; the ratios tooleval / promptfoo and
tooleval / Inspect per size (wall min and median, CPU, peak RSS of the tree; below 1 is tooleval faster or
smaller) and tooleval's Prefect server share; then the load average before and after, the
start-up target's verdict (tooleval's min wall <= promptfoo's) and tooleval's breakdown; with
``--import-breakdown`` also one untimed tooleval run under ``python -X importtime`` (seconds per package).
Not part of any test suite; nothing here runs in CI (the npm and pip installs happen only when this script
is run, and never with CI set).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "benchmarks" / "peers"
sys.path.insert(0, str(PEERS))

import work  # noqa: E402  (benchmarks/peers/work.py: the requests and tools, read from the task-set files)

EXPERIMENT = PEERS / "one_arm.yaml"
REQUESTS = 540
EXPECTED_ROWS = REQUESTS * work.SEEDS
PROMPTFOO_VERSION = "0.121.20"
INSPECT_VERSION = "0.3.285"
SAMPLE_SECONDS = 0.1
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
TOOLS = ("tooleval", "promptfoo", "inspect")
BEFORE = "tooleval-before"
PROJECT_PACKAGES = {"flows", "tasks", "schemas", "warehouse", "benchmarks"}


def default_cache_dir() -> Path:
    base = os.environ.get("TOOLEVAL_PEERS_CACHE")
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tooleval-peers"


# --------------------------------------------------------------------------------------------------
# Process-tree sampling
# --------------------------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                found.extend(int(child) for child in handle.read().split())
        except OSError:
            continue
    return found


def _tree(root: int) -> list[int]:
    pids, stack = [], [root]
    while stack:
        pid = stack.pop()
        pids.append(pid)
        stack.extend(_children(pid))
    return pids


def _cpu_and_rss(pid: int) -> tuple[float, float] | None:
    """(user + sys seconds so far, resident KiB) of one process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/statm") as handle:
            rss_pages = int(handle.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS, rss_pages * PAGE_KIB


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


class TreeSampler(threading.Thread):
    """Samples a process tree until stopped: peak summed RSS, per-process peak RSS and CPU, first child."""

    def __init__(self, root: int, started: float, marker: str | None = None, runner: int | None = None) -> None:
        super().__init__(daemon=True)
        self.root, self.started, self.runner = root, started, runner  # runner: its children are the run's too
        self.marker = re.compile(marker) if marker else None  # the child process whose start is timed
        self.stop_event = threading.Event()
        self.peak_tree_kib = 0.0
        self.peak_process_kib: dict[int, float] = {}
        self.cpu_seconds: dict[int, float] = {}
        self.marked_child: tuple[float, str] | None = None
        self.marked_pid: int | None = None
        self.marked_last_seen: float | None = None
        self.seen: set[int] = set()
        self.max_processes = 0

    def sample(self) -> None:
        pids = _tree(self.root) + [pid for child in (_children(self.runner) if self.runner else []) for pid in _tree(child)]
        total = 0.0
        for pid in pids:
            reading = _cpu_and_rss(pid)
            if reading is None:
                continue
            cpu, rss = reading
            total += rss
            self.cpu_seconds[pid] = max(cpu, self.cpu_seconds.get(pid, 0.0))
            self.peak_process_kib[pid] = max(rss, self.peak_process_kib.get(pid, 0.0))
            if self.marker and self.marked_child is None and pid != self.root and pid not in self.seen:
                self.seen.add(pid)
                command = _cmdline(pid)
                if self.marker.search(command):
                    self.marked_child = (time.perf_counter() - self.started, command[:120])
                    self.marked_pid = pid
            if pid == self.marked_pid:
                self.marked_last_seen = time.perf_counter() - self.started
        self.peak_tree_kib = max(self.peak_tree_kib, total)
        self.max_processes = max(self.max_processes, len(pids))

    def run(self) -> None:
        while not self.stop_event.is_set():
            self.sample()
            self.stop_event.wait(SAMPLE_SECONDS)


# --------------------------------------------------------------------------------------------------
# One timed run
# --------------------------------------------------------------------------------------------------


@dataclass
class Measured:
    tool: str
    wall: float
    cpu: float
    cpu_rusage: float
    cpu_sampled: float
    peak_tree_mib: float
    peak_process_mib: float
    marked_child: float | None
    marked_child_cmd: str
    marked_child_gone: float | None
    first_output: float | None
    last_output: float | None
    load_at_start: float
    evaluations: int
    processes: int
    server_cpu: float | None = None
    """tooleval's temporary Prefect server: its own CPU seconds and peak RSS (part of the tree's figures)."""
    server_rss_mib: float | None = None
    warm: bool | None = None
    """tooleval: did the run start warm (flows/warm_runner.py: its child did the run; its CPU is counted)."""
    failure: str | None = None
    """Why the run does not count (non-zero exit, or not 1,620 evaluations seen); None when it counts."""
    note: str | None = None
    """A counted run's oddity (promptfoo exiting 1 at shutdown after storing every result)."""


@dataclass
class Command:
    tool: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    scratch: Path  # fresh per run; removed afterwards unless --keep
    count: Callable[[str, str, Path], tuple[int, str | None]]  # (stdout, stderr, scratch) -> (evaluations, note)
    marker: str | None = None  # regex on a child process's command line whose start time is reported
    exit_after_results: bool = False  # a non-zero exit counts when the stored results pass the check
    expected: int = EXPECTED_ROWS  # evaluations a run must have done to count


def kept_server_pid(explicit: int | None) -> int | None:
    """The pid of the Prefect server a run talks to outside tooleval's tree: ``--server-pid``; with
    PREFECT_API_URL, the one ``prefect server start --background`` wrote to ``$PREFECT_HOME/server.pid``; else
    tooleval's kept server (``$PREFECT_HOME/tooleval-server/server.json``; None until a run has
    started it, or with TOOLEVAL_KEEP_SERVER=0)."""
    if explicit is not None:
        return explicit
    home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    try:
        if os.environ.get("PREFECT_API_URL"):
            return int((home / "server.pid").read_text().split()[0])
        if os.environ.get("TOOLEVAL_KEEP_SERVER", "").strip() in ("0", "0.0"):
            return None
        return int(json.loads((home / "tooleval-server" / "server.json").read_text())["pid"])
    except (OSError, ValueError, IndexError, KeyError):
        return None


def _with_children(pid: int) -> list[int]:
    """``pid`` and its children."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                children.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return [pid, *children]


def _server_cpu_and_rss(pid: int) -> tuple[float, float] | None:
    """(CPU seconds, largest RSS KiB) of a kept server: the process and its children."""
    found = [m for m in map(_cpu_and_rss, _with_children(pid)) if m is not None]
    return (sum(c for c, _ in found), max(r for _, r in found)) if found else None


def warm_runner_pid() -> int | None:
    """The pid of tooleval's warm runner for this Prefect home (``tooleval-server/warm.json``), if one is alive."""
    home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    try:
        pid = int(json.loads((home / "tooleval-server" / "warm.json").read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pid if os.path.exists(f"/proc/{pid}") else None


def _cpu_with_reaped(pid: int | None) -> float:
    """CPU seconds of a process and of its children it has reaped (utime, stime, cutime, cstime)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, TypeError):
        return 0.0
    return sum(map(int, fields[11:15])) / CLOCK_TICKS


def timed(command: Command, isolate_network: bool, outside_server: int | None = None) -> tuple[Measured, str, str]:
    """One run; ``outside_server``: the pid of a kept Prefect server the run talks to, whose CPU during the run
    is added to the run's (tooleval's figures then cost what they would with the server in the tree). A warm
    runner's child does a warm run: its CPU (the runner's reaped children's, the runner's own share of the job
    included) is added too, and its RSS counts in the tree."""
    argv = command.argv
    if isolate_network:
        # A new network namespace with only loopback up: nothing can reach another host.
        argv = ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *argv]
    lines: list[str] = []
    first_output: list[float] = []
    last_output: list[float] = [0.0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before = _server_cpu_and_rss(outside_server) if outside_server else None
    runner = warm_runner_pid() if command.tool.startswith("tooleval") else None
    runner_before = _cpu_with_reaped(runner)
    load = os.getloadavg()[0]
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(argv, cwd=command.cwd, env=command.env, stdout=subprocess.PIPE,
                                   stderr=stderr, stdin=subprocess.DEVNULL, text=True, errors="replace")
        sampler = TreeSampler(process.pid, started, command.marker, runner)
        sampler.start()

        def read_stdout() -> None:
            for line in process.stdout:
                if line.strip():
                    last_output[0] = time.perf_counter() - started
                    if not first_output:
                        first_output.append(last_output[0])
                lines.append(line)

        reader = threading.Thread(target=read_stdout, daemon=True)
        reader.start()
        process.wait()
        wall = time.perf_counter() - started
        reader.join()
        sampler.stop_event.set()
        sampler.join()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        stderr.seek(0)
        err = stderr.read()
    out = "".join(lines)
    failure, note, evaluations = None, None, 0
    if process.returncode != 0 and not command.exit_after_results:
        failure = f"exited {process.returncode}"
    else:
        try:
            evaluations, note = command.count(out, err, command.scratch)
        except Exception as error:  # noqa: BLE001 (any failed check is reported, the benchmark goes on)
            failure = str(error).splitlines()[0] + (f" (exited {process.returncode})" if process.returncode else "")
        else:
            if evaluations != command.expected:
                failure = f"did {evaluations:,} evaluations, not {command.expected:,}"
            elif process.returncode:
                last_error = next((line.strip() for line in err.splitlines() if "Error" in line), "")
                note = "; ".join(filter(None, [note, f"exited {process.returncode} after storing every result: "
                                                     f"{last_error[:100]}"]))
    cpu_rusage = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cpu_sampled = sum(sampler.cpu_seconds.values())
    cpu_rusage += max(0.0, _cpu_with_reaped(runner) - runner_before) if runner else 0.0  # sampled: in the tree
    marked = sampler.marked_child
    server_cpu = sampler.cpu_seconds.get(sampler.marked_pid) if sampler.marked_pid else None
    server_rss = (sampler.peak_process_kib.get(sampler.marked_pid, 0.0) / 1024) if sampler.marked_pid else None
    server_after = _server_cpu_and_rss(outside_server) if outside_server else None
    if server_before and server_after:  # the kept server's share of this run
        server_cpu, server_rss = server_after[0] - server_before[0], server_after[1] / 1024
        cpu_rusage, cpu_sampled = cpu_rusage + server_cpu, cpu_sampled + server_cpu
    return Measured(
        tool=command.tool, wall=wall, cpu=max(cpu_rusage, cpu_sampled), cpu_rusage=cpu_rusage,
        cpu_sampled=cpu_sampled, peak_tree_mib=sampler.peak_tree_kib / 1024,
        peak_process_mib=max(sampler.peak_process_kib.values(), default=0.0) / 1024,
        marked_child=marked[0] if marked else None, marked_child_cmd=marked[1] if marked else "",
        marked_child_gone=sampler.marked_last_seen,
        first_output=first_output[0] if first_output else None, last_output=last_output[0] or None,
        load_at_start=load, evaluations=evaluations,
        processes=sampler.max_processes, failure=failure, note=note,
        server_cpu=server_cpu, server_rss_mib=server_rss,
        warm=bool(re.search(r"warm\s+start", out)) if command.tool.startswith("tooleval") else None,
    ), out, err


# --------------------------------------------------------------------------------------------------
# The tools
# --------------------------------------------------------------------------------------------------


def experiment_for(repeats: int, workdir: Path) -> Path:
    """benchmarks/peers/one_arm.yaml at 3 repeats; else a copy in the work folder with seeds 1..repeats."""
    if repeats == work.SEEDS:
        return EXPERIMENT
    text = EXPERIMENT.read_text()
    text = re.sub(r"^taskset: .*$", f"taskset: {(EXPERIMENT.parent / '../../tasksets/support').resolve()}", text,
                  flags=re.MULTILINE)
    text = re.sub(r"^seeds: .*$", f"seeds: [{', '.join(str(i) for i in range(1, repeats + 1))}]", text,
                  flags=re.MULTILINE)
    path = workdir / f"one_arm_x{repeats}.yaml"
    path.write_text(text)
    return path


def tooleval_command(args: argparse.Namespace, scratch: Path, repeats: int = work.SEEDS,
                     workdir: Path | None = None, checkout_dir: str | None = None, tool: str = "tooleval") -> Command:
    checkout = Path(checkout_dir or args.tooleval_checkout).resolve()
    if args.tooleval_cmd:
        base = shlex.split(args.tooleval_cmd)
    else:
        venv_python = checkout / ".venv" / "bin" / "python"
        base = [str(venv_python if venv_python.exists() else Path(sys.executable)), "-m", "flows.launch"]
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"  # lines reach the pipe when printed: times to first and last output
    env["PYTHONPATH"] = str(checkout) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("TOOLEVAL_WAREHOUSE", None)
    experiment = experiment_for(repeats, workdir) if workdir is not None else EXPERIMENT
    argv = [*base, "run", str(experiment), "--no-cache", "--warehouse", str(scratch / "warehouse")]

    def count(out: str, err: str, _scratch: Path) -> int:
        match = re.search(r"^run \S+: ([\d,]+) rows", out, re.MULTILINE)
        if not match:
            raise RuntimeError(f"tooleval printed no 'run ...: N rows' line:\n{out[-2000:]}\n{err[-2000:]}")
        return int(match.group(1).replace(",", "")), None

    return Command(tool, argv, env, checkout, scratch, count, marker=r"uvicorn|prefect\.server|prefect server",
                   expected=REQUESTS * repeats)


def promptfoo_bin(cache: Path) -> Path:
    return cache / f"promptfoo-{PROMPTFOO_VERSION}" / "node_modules" / ".bin" / "promptfoo"


def ensure_promptfoo(cache: Path) -> Path:
    """npm install promptfoo@PROMPTFOO_VERSION into the cache folder, once."""
    binary = promptfoo_bin(cache)
    if binary.exists():
        return binary
    if os.environ.get("CI"):
        raise SystemExit("startup_vs_peers: refusing to npm install promptfoo under CI")
    if not shutil.which("npm"):
        raise SystemExit("startup_vs_peers: npm not found (promptfoo needs Node >= 20 and npm)")
    folder = binary.parents[2]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text('{"name": "tooleval-peer-promptfoo", "private": true}\n')
    print(f"installing promptfoo@{PROMPTFOO_VERSION} into {folder} (once; ~1.5 min, ~1.4 GB) ...", flush=True)
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
                    f"promptfoo@{PROMPTFOO_VERSION}"], cwd=folder, check=True)
    return binary


PROMPTFOO_OFFLINE_ENV = {
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_SHARING": "1",
    "PROMPTFOO_DISABLE_DEBUG_LOG": "1",  # its per-run debug log file: a diagnostic, and at its shutdown the
    # closed file made it exit 1 ("write after end") after storing every result
    "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
    "PROMPTFOO_CACHE_ENABLED": "false",
    "NODE_NO_WARNINGS": "1",
    "DO_NOT_TRACK": "1",
}


def promptfoo_command(args: argparse.Namespace, scratch: Path, workdir: Path, repeats: int = work.SEEDS) -> Command:
    env = {**os.environ, **PROMPTFOO_OFFLINE_ENV, "PROMPTFOO_CONFIG_DIR": str(scratch / "promptfoo")}
    argv = [str(promptfoo_bin(args.cache_dir)), "eval", "-c", str(workdir / "promptfooconfig.json"),
            "--repeat", str(repeats), "--no-cache", "--no-progress-bar", "--no-share"]

    def count(out: str, err: str, scratch: Path) -> int:
        """Results stored in its database (each with its assertion's verdict); the printed summary, when
        there is one, must agree. Under heavy load promptfoo 0.121.20 sometimes fails in its shutdown
        (its log file closed before the last debug lines: 'write after end', exit 1), or its forced exit
        cuts the summary off its output, after storing every result; such a run counts, with a note."""
        database = scratch / "promptfoo" / "promptfoo.db"
        if not database.exists():
            raise RuntimeError("promptfoo wrote no results database")
        with sqlite3.connect(database) as db:
            stored, graded = db.execute("SELECT count(*), count(success) FROM eval_results").fetchone()
        if graded != stored:
            raise RuntimeError(f"promptfoo stored {stored} results, {graded} of them graded")
        counts = [re.search(rf"([\d,]+) {word}", out) for word in ("passed", "failed", "errors")]
        if all(counts):
            printed = sum(int(m.group(1).replace(",", "")) for m in counts)
            if printed != stored:
                raise RuntimeError(f"promptfoo printed {printed} results but stored {stored}")
        elif stored == REQUESTS * repeats:  # a forced exit cut Node's pending writes to the pipe
            return stored, "no results summary printed (stdout cut short at exit); every result stored"
        return stored, None

    return Command("promptfoo", argv, env, workdir, scratch, count, exit_after_results=True,
                   expected=REQUESTS * repeats)


def inspect_python(cache: Path) -> Path:
    return cache / f"inspect-{INSPECT_VERSION}" / "bin" / "python"


def ensure_inspect(cache: Path) -> Path:
    """A venv with inspect_ai==INSPECT_VERSION in the cache folder, once."""
    python = inspect_python(cache)
    if python.exists() and subprocess.run([str(python), "-c", "import inspect_ai"],
                                          capture_output=True).returncode == 0:
        return python
    if os.environ.get("CI"):
        raise SystemExit("startup_vs_peers: refusing to pip install inspect_ai under CI")
    venv = python.parents[1]
    print(f"installing inspect_ai=={INSPECT_VERSION} into {venv} (once) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"inspect_ai=={INSPECT_VERSION}"], check=True)
    return python


def inspect_command(args: argparse.Namespace, scratch: Path, workdir: Path, repeats: int = work.SEEDS) -> Command:
    env = {**os.environ, "INSPECT_LOG_DIR": str(scratch / "inspect-logs"), "DO_NOT_TRACK": "1", "PYTHONUNBUFFERED": "1",
           "INSPECT_DISPLAY": "plain", "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)
    argv = [str(inspect_python(args.cache_dir)), str(PEERS / "inspect_task.py"),
            "--samples", str(workdir / "samples.jsonl"), "--epochs", str(repeats),
            "--log-dir", str(scratch / "inspect-logs")]

    def count(out: str, err: str, _scratch: Path) -> int:
        match = re.search(r"^inspect: ([\d,]+) samples scored", out, re.MULTILINE)
        if not match:
            raise RuntimeError(f"inspect_task.py printed no sample count:\n{out[-2000:]}\n{err[-2000:]}")
        return int(match.group(1).replace(",", "")), None

    return Command("inspect", argv, env, workdir, scratch, count, expected=REQUESTS * repeats)


# --------------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------------


def fmt(value: float | None, digits: int = 1, unit: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{unit}"


def table(results: dict[str, list[Measured]]) -> list[str]:
    rows = [("tool", "runs counted (warm)", "wall min / median", "CPU s (median)", "peak RSS tree / largest process",
             "Prefect server CPU s / peak RSS", "first output line (median)", "load at start")]
    for tool, all_runs in results.items():
        measured = [m for m in all_runs if not m.failure]
        if not measured:
            rows.append((tool, f"0 of {len(all_runs)}", "-", "-", "-", "-", "-", "-"))
            continue

        def med(values: list[float | None]) -> float | None:
            present = [v for v in values if v is not None]
            return statistics.median(present) if present else None

        walls = [m.wall for m in measured]
        rows.append((
            tool,
            f"{len(measured)} of {len(all_runs)}" + (f" ({sum(bool(m.warm) for m in measured)} warm)"
                                                    if tool.startswith("tooleval") else ""),
            f"{min(walls):.1f} s / {statistics.median(walls):.1f} s",
            fmt(med([m.cpu for m in measured])),
            f"{max(m.peak_tree_mib for m in measured):.0f} / {max(m.peak_process_mib for m in measured):.0f} MiB",
            (f"{fmt(med([m.server_cpu for m in measured]))} / "
             f"{max(m.server_rss_mib or 0.0 for m in measured):.0f} MiB") if tool.startswith("tooleval") else "-",
            fmt(med([m.first_output for m in measured]), 1, " s"),
            f"{min(m.load_at_start for m in measured):.2f}-{max(m.load_at_start for m in measured):.2f}",
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(cell.ljust(width) for cell, width in zip(row, widths)) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("-" * (width + 2) for width in widths) + "|")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each tool (default 5)")
    parser.add_argument("--only", choices=TOOLS, action="append", default=None,
                        help="run only this tool (repeatable)")
    parser.add_argument("--sizes", default=str(EXPECTED_ROWS), metavar="N,N",
                        help=f"evaluations per run, multiples of {REQUESTS} (540 requests x repeats), comma-separated, "
                             f"measured one after the other (default {EXPECTED_ROWS}; e.g. 1620,16200)")
    parser.add_argument("--with-inspect", nargs="?", const="all", default=None, metavar="SIZES",
                        help="add Inspect AI as a third column: at every size, or only at the sizes named "
                             "(e.g. --with-inspect 1620)")
    parser.add_argument("--before-checkout", default=None, metavar="DIR",
                        help=f"add a column '{BEFORE}': the same tooleval run from this checkout (e.g. /work/main), "
                             "interleaved with the others")
    parser.add_argument("--tooleval-checkout", default=str(ROOT), metavar="DIR",
                        help="checkout whose tooleval is measured (PYTHONPATH and working directory; "
                             "default: the one this script is in)")
    parser.add_argument("--tooleval-cmd", default=None, metavar="CMD",
                        help="tooleval command to run instead of '<python> -m flows.launch' "
                             "(e.g. '/work/main/.venv/bin/tooleval')")
    parser.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up round")
    parser.add_argument("--isolate-network", action="store_true",
                        help="run every tool in a fresh network namespace with only loopback (needs root): "
                             "proves the runs are offline")
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir(), metavar="DIR",
                        help="where promptfoo and Inspect AI are installed (default: $TOOLEVAL_PEERS_CACHE, "
                             "else $XDG_CACHE_HOME/tooleval-peers, else ~/.cache/tooleval-peers)")
    parser.add_argument("--import-breakdown", action="store_true",
                        help="after the table, one more untimed tooleval run under -X importtime: seconds per "
                             "top-level imported package")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders (and print them)")
    parser.add_argument("--server-pid", type=int, default=None, metavar="PID",
                        help="with PREFECT_API_URL set: the pid of that server, whose CPU during each tooleval run "
                             "is added to tooleval's (default: $PREFECT_HOME/server.pid, as `prefect server start "
                             "--background` writes it)")
    args = parser.parse_args(argv)

    tools = list(args.only) if args.only else ["tooleval", "promptfoo"] + (["inspect"] if args.with_inspect is not None else [])
    if args.before_checkout:
        tools.insert(tools.index("tooleval") + 1 if "tooleval" in tools else 0, BEFORE)
    try:
        sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
        inspect_sizes = set(sizes) if args.with_inspect in (None, "all") else {
            int(size) for size in args.with_inspect.split(",") if size.strip()}
    except ValueError:
        parser.error("--sizes and --with-inspect take numbers separated by commas, no thousands separators (1620,16200)")
    if not sizes or any(size % REQUESTS or size <= 0 for size in sizes):
        parser.error(f"--sizes: multiples of {REQUESTS} separated by commas (e.g. 1620,16200)")
    if "promptfoo" in tools:
        ensure_promptfoo(args.cache_dir)
    if "inspect" in tools:
        ensure_inspect(args.cache_dir)

    workdir = Path(tempfile.mkdtemp(prefix="startup-peers-"))
    work.write_promptfoo_config(workdir)
    work.write_inspect_dataset(workdir)

    def builders(repeats: int) -> dict[str, Callable[[Path], Command]]:
        return {"tooleval": lambda scratch: tooleval_command(args, scratch, repeats, workdir),
                BEFORE: lambda scratch: tooleval_command(args, scratch, repeats, workdir, args.before_checkout, BEFORE),
                "promptfoo": lambda scratch: promptfoo_command(args, scratch, workdir, repeats),
                "inspect": lambda scratch: inspect_command(args, scratch, workdir, repeats)}

    print(f"work: 540 requests x repeats = {', '.join(f'{size:,}' for size in sizes)} evaluations per run, "
          f"{len(work.catalogue_tools())} tools; tools {', '.join(tools)}"
          + (f" (inspect at {', '.join(f'{x:,}' for x in sorted(inspect_sizes))} only)"
             if "inspect" in tools and inspect_sizes != set(sizes) else "")
          + f", interleaved, {args.runs} timed runs each per size"
          + ("" if args.no_warmup else " after one warm-up round"))
    api_url = os.environ.get("PREFECT_API_URL")
    outside_server = kept_server_pid(args.server_pid)
    keeps = os.environ.get("TOOLEVAL_KEEP_SERVER", "").strip() not in ("0", "0.0")
    prefect_api = f"= {api_url}" if api_url else (
        "unset: the server kept between runs (its CPU during each run is added to tooleval's)" if keeps
        else "unset, TOOLEVAL_KEEP_SERVER=0: a temporary server per run")
    if api_url:
        prefect_api += (f" (a kept server, pid {outside_server}: its CPU during each run is added to tooleval's)"
                        if outside_server else " (no server pid: its CPU is not counted)")
    print(f"tooleval: {shlex.join(tooleval_command(args, Path('<fresh>')).argv)} (checkout {args.tooleval_checkout}); "
          f"PREFECT_API_URL {prefect_api}; its CPU, RSS and process count include the Prefect server subprocess"
          + ("; sizes other than 1,620 run a copy of the experiment with seeds 1..N" if sizes != [EXPECTED_ROWS] else ""))
    if args.before_checkout:
        print(f"{BEFORE}: the same from checkout {args.before_checkout}")
    if "promptfoo" in tools:
        print(f"promptfoo {PROMPTFOO_VERSION}: {promptfoo_bin(args.cache_dir)}, node {_node_version()}")
    load_before = os.getloadavg()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in load_before)} ({os.cpu_count()} cores)", flush=True)

    results: dict[int, dict[str, list[Measured]]] = {}
    loads: dict[int, tuple[tuple[float, ...], tuple[float, ...]]] = {}
    restarts: list[str] = []
    try:
        for size_no, size in enumerate(sizes):
            repeats = size // REQUESTS
            here = [tool for tool in tools if tool != "inspect" or size in inspect_sizes]
            results[size] = {tool: [] for tool in here}
            rounds = ([0] if not args.no_warmup and size_no == 0 else []) + list(range(1, args.runs + 1))
            size_load = os.getloadavg()
            for round_no in rounds:
                for tool in here:
                    scratch = Path(tempfile.mkdtemp(prefix=f"{tool}-", dir=workdir))
                    if not api_url and keeps and args.server_pid is None:  # started by the first run
                        outside_server = kept_server_pid(None)
                    watch = tool in ("tooleval", BEFORE) and keeps and not api_url and args.server_pid is None
                    server_before = outside_server if watch else None  # read just above
                    measured, out, err = timed(builders(repeats)[tool](scratch), args.isolate_network,
                                               outside_server if tool in ("tooleval", BEFORE) else None)
                    label = "warm-up" if round_no == 0 else f"run {round_no}"
                    server_after = kept_server_pid(None) if watch else None
                    restarted = bool(round_no) and watch and server_after != server_before
                    print(f"  {size:>6,} {label:<8} {tool:<15} wall {measured.wall:6.1f} s  cpu {measured.cpu:6.1f} s "
                          f"(rusage {measured.cpu_rusage:.1f}, sampled {measured.cpu_sampled:.1f})  "
                          f"rss tree {measured.peak_tree_mib:5.0f} MiB, largest {measured.peak_process_mib:5.0f} MiB, "
                          f"{measured.processes} processes  "
                          + (f"server spawned {fmt(measured.marked_child, 1, ' s')} cpu {fmt(measured.server_cpu)} s "
                             f"rss {fmt(measured.server_rss_mib, 0)} MiB  " if measured.marked_child else "")
                          + f"output {fmt(measured.first_output, 1, ' s')}-{fmt(measured.last_output, 1, ' s')}  "
                          f"load {measured.load_at_start:.2f}  {measured.evaluations:,} evaluations"
                          + {True: "  warm", False: "  cold", None: ""}[measured.warm], flush=True)
                    if measured.note:
                        print(f"           note: {measured.note}", flush=True)
                    if restarted:
                        restarts.append(f"{size:,} {label} {tool}")
                        print(f"           RESTARTED the kept Prefect server (pid {server_before} -> {server_after}): "
                              "this run's figures include a server start", flush=True)
                    if measured.failure:
                        kept = Path(tempfile.mkdtemp(prefix=f"startup-peers-failed-{tool}-"))
                        shutil.copytree(scratch, kept / "scratch", dirs_exist_ok=True)
                        (kept / "stdout.txt").write_text(out, encoding="utf-8")
                        (kept / "stderr.txt").write_text(err, encoding="utf-8")
                        print(f"           FAILED, not counted: {measured.failure} (output and files kept in {kept})",
                              flush=True)
                    if round_no:
                        results[size][tool].append(measured)
                    if not args.keep:
                        shutil.rmtree(scratch, ignore_errors=True)
            loads[size] = (size_load, os.getloadavg())
    finally:
        if args.keep:
            print(f"kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    load_after = os.getloadavg()
    for size, by_tool in results.items():
        print(f"\n{size:,} evaluations (540 requests x {size // REQUESTS}); load average at the size's start "
              f"{' '.join(f'{x:.2f}' for x in loads[size][0])}, at its end {' '.join(f'{x:.2f}' for x in loads[size][1])}")
        print("\n".join(table(by_tool)))
        counted = {tool: [m for m in runs if not m.failure] for tool, runs in by_tool.items()}
        for line in ratio_lines(size, counted):
            print(line)
        if counted.get("tooleval"):
            print(tooleval_breakdown(counted["tooleval"]))
        busiest = max((m.load_at_start for runs in counted.values() for m in runs), default=0.0)
        if busiest > (os.cpu_count() or 1):
            print(f"  (load reached {busiest:.1f} on {os.cpu_count()} cores: under contention a one-threaded Node "
                  "process and a two-process Python run stretch differently; judge ratios on a quiet machine)")
    print(f"\nload average before: {' '.join(f'{x:.2f}' for x in load_before)}; after: "
          f"{' '.join(f'{x:.2f}' for x in load_after)} (1, 5, 15 min; {os.cpu_count()} cores)")
    if args.import_breakdown and "tooleval" in tools:
        print(import_breakdown(args))
    if restarts:
        print(f"{len(restarts)} timed run(s) started a new kept server instead of using the one kept "
              f"({', '.join(restarts)}): their wall and CPU include a server start (see RESTARTED above)")
    failed = sum(1 for by_tool in results.values() for runs in by_tool.values() for m in runs if m.failure)
    if failed:
        print(f"{failed} run(s) failed their check and were not counted (see FAILED above)")
    return 1 if failed else 0


def ratio_lines(size: int, counted: dict[str, list[Measured]]) -> list[str]:
    """tooleval / peer per size: wall (min, median), CPU (median), peak RSS of the tree (max); below 1 is
    tooleval faster or smaller; 'Nx faster' is the peer's figure over tooleval's."""
    lines = []
    for mine in ("tooleval", BEFORE):
        if not counted.get(mine):
            continue
        ours = counted[mine]
        for peer in ("promptfoo", "inspect", *((BEFORE,) if mine == "tooleval" else ())):
            theirs = counted.get(peer)
            if not theirs or peer == mine:
                continue
            pairs = [("wall min", min(m.wall for m in ours), min(m.wall for m in theirs)),
                     ("wall median", statistics.median(m.wall for m in ours), statistics.median(m.wall for m in theirs)),
                     ("CPU median", statistics.median(m.cpu for m in ours), statistics.median(m.cpu for m in theirs)),
                     ("peak RSS tree", max(m.peak_tree_mib for m in ours), max(m.peak_tree_mib for m in theirs))]
            cells = ", ".join(f"{name} {a:.1f} / {b:.1f} = {a / b:.2f} ({b / a:.1f}x {'smaller' if 'RSS' in name else 'faster'})"
                              for name, a, b in pairs)
            lines.append(f"  {size:,}: {mine} / {peer}: {cells}")
    return lines


def tooleval_breakdown(measured: list[Measured]) -> str:
    """Medians of the moments seen from outside: Prefect's server process spawned, first and last output."""
    def med(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return statistics.median(present) if present else None

    spawned, gone, first, last = (med([getattr(m, name) for m in measured])
                                  for name in ("marked_child", "marked_child_gone", "first_output", "last_output"))
    wall = statistics.median(m.wall for m in measured)
    parts = [f"tooleval, median of {len(measured)}: "]
    if spawned is not None:
        parts.append(f"Prefect's temporary server spawned at {spawned:.1f} s (interpreter, imports, preparation and "
                     "label checks before it); ")
    else:
        parts.append("no Prefect server process seen (PREFECT_API_URL set, or started another way); ")
    parts.append(f"first output line at {fmt(first, 1, ' s')} (flow done, report read), last at {fmt(last, 1, ' s')}"
                 + (f", server last seen at {gone:.1f} s" if gone is not None else "") + f", exit at {wall:.1f} s")
    return "".join(parts)


def import_breakdown(args: argparse.Namespace, top: int = 10) -> str:
    """One more, untimed, tooleval run under ``python -X importtime``: cumulative import seconds of the
    top-level imports (the first importer of a package is charged with it; imports made inside functions
    while the run goes on count as top-level). The Prefect server subprocess is not included."""
    if args.tooleval_cmd:
        return "import breakdown: skipped (only for the default '<python> -m flows.launch' command)"
    scratch = Path(tempfile.mkdtemp(prefix="tooleval-importtime-"))
    try:
        command = tooleval_command(args, scratch)
        argv = [command.argv[0], "-X", "importtime", *command.argv[1:]]
        started = time.perf_counter()
        done = subprocess.run(argv, cwd=command.cwd, env={**command.env, "TOOLEVAL_WARM_RUN": "0"},  # imports here
                              capture_output=True, text=True)
        wall = time.perf_counter() - started
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    totals: dict[str, float] = {}
    own = 0.0
    ancestors: list[str] = []  # packages of the imports enclosing the current line
    # -X importtime prints an import after the ones it caused (post-order, two spaces per level):
    # reversed, each line follows its parent. A package is charged with its cumulative time when no
    # enclosing import is another outside package; the project's own modules count their self time.
    for line in reversed(done.stderr.splitlines()):
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$", line)
        if not match:
            continue
        depth, package = len(match.group(3)) // 2, match.group(4).split(".")[0]
        del ancestors[depth:]
        if package in PROJECT_PACKAGES:
            own += int(match.group(1)) / 1e6
        elif all(parent in PROJECT_PACKAGES for parent in ancestors):
            totals[package] = totals.get(package, 0.0) + int(match.group(2)) / 1e6
        ancestors.append(package)
    ranked = sorted(totals.items(), key=lambda item: -item[1])
    listed = ", ".join(f"{name} {seconds:.1f}" for name, seconds in ranked[:top])
    return (f"import breakdown (one untimed run under -X importtime, wall {wall:.1f} s, exit {done.returncode}): "
            f"{sum(totals.values()) + own:.1f} s importing; by package, cumulative s: {listed}; "
            f"the project's own modules {own:.1f}")


def _node_version() -> str:
    try:
        return subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
