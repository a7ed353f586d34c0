"""The warm runner (flows/warm_runner.py), with real processes on a Prefect home of this module's own: a cold run
that used the kept server starts it, and the next run starts warm with the same rows and report; runs at once each
have a child, and a run on a terminal works; bad input or a failed gate ends a warm run as it ends a cold one;
another environment, a touched source file, a changed module of a package, namespaces of its own or a closed stdin
run cold; SIGINT stops a warm run as it stops a cold one, even when it comes during the hand-over, a run that ignores
SIGHUP outlives a hangup, and a ``kill -9`` of the run kills its child and a rerun resumes; the runner holds no secret
while its child sees the run's; ``tooleval server stop`` ends it, and so does removing its home."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from flows.exit_codes import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_INTERRUPTED, EXIT_TERMINATED
from flows.prefect_server import SECRET_NAME, state_dir, stop_kept
from flows.stop_on_signal import alive
from flows.warm_runner import WARM_ENV, stamp, stop
from tasks.drill_points import LOG_ENV
from tests.drill.harness import own_env
from tests.factories import ROOT
from tests.factories.prefect_api import migrated_home
from tests.flows.test_kept_server import wait_until
from tests.flows.test_run_signals_and_progress import SlowSecondUnit, closing_tasks, experiment, wait_for
from tests.provider_server import ProviderServer
from tests.report.test_gates_flow import shop
from tests.selectors.providers.conftest import FAKE_KEY
from tests.surface.tiny_desk import write_desk

pytestmark = pytest.mark.slow  # real tooleval processes, a kept Prefect server and a warm runner

ONE_ARM = str(ROOT / "benchmarks" / "peers" / "one_arm.yaml")
RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}")
TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ")  # e.g. when the criteria were registered


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """One Prefect home for the module, a kept server and a runner on it (stopped at the end); a secret in the
    environment, which a runner must not hold and a run must see."""
    folder = tmp_path_factory.mktemp("warm")
    home = migrated_home(folder / "prefect-home")
    environ = own_env(home, OPENAI_API_KEY=FAKE_KEY, TOOLEVAL_KEEP_SERVER="10", **{LOG_ENV: str(folder / "points")})
    environ.pop("PYTEST_CURRENT_TEST", None)  # pytest changes it for every test: another environment
    environ.pop(WARM_ENV, None)
    yield environ
    stop(environ)
    stop_kept(state_dir(environ))


def tooleval(args: list[str], env: dict[str, str], **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flows.launch", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**env, **extra}, timeout=600)


def runner(env: dict[str, str]) -> dict:
    try:
        return json.loads((state_dir(env) / "warm.json").read_text())
    except (OSError, ValueError):
        return {}


def ready(env: dict[str, str], not_pid: int | None = None) -> int:
    """The pid of the runner once it accepts runs (not ``not_pid``, one being replaced); a cold run leaves one
    where none is (a test run alone)."""
    if not_pid is None and not alive(runner(env).get("pid", 0)):
        scratch = Path(tempfile.mkdtemp())
        assert tooleval(["run", ONE_ARM, "--no-cache", "--warehouse", str(scratch)], env).returncode == 0
        shutil.rmtree(scratch)
    assert wait_until(lambda: runner(env).get("ready") and runner(env)["pid"] != not_pid
                      and (state_dir(env) / runner(env)["socket"]).exists(), 120), log(env)[-3000:]
    return runner(env)["pid"]


@contextlib.contextmanager
def touched(path: Path):
    """``path`` with its modification time moved by a microsecond, put back after."""
    times = path.stat()
    os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns + 1000))
    try:
        yield
    finally:
        os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))


def log(env: dict[str, str]) -> str:
    return (state_dir(env) / "warm.log").read_text()


def children(pid: int) -> list[int]:
    return [int(child) for task in os.listdir(f"/proc/{pid}/task")
            for child in open(f"/proc/{pid}/task/{task}/children").read().split()]


def rows(warehouse: Path) -> list[tuple]:
    names = ["arm", "seed", "request_id", "expected", "chosen", "correct", "confidence"]
    found = [row for part in sorted((warehouse / "rows").rglob("*.parquet"))
             for row in zip(*pq.read_table(part, columns=names).to_pydict().values())]
    return sorted(found, key=repr)


def report(stdout: str, warehouse: Path) -> str:
    return TIME.sub("TIME", RUN_ID.sub("RUN", stdout.split("DuckDB file:")[0]).replace(str(warehouse), "WH"))


def test_a_second_run_starts_warm_with_the_same_rows_and_report_and_no_secret_in_the_runner(env, tmp_path):
    cold = tooleval(["run", ONE_ARM, "--no-cache", "--warehouse", str(tmp_path / "cold")], env)
    assert cold.returncode == 0, cold.stderr[-3000:]
    assert "warm start" not in cold.stdout
    pid = ready(env)
    warm = tooleval(["run", ONE_ARM, "--no-cache", "--warehouse", str(tmp_path / "warm")], env)
    assert warm.returncode == 0, warm.stderr[-3000:]
    prefect_line = warm.stdout.split("Prefect:")[1]
    assert "already running; warm start;" in prefect_line, warm.stdout[-2000:]
    assert report(warm.stdout, tmp_path / "warm") == report(cold.stdout, tmp_path / "cold")
    assert len(rows(tmp_path / "warm")) == 1620 and rows(tmp_path / "warm") == rows(tmp_path / "cold")
    words = " ".join(warm.stderr.split())  # the line wraps at 80 columns, where depends on the checkout's path
    assert words.count("checking the experiment and its task set") == 1  # the first line, once
    held = [entry.split("=")[0] for entry in open(f"/proc/{pid}/environ").read().split("\0") if entry]
    assert "PREFECT_HOME" in held and not [name for name in held if SECRET_NAME.search(name)]
    assert runner(env)["pid"] == pid and alive(pid) and not children(pid)  # the child is reaped


def test_runs_at_once_each_have_a_child(env, tmp_path):
    pid = ready(env)
    runs = [subprocess.Popen([sys.executable, "-m", "flows.launch", "run", ONE_ARM, "--no-cache", "--warehouse",
                              str(tmp_path / f"wh{n}")], cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE) for n in range(2)]
    done = [run.communicate(timeout=600) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err[-2000:] for _, err in done]
    assert all("warm start" in out and "run " in out for out, _ in done)
    assert all(len(rows(tmp_path / f"wh{n}")) == 1620 for n in range(2))
    assert alive(pid) and not children(pid)


def test_a_runner_out_of_descriptors_takes_no_more_runs_and_the_run_in_flight_goes_on(env, tmp_path):
    """``accept`` failing (EMFILE here) ends the runner's listening, not the runner: the next run goes cold and
    the warm run in flight (its child stopped meanwhile, so it is in flight) lands."""
    pid = ready(env)
    first = launched(["run", ONE_ARM, "--no-cache", "--warehouse", str(tmp_path / "first")], env)
    assert wait_until(lambda: children(pid), 60), log(env)[-3000:]
    [child], seen, address = children(pid), len(log(env)), str(state_dir(env) / runner(env)["socket"])
    os.kill(child, signal.SIGSTOP)
    try:
        held = {int(fd) for fd in os.listdir(f"/proc/{pid}/fd")}
        lowest_free = min(set(range(len(held) + 1)) - held)
        limits = (lowest_free, resource.prlimit(pid, resource.RLIMIT_NOFILE)[1])
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as knock:
            resource.prlimit(pid, resource.RLIMIT_NOFILE, limits)
            knock.connect(address)  # at once: the runner's once-a-second look opens files, and would fail first
            assert wait_until(lambda: "ending: cannot accept a run" in log(env)[seen:], 15), log(env)[seen:]
        second = tooleval(["run", ONE_ARM, "--no-cache", "--warehouse", str(tmp_path / "second")], env)
    finally:
        os.kill(child, signal.SIGCONT)
    out, err = first.communicate(timeout=600)
    assert first.returncode == 0 and "warm start" in out, err[-3000:]
    assert second.returncode == 0 and "warm start" not in second.stdout, second.stderr[-3000:]
    assert len(rows(tmp_path / "first")) == len(rows(tmp_path / "second")) == 1620
    assert f"pid {pid}: ending: cannot accept a run" in log(env)[seen:], log(env)[seen:]
    assert wait_until(lambda: not alive(pid), 30)  # once its child ended
    ready(env)  # a cold run leaves a runner in its place


def test_a_warm_run_on_a_terminal(env, tmp_path):
    """Its streams a terminal's: the report and the verdict reach it, and the run ends when the child does."""
    ready(env)
    main, terminal = pty.openpty()
    run = subprocess.Popen([sys.executable, "-m", "flows.launch", "run", ONE_ARM, "--no-cache", "--warehouse",
                            str(tmp_path / "wh")], cwd=ROOT, env={**env, "COLUMNS": "120"}, stdin=terminal,
                           stdout=terminal, stderr=terminal)
    os.close(terminal)
    seen = b""
    with contextlib.suppress(OSError):  # EIO once every end of the terminal is closed
        while chunk := os.read(main, 1 << 16):
            seen += chunk
    os.close(main)
    assert run.wait(timeout=600) == 0, seen.decode(errors="replace")[-3000:]
    text = seen.decode(errors="replace")
    assert "warm start" in text and "1,620 rows" in text and "verdict:" in text, text[-3000:]


def test_bad_input_ends_a_warm_run_as_it_ends_a_cold_one(env, tmp_path):
    ready(env)
    args = ["run", str(tmp_path / "no-such.yaml"), "--no-cache"]
    cold = tooleval(args, env, **{WARM_ENV: "0"})
    before = log(env).count("\n")
    warm = tooleval(args, env)
    assert warm.returncode == cold.returncode == EXIT_BAD_INPUT
    assert warm.stderr == cold.stderr and warm.stdout == cold.stdout == ""
    assert log(env).count("\n") == before  # accepted: the runner wrote nothing (a refusal is a line)


def test_a_failed_gate_ends_a_warm_run_as_it_ends_a_cold_one(env, tmp_path):
    experiment, _ = shop(tmp_path)
    ready(env)
    runs = {how: tooleval(["run", str(experiment), "--no-cache", "--warehouse", str(tmp_path / how)], env,
                          **({WARM_ENV: "0"} if how == "cold" else {})) for how in ("cold", "warm")}
    assert runs["cold"].returncode == runs["warm"].returncode == EXIT_GATE_FAILED, runs["warm"].stderr[-3000:]
    assert "warm start" in runs["warm"].stdout and "warm start" not in runs["cold"].stdout
    assert report(runs["warm"].stdout, tmp_path / "warm") == report(runs["cold"].stdout, tmp_path / "cold")


def test_another_environment_a_touched_source_or_a_changed_package_runs_cold_and_replaces_the_runner(env, tmp_path):
    args = ["run", str(tmp_path / "no-such.yaml"), "--no-cache"]
    first, seen = ready(env), len(log(env))
    assert tooleval(args, env, TOOLEVAL_PROGRESS_EVERY_S="7").returncode == EXIT_BAD_INPUT
    assert f"pid {first}: refused a run: another environment: TOOLEVAL_PROGRESS_EVERY_S\n" in log(env)[seen:]
    second = ready(env, not_pid=first)  # started by the refused run, with its environment
    assert wait_until(lambda: not alive(first), 10)  # the one replaced ends
    assert tooleval(args, env).returncode == EXIT_BAD_INPUT  # the module's environment again: refused
    third = ready(env, not_pid=second)
    seen = len(log(env))
    with touched(ROOT / "flows" / "warm_runner.py"):
        assert tooleval(args, env).returncode == EXIT_BAD_INPUT
    assert f"pid {third}: refused a run: stale:" in log(env)[seen:]
    fourth = ready(env, not_pid=third)
    seen = len(log(env))
    installed = Path(yaml.__file__)  # a package's module, outside the project's folders: the runner imported it
    with touched(installed):
        assert tooleval(args, env).returncode == EXIT_BAD_INPUT
    assert f"pid {fourth}: refused a run: stale: {installed} changed since it was imported\n" in log(env)[seen:]
    ready(env, not_pid=fourth)


def test_what_a_run_writes_in_the_default_warehouse_leaves_the_stamp_as_it_was():
    """``make demo`` and every run without --warehouse write into warehouse/ of the checkout: its rows, file and
    caches are data, not source, so the next run still starts warm."""
    before, made = stamp(os.environ), []
    for name in ("rows/run_id=stamp-probe/part-00000.parquet", "cache/stamp-probe.sqlite", "stamp-probe.duckdb"):
        path = ROOT / "warehouse" / name
        made += [folder for folder in reversed(path.relative_to(ROOT / "warehouse").parents[:-1])
                 if not (ROOT / "warehouse" / folder).exists()]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"data")
        made.append(name)
    try:
        assert stamp(os.environ) == before
    finally:
        for name in reversed(made):
            path = ROOT / "warehouse" / name
            path.unlink() if path.is_file() else path.rmdir()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "kill-9"])
def test_a_signal_to_a_warm_run_reaches_its_child_and_a_rerun_resumes(env, tmp_path, signum):
    script = SlowSecondUnit()
    with ProviderServer(script, api_key=FAKE_KEY) as server:  # a run without the key would be refused (401)
        folder = write_desk(tmp_path, closing_tasks(["fast-0", "fast-1", "slow-2", "slow-3"]),
                            experiment=experiment(server.openai_url, batch_size=2, concurrency=4))
        args = ["tasks", "run", str(folder / "experiments" / "four.yaml"), "--warehouse", str(tmp_path / "wh")]
        pid = ready(env)
        points = Path(env[LOG_ENV])
        points.unlink(missing_ok=True)
        run = subprocess.Popen([sys.executable, "-m", "flows.launch", *args], cwd=ROOT, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        counted = lambda: points.is_file() and "unit-landed\t" in points.read_text()  # noqa: E731
        wait_for(lambda: counted() and any("slow-" in s.user_text for s in server.requests()), 600, run)
        [child] = children(pid)  # the warm run's child: the run itself is not forked from the test
        os.kill(run.pid, signum)
        try:
            run.wait(timeout=60)
        finally:
            run.kill()
        stderr = run.stderr.read()
        assert wait_until(lambda: not alive(child), 10)
        if signum == signal.SIGINT:  # what a cold run says and exits with (test_run_signals_and_progress.py)
            assert run.returncode == EXIT_INTERRUPTED, stderr[-3000:]
            assert "stopped by SIGINT after 1 of 2 work units landed (2 runs)" in stderr, stderr[-3000:]
            assert "Traceback" not in stderr
        else:
            assert run.returncode == -signal.SIGKILL
        script.slow = False
        rerun = tooleval(args, env)
        assert rerun.returncode == 0, rerun.stderr[-3000:]
        assert "warm start" in rerun.stdout and "4 task runs in 2 work units, 2 from cache" in rerun.stdout
        first_turns = Counter(s.user_text for s in server.requests() if s.turn == 0)
        assert first_turns["Please close ticket T-1002 (fast-0)."] == 1  # finished items are not run again
        assert first_turns["Please close ticket T-1002 (fast-1)."] == 1


def launched(args: list[str], env: dict[str, str], **options) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "flows.launch", *args], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **options)


def test_a_run_in_namespaces_of_its_own_runs_cold(env, tmp_path):
    """A run without network (a network and user namespace of its own) is refused: a warm child would have the
    runner's network."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rn", "true"]).returncode != 0:
        pytest.skip("no unprivileged namespaces on this machine")
    pid, seen = ready(env), len(log(env))
    run = subprocess.run(["unshare", "-rn", sys.executable, "-m", "flows.launch", "run", str(tmp_path / "no.yaml")],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert run.returncode == EXIT_BAD_INPUT, run.stderr[-3000:]
    assert f"pid {pid}: refused a run: stale:" in log(env)[seen:]
    stop(env)  # the runner that run left lives in its namespaces: the next test starts one


def test_a_run_with_its_stdin_closed_runs_cold_and_leaves_the_runner_in_place(env, tmp_path):
    """A closed stream's number is taken by the hand-over's socket: a child given that as its stdin would hold the
    run's end of the connection and outlive a ``kill -9`` of the run. The run is cold, and the runner stays."""
    pid, seen = ready(env), len(log(env))
    run = subprocess.run([sys.executable, "-m", "flows.launch", "run", ONE_ARM, "--no-cache", "--warehouse",
                          str(tmp_path / "wh")], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600,
                         preexec_fn=lambda: os.close(0))
    assert run.returncode == 0 and "warm start" not in run.stdout, run.stderr[-3000:]
    assert runner(env)["pid"] == pid and not re.search("refused|dropped", log(env)[seen:]), log(env)[seen:]


def test_a_warm_run_that_ignores_hangups_lives_through_one(env, tmp_path):
    """Started as ``nohup`` starts it (SIGHUP ignored), a warm run outlives a hangup, as a cold one does."""
    pid = ready(env)
    run = launched(["run", ONE_ARM, "--no-cache", "--warehouse", str(tmp_path / "wh")], env,
                   preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    deadline = time.monotonic() + 120
    while not children(pid) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(children(pid)) == 1, "the run ended before its child was seen"
    [child] = children(pid)
    os.kill(child, signal.SIGSTOP)  # held until the run has had its hangup
    os.kill(run.pid, signal.SIGHUP)
    os.kill(child, signal.SIGCONT)
    out, err = run.communicate(timeout=600)
    assert run.returncode == 0 and "warm start" in out, err[-3000:]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_during_the_hand_over_stops_the_warm_run_as_it_stops_a_cold_one(env, tmp_path, signum):
    """The signal reaches the run while the runner (stopped meanwhile) has not answered: the child it then
    forks stops as a cold run does, however early it gets the signal."""
    pid, seen = ready(env), len(log(env))
    os.kill(pid, signal.SIGSTOP)
    try:
        run = launched(["run", ONE_ARM, "--no-cache", "--warehouse", str(tmp_path / "wh")], env)
        assert wait_until(lambda: "socket:" in " ".join(links(run.pid)), 60)  # it waits for the runner's answer
        os.kill(run.pid, signum)
    finally:
        os.kill(pid, signal.SIGCONT)
    _, err = run.communicate(timeout=600)
    code = {signal.SIGTERM: EXIT_TERMINATED, signal.SIGINT: EXIT_INTERRUPTED}[signum]
    assert run.returncode == code and f"stopped by {signum.name}" in err, (run.returncode, err[-3000:])
    assert not re.search("refused|dropped", log(env)[seen:])  # the runner took it: its child stopped


def links(pid: int) -> list[str]:
    """What the open files of process ``pid`` are (``socket:[N]``, ``pipe:[N]``, paths)."""
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):  # closed meanwhile
            found.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return found


def test_server_stop_ends_the_runner_and_so_does_removing_its_home(env, tmp_path):
    pid = ready(env)
    status = tooleval(["server", "status"], env)
    assert f"warm runner: pid {pid}, ready" in status.stdout, status.stdout
    stopped = tooleval(["server", "stop"], env)
    assert stopped.returncode == 0 and f"stopped its warm runner (pid {pid})" in stopped.stdout, stopped.stdout
    assert not alive(pid) and not list(state_dir(env).glob("warm.*.sock"))
    # a home of its own, removed while its server and runner wait
    home = migrated_home(tmp_path / "prefect-home")
    other = {**env, "PREFECT_HOME": str(home)}
    assert tooleval(["run", ONE_ARM, "--no-cache", "--warehouse", str(tmp_path / "wh")], other).returncode == 0
    pid = ready(other)
    while home.exists():  # its server still writes its database meanwhile
        shutil.rmtree(home, ignore_errors=True)
    assert wait_until(lambda: not alive(pid), 15)
