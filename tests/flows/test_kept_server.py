"""The local Prefect server kept between runs (flows/prefect_server.py): the first run starts it and a later run
uses it; a run holds it while its process lives (a ``kill -9`` lets go); it stops by itself after its idle
time, never while a run holds it, and once its Prefect home is removed; ``tooleval server stop`` refuses while
a run holds it; a server of another Prefect or Python is replaced; ``TOOLEVAL_KEEP_SERVER`` that is not
minutes is bad input. Real processes: the uvicorn server, ``tooleval run`` end to end."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from flows.exit_codes import EXIT_BAD_INPUT, EXIT_CRASHED
from flows.prefect_server import (KEEP_ENV, KeepSettingError, KeptState, LocalServer, PrefectServerError,
                                  keep_minutes, locked, run_server, state_dir, stop_kept)
from flows.stop_on_signal import alive
from tests.factories import ROOT
from tests.factories.prefect_api import migrated_home


def cli_env(home: Path, minutes: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    return {**env, "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(home), KEEP_ENV: minutes, "COLUMNS": "200"}


def answers(api_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def wait_until(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def remove(home: Path) -> None:
    """Remove ``home`` as a script would, though the server still writes its database in it meanwhile."""
    while home.exists():
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A Prefect home of this test's own, its database migrated (no test here checks a first start's
    migration); its kept server is stopped at the end whatever happened."""
    folder = migrated_home(tmp_path / "prefect-home")
    monkeypatch.setenv("PREFECT_HOME", str(folder))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    yield folder
    stop_kept(state_dir({"PREFECT_HOME": str(folder)}))


def test_minutes_are_read_from_the_environment():
    assert keep_minutes({}) == 10.0
    assert keep_minutes({KEEP_ENV: "0"}) == 0.0
    assert keep_minutes({KEEP_ENV: " 2.5 "}) == 2.5
    with pytest.raises(KeepSettingError, match="give minutes"):
        keep_minutes({KEEP_ENV: "ten"})


def test_a_keep_setting_that_is_not_minutes_is_bad_input_before_anything_starts(tmp_path):
    done = subprocess.run([sys.executable, "-m", "flows.launch", "run", "no-such.yaml"], capture_output=True,
                          text=True, cwd=ROOT, env=cli_env(tmp_path / "home", "ten"), timeout=60)
    assert done.returncode == EXIT_BAD_INPUT
    assert "TOOLEVAL_KEEP_SERVER='ten': give minutes (e.g. 10), or 0 for a server per run" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "home" / "tooleval-server").exists()


def test_a_run_naming_no_existing_file_starts_no_server(tmp_path):
    """A typo'd experiment is bad input: exit 2 naming the file, and no keeper left running for 10 minutes."""
    for command in (["run"], ["tasks", "run"]):
        home = tmp_path / "-".join(command)
        done = subprocess.run([sys.executable, "-m", "flows.launch", *command, "no-such.yaml", "--no-cache"],
                              capture_output=True, text=True, cwd=ROOT, env=cli_env(home, "10"), timeout=120)
        assert done.returncode == EXIT_BAD_INPUT, done.stderr[-2000:]
        assert "no-such.yaml" in done.stderr and "Traceback" not in done.stderr
        assert not (home / "tooleval-server").exists()


def test_a_kept_server_that_cannot_start_gives_way_to_a_temporary_one(home, monkeypatch, capsys):
    spawn = LocalServer.spawn

    def refuse(self):
        if self.kept:
            raise PrefectServerError("the server did not start: test")
        return spawn(self)

    monkeypatch.setattr(LocalServer, "spawn", refuse)
    monkeypatch.setattr("flows.prefect_server.configured_api_url", lambda: None)
    monkeypatch.setenv(KEEP_ENV, "5")
    server = run_server()
    try:
        assert not server.kept and server.process is not None
    finally:
        server.stop()
    assert "no kept Prefect server (the server did not start: test); starting one for this run" in capsys.readouterr().err


@pytest.mark.slow
def test_a_second_run_uses_the_server_the_first_kept_and_it_stops_when_unused(home):
    experiment = str(ROOT / "benchmarks" / "peers" / "one_arm.yaml")
    env = cli_env(home, "0.1")  # 6 s without a run
    urls, between = [], None
    for n, how in enumerate(("started by this run", "already running")):
        done = subprocess.run([sys.executable, "-m", "flows.launch", "run", experiment, "--no-cache",
                               "--warehouse", str(home.parent / f"wh{n}")], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=600)
        if between is None:  # held between the runs, as a run would: the next one is not raced against the keep
            between = locked(state_dir() / "runs.lock", fcntl.LOCK_SH)
        assert done.returncode == 0, done.stderr[-3000:]
        line = next(line for line in done.stdout.splitlines() if line.startswith("Prefect:"))
        assert how in line and "stops after 0.1 min with no run" in line, line
        urls.append(re.search(r"http://127\.0\.0\.1:\d+/api", line).group(0))
    assert urls[0] == urls[1] and answers(urls[0])
    between.close()
    status = subprocess.run([sys.executable, "-m", "flows.launch", "server", "status"], capture_output=True,
                            text=True, cwd=ROOT, env=env, timeout=60)
    assert urls[0] in status.stdout and "no run is using it" in status.stdout
    # no run for 6 s: the server stops and withdraws itself
    assert wait_until(lambda: not answers(urls[0]), 60)
    assert KeptState.read(state_dir()) is None
    status = subprocess.run([sys.executable, "-m", "flows.launch", "server", "status"], capture_output=True,
                            text=True, cwd=ROOT, env=env, timeout=60)
    assert status.stdout.startswith("no kept Prefect server")


HOLDER = textwrap.dedent("""
    import sys, time
    from flows.prefect_server import LocalServer
    server = LocalServer(float(sys.argv[1])).spawn()
    print(server.wait_ready(), flush=True)
    time.sleep(600)
""")


@pytest.mark.slow
def test_a_run_holds_the_server_while_it_lives_and_a_killed_run_lets_go(home):
    env = cli_env(home, "0.02")  # 1.2 s without a run (the server looks every 2 s)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, "0.02"], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env=env)
    try:
        url = holder.stdout.readline().strip()
        assert answers(url)
        time.sleep(5)  # well past the idle time and the server's next look: held, so still up
        assert answers(url)
        refused = subprocess.run([sys.executable, "-m", "flows.launch", "server", "stop"], capture_output=True,
                                 text=True, cwd=ROOT, env=env, timeout=60)
        assert refused.returncode == EXIT_BAD_INPUT and "a run is using the kept Prefect server" in refused.stderr
        assert answers(url)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    assert wait_until(lambda: not answers(url), 60)  # the kernel dropped the killed run's lock: unused, stopped


@pytest.mark.slow
def test_a_server_of_another_prefect_is_replaced_and_server_stop_ends_the_new_one(home):
    stale = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        folder = state_dir()
        folder.mkdir(parents=True)
        KeptState(pid=stale.pid, api_url="http://127.0.0.1:9/api", python=sys.executable, prefect="0.0",
                  keep_minutes=10, started_at=time.time()).write(folder)
        server = LocalServer(1).spawn()
        assert stale.wait(timeout=30) == -signal.SIGTERM  # the old server was told to stop
        url = server.wait_ready()
        assert server.state.pid != stale.pid and server.started_here
        server.stop()  # this process lets go; the server stays for the next run
        assert answers(url)
        lock = open(folder / "runs.lock")
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # nothing holds it any more
        lock.close()
        stopped = subprocess.run([sys.executable, "-m", "flows.launch", "server", "stop"], capture_output=True,
                                 text=True, cwd=ROOT, env=cli_env(home, "1"), timeout=60)
        assert stopped.returncode == 0 and f"stopped the kept Prefect server at {url}" in stopped.stdout
        assert not answers(url) and KeptState.read(folder) is None
    finally:
        stale.kill()
        stale.wait()


@pytest.mark.slow
def test_two_runs_starting_at_once_share_one_server_which_is_given_no_secret(home):
    env = {**cli_env(home, "0.02"), "OPENAI_API_KEY": "sk-test-not-for-the-keeper-1234"}
    holders = [subprocess.Popen([sys.executable, "-c", HOLDER, "0.02"], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                                env=env) for _ in range(2)]
    try:
        urls = {holder.stdout.readline().strip() for holder in holders}
        assert len(urls) == 1 and answers(next(iter(urls)))
        kept = KeptState.read(state_dir())
        environ = Path(f"/proc/{kept.pid}/environ").read_bytes()
        assert b"sk-test-not-for-the-keeper" not in environ and b"OPENAI_API_KEY" not in environ
    finally:
        for holder in holders:
            holder.kill()
            holder.wait(timeout=30)
    assert wait_until(lambda: not answers(next(iter(urls))), 60)


def test_a_run_given_an_api_starts_no_server(home, monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:4200/api")
    monkeypatch.setenv(KEEP_ENV, "5")
    assert run_server() is None and not state_dir().exists()


@pytest.mark.slow
def test_a_kept_server_whose_home_is_removed_stops(home):
    server = LocalServer(10).spawn()
    url = server.wait_ready()
    server.stop()
    remove(home)  # server.json with it: the server no longer finds itself named
    assert wait_until(lambda: not answers(url), 60)


@pytest.mark.slow
def test_a_kept_server_whose_home_a_script_removes_after_the_run_is_gone_within_a_minute_of_its_keep(home):
    """A script's run with a temporary Prefect home, removed after the run, while a client (a stalled
    worker) holds a request to the server open: the server ends within its keep plus a minute."""
    env = {**cli_env(home, "0.05"), "TOOLEVAL_STOP_GRACE_S": "2"}  # 3 s without a run; the stalled stop ends 2 s on
    done = subprocess.run([sys.executable, "-m", "flows.launch", "run", str(ROOT / "benchmarks/peers/one_arm.yaml"),
                           "--no-cache", "--warehouse", str(home.parent / "wh")], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    kept = KeptState.read(state_dir())
    assert kept is not None and alive(kept.pid)
    port = urlsplit(kept.api_url).port
    with socket.create_connection(("127.0.0.1", port), timeout=10) as stalled:  # a request whose body never comes
        stalled.sendall(b"POST /api/flow_runs/filter HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        removed = time.monotonic()
        remove(home)
        assert wait_until(lambda: not alive(kept.pid), 3 + 60), \
            f"pid {kept.pid} still running {time.monotonic() - removed:.0f} s after its home was removed"


def test_server_stop_with_no_kept_server_says_there_is_none(tmp_path):
    done = subprocess.run([sys.executable, "-m", "flows.launch", "server", "stop"], capture_output=True, text=True,
                          cwd=ROOT, env=cli_env(tmp_path / "never-used-home", "10"), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("no kept Prefect server") and "a run is using" not in done.stderr


KILLED_WHILE_WATCHED = textwrap.dedent("""
    import sys, time
    from flows.prefect_server import ApiWatch, LocalServer
    server = LocalServer(5).spawn()
    print(server.wait_ready(), server.state.pid, server.started_here, flush=True)
    with ApiWatch(server.api_url, server, interval_s=0.05):
        time.sleep(120)  # the watch ends the process long before this
    print("not ended")
""")


@pytest.mark.slow
def test_a_kept_server_killed_during_a_run_is_named_as_the_kept_one_without_an_invented_code(home):
    env = cli_env(home, "5")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, "5"], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env=env)
    try:
        holder.stdout.readline()
        run = subprocess.Popen([sys.executable, "-c", KILLED_WHILE_WATCHED], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
        url, pid, started_here = run.stdout.readline().split()
        assert started_here == "False"  # the holder's server: not a child of the run
        os.kill(int(pid), signal.SIGKILL)
        out, err = run.communicate(timeout=60)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert run.returncode == EXIT_CRASHED and "not ended" not in out, err
    assert f"the kept Prefect server ended during the run (pid {pid}, {url})" in err, err
    assert "temporary" not in err and "code 1" not in err
