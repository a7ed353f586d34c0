"""The Prefect API a run talks to: the one ``PREFECT_API_URL`` (or a Prefect profile) names, else a local
server: Prefect's app under uvicorn on a loopback socket this process binds and hands over (``--fd``: no
other process can take the port). Standard library only.

It is kept between runs unless ``TOOLEVAL_KEEP_SERVER=0`` (then it is the run's own and dies with it), one
per Prefect home: ``$PREFECT_HOME/tooleval-server/server.json`` names it; each run holds a shared lock on
``runs.lock`` while its process lives; runs find or start it under ``spawn.lock``. It ends itself after
``TOOLEVAL_KEEP_SERVER`` minutes (default 10) with no run, or once ``server.json`` no longer names it
(withdrawn, replaced, its home removed), within ``TOOLEVAL_STOP_GRACE_S`` (20 s) whatever holds uvicorn's stop."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import fcntl
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path
from typing import IO, Mapping
from urllib.parse import urlsplit

from flows import gc_pause
from flows.exit_codes import EXIT_CRASHED
from flows.stop_on_signal import alive, end_processes, resume_advice, stopping

KEEP_ENV = "TOOLEVAL_KEEP_SERVER"
MINUTES_ENV = "TOOLEVAL_KEPT_SERVER_MINUTES"  # the kept server's own idle time, set by the run starting it
START_TIMEOUT_ENV = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
STOP_GRACE_S = float(os.environ.get("TOOLEVAL_STOP_GRACE_S") or 20)  # then a kept server stopping itself ends
APP_DIR = Path(__file__).resolve().parent.parent
BLOCK_REGISTRATION_OFF = {"PREFECT_API_BLOCKS_REGISTER_ON_START": "false",
                          "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false"}
OWN_STORE = re.compile("DATABASE|MEMO_STORE")
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)  # not given to a kept server
LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
BEFORE_API = ("prefect.flow_engine", "prefect.task_engine")


class PrefectServerError(RuntimeError):
    """No Prefect API to be had (the message says why and what to do)."""


class PrefectApiLost(PrefectServerError):
    """The Prefect API refuses connections."""


class KeepSettingError(PrefectServerError):
    """``TOOLEVAL_KEEP_SERVER`` is not a number of minutes (bad input)."""


def keep_minutes(environ: Mapping[str, str] = os.environ) -> float:
    text = environ.get(KEEP_ENV, "").strip()
    try:
        return max(0.0, float(text)) if text else 10.0
    except ValueError:
        raise KeepSettingError(f"{KEEP_ENV}={text!r}: give minutes (e.g. 10), or 0 for a server per run") from None


def prefect_home(environ: Mapping[str, str] = os.environ) -> Path:
    return Path(environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()


def state_dir(environ: Mapping[str, str] = os.environ) -> Path:
    return prefect_home(environ) / "tooleval-server"


def configured_api_url() -> str | None:
    """The API the environment, a Prefect profile or a settings context names (Prefect imported only then)."""
    if url := os.environ.get("PREFECT_API_URL"):
        return url
    if "prefect.settings" not in sys.modules and not (prefect_home() / "profiles.toml").is_file():
        return None
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or None


def health_answers(api_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=1.0) as response:
            return response.status == 200
    except OSError:  # refused, reset, timed out, an HTTP error
        return False


def blocks_already_registered(site_packages: Path, environ: Mapping[str, str] = os.environ) -> bool:
    """May the server skip block registration (which imports every collection)? Yes once Prefect's memo store
    records one after the last ``prefect*`` install, with no other database or memo store named."""
    if any(key in BLOCK_REGISTRATION_OFF or key.startswith("PREFECT_") and OWN_STORE.search(key) for key in environ):
        return False
    profiles, memo = prefect_home(environ) / "profiles.toml", prefect_home(environ) / "memo_store.toml"
    try:
        installed = [d.stat().st_mtime for d in site_packages.glob("prefect*.dist-info")]
        return not (profiles.is_file() and OWN_STORE.search(profiles.read_text())) and bool(installed) and \
            "block_auto_registration" in memo.read_text() and memo.stat().st_mtime > max(installed)
    except OSError:
        return False


@dataclass
class KeptState:  # server.json
    pid: int
    api_url: str
    python: str
    prefect: str
    keep_minutes: float
    started_at: float

    @classmethod
    def read(cls, folder: Path) -> "KeptState | None":
        try:
            return cls(**json.loads((folder / "server.json").read_text()))
        except (OSError, ValueError, TypeError):  # none, half written, or not of this version
            return None

    def write(self, folder: Path) -> None:
        partial = folder / f"server.json.{os.getpid()}"
        partial.write_text(json.dumps(asdict(self)))
        partial.replace(folder / "server.json")


def locked(path: Path, mode: int) -> IO[str]:
    handle = open(path, "a+")
    try:
        fcntl.flock(handle.fileno(), mode)
    except OSError:
        handle.close()
        raise
    return handle


def unused(folder: Path) -> bool:
    """No run holds the kept server (none can without its folder)."""
    try:
        locked(folder / "runs.lock", fcntl.LOCK_EX | fcntl.LOCK_NB).close()
    except OSError as error:
        return isinstance(error, FileNotFoundError)
    return True


def watch_idle(minutes: float) -> None:
    """In the kept server: stop after ``minutes`` unused (withdrawing server.json under spawn.lock, where runs
    take their hold), once server.json no longer names it, or if this watch fails."""
    folder, last_used = state_dir(), time.monotonic()
    named = lambda: getattr(KeptState.read(folder), "pid", None) == os.getpid()  # noqa: E731
    try:
        while named():
            if not unused(folder):
                last_used = time.monotonic()
            elif time.monotonic() - last_used >= minutes * 60:
                with contextlib.suppress(OSError), locked(folder / "spawn.lock", fcntl.LOCK_EX | fcntl.LOCK_NB):
                    if unused(folder):  # else a run took it while this waited for the lock
                        if named():
                            (folder / "server.json").unlink()
                        break
            time.sleep(2.0)
    finally:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(STOP_GRACE_S)
        os._exit(0)


def create_app():
    """The local server's app (uvicorn ``--factory``): Prefect's, built with the collector held off."""
    gc_pause.pause()  # an app that fails to build ends the process
    from prefect.server.api.server import create_app as prefect_app

    app = prefect_app()
    gc_pause.resume()
    if minutes := os.environ.get(MINUTES_ENV):
        threading.Thread(target=watch_idle, args=(float(minutes),), name="tooleval-idle", daemon=True).start()
    return app


def stop_kept(folder: Path | None = None, state: KeptState | None = None) -> KeptState | None:
    """End the kept server of this Prefect home; the state it had, or None when none was running."""
    folder = folder or state_dir()
    state = state or KeptState.read(folder)
    (folder / "server.json").unlink(missing_ok=True)
    if state is None or not alive(state.pid):
        return None
    end_processes([state.pid], grace_s=10.0)
    return state


def status_lines(folder: Path | None = None) -> list[str]:
    folder = folder or state_dir()
    state = KeptState.read(folder)
    if state is None or not alive(state.pid):
        return [f"no kept Prefect server for {folder.parent} (the next `tooleval run` starts one)"]
    return [f"kept Prefect server: {state.api_url} (pid {state.pid}, "
            f"{'answering' if health_answers(state.api_url) else 'not answering yet'})",
            f"started {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(state.started_at))}; "
            f"{'no run is using it' if unused(folder) else 'a run is using it'}; stops after "
            f"{state.keep_minutes:g} min with no run; Prefect {state.prefect}"]


def _die_with_parent() -> None:  # in the child between fork and exec
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class LocalServer:
    """A run's local Prefect server: kept (``minutes`` > 0: found or started, held while this process lives)
    or the run's own (0). ``spawn()`` returns at once, ``wait_ready()`` blocks until it answers."""

    def __init__(self, minutes: float = 0, timeout_s: float | None = None) -> None:
        self.minutes, self.kept, self.folder = minutes, minutes > 0, state_dir()
        self.what = "kept Prefect server" if self.kept else "temporary Prefect server"
        self.timeout_s = timeout_s or float(os.environ.get(START_TIMEOUT_ENV, "120"))
        self.state: KeptState | None = None
        self.process: subprocess.Popen | None = None
        self.started_here, self._hold, self._log = False, None, None

    @property
    def api_url(self) -> str:
        return self.state.api_url

    def spawn(self) -> "LocalServer":
        if not self.kept:
            self.state, self.started_here = self._start(tempfile.TemporaryFile()), True
            atexit.register(self.stop)
            return self
        self.folder.mkdir(parents=True, exist_ok=True)
        with locked(self.folder / "spawn.lock", fcntl.LOCK_EX):
            state = KeptState.read(self.folder)
            current = (sys.executable, version("prefect"))  # another Python or Prefect (an upgrade) is replaced
            if state is not None and alive(state.pid) and (state.python, state.prefect) != current:
                stop_kept(self.folder, state)
            if state is None or not alive(state.pid):
                (state := self._start(open(self.folder / "server.log", "w+b"))).write(self.folder)
                self.started_here = True
            self._hold = locked(self.folder / "runs.lock", fcntl.LOCK_SH)  # held until this process ends
            self.state = state
        return self

    def _start(self, log) -> KeptState:
        site_packages = Path(importlib.util.find_spec("prefect").origin).parent.parent  # a dependency of tooleval
        env = {name: value for name, value in os.environ.items() if not (self.kept and SECRET_NAME.search(name))}
        env.update({"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1",
                    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL", MINUTES_ENV: str(self.minutes) if self.kept else "",
                    **(BLOCK_REGISTRATION_OFF if blocks_already_registered(site_packages) else {})})
        with socket.create_server(("127.0.0.1", 0), backlog=128) as sock:  # handed over; connections queue till then
            self._log, port = log, sock.getsockname()[1]
            self.process = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "--app-dir", str(APP_DIR), "--factory", f"{__name__}:create_app",
                 "--fd", str(sock.fileno()), "--log-level", "critical", "--lifespan", "on"], cwd=APP_DIR,
                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(sock.fileno(),),
                start_new_session=self.kept,
                preexec_fn=None if self.kept or sys.platform != "linux" else _die_with_parent)
        return KeptState(pid=self.process.pid, api_url=f"http://127.0.0.1:{port}/api", python=sys.executable,
                         prefect=version("prefect") if self.kept else "", keep_minutes=self.minutes,
                         started_at=time.time())

    def wait_ready(self) -> str:
        """Its API URL once it answers. A run's own server that exits first (two servers creating one database)
        is started once more; one still starting at the timeout (a busy machine) is waited for up to 4x as long."""
        started, restarted, patience = time.monotonic(), self.kept, self.timeout_s
        while not health_answers(self.api_url):
            if (how := self.exited()) is not None and not restarted:
                restarted, self.state = True, self._start(self._log)
            elif how is not None:
                raise PrefectServerError(
                    f"the {self.what} {how} before answering{self._log_tail()}\nCheck that "
                    f"PREFECT_HOME ({prefect_home()}) is writable, or start a server (`prefect server start`) and "
                    f"set PREFECT_API_URL{f'; or set {KEEP_ENV}=0 for a server per run' if self.kept else ''}.")
            elif time.monotonic() - started >= patience:
                if patience > self.timeout_s:
                    self.stop()
                    raise PrefectServerError(
                        f"the {self.what} did not answer within {patience:.0f} s ({START_TIMEOUT_ENV}, then longer "
                        "while it ran): the machine may be overloaded. Start a server (`prefect server start`) and "
                        "set PREFECT_API_URL.")
                patience = max(self.timeout_s * 4, self.timeout_s + 60)
                print(f"tooleval: the {self.what} has not answered in {self.timeout_s:.0f} s but is still starting "
                      f"(a busy machine); waiting up to {patience - self.timeout_s:.0f} s more", file=sys.stderr,
                      flush=True)
            time.sleep(0.05)
        return self.api_url

    def _log_tail(self) -> str:
        if self._log is None:
            return f" (see {self.folder / 'server.log'})"
        self._log.seek(0)
        last = "\n".join(self._log.read().decode(errors="replace").strip().splitlines()[-5:])
        return f":\n{last}" if last else ""

    def exited(self) -> str | None:
        """How the server ended, if it did ('exited with code N' when this process started it), else None."""
        if self.process is not None:
            return None if (code := self.process.poll()) is None else f"exited with code {code}"
        return None if self.state is None or alive(self.state.pid) else "ended"

    def stop(self) -> None:
        """Let the server go: the kept one stays, the run's own is ended."""
        hold, process, self._hold, self.process = self._hold, self.process, None, None
        if hold is not None:
            hold.close()
        if not self.kept and process is not None:
            self.state = None
            end_processes([process.pid], grace_s=5.0)  # if it is still running
            process.wait()

    def summary(self) -> str:
        from flows.warm_runner import mention

        how = ("started by this run" if self.started_here else "already running") + mention()
        return (f"{self.api_url} ({how}; stops after {self.state.keep_minutes:g} min with no run: `tooleval server "
                f"stop` ends it now, {KEEP_ENV}=0 starts a server per run)")


def run_server() -> LocalServer | None:
    """None when an API is configured, else the kept server (unless ``TOOLEVAL_KEEP_SERVER=0`` or it cannot be
    started: said), else the run's own."""
    if configured_api_url():
        return None
    if (minutes := keep_minutes()) > 0:
        try:
            return LocalServer(minutes).spawn()
        except (PrefectServerError, OSError) as error:
            print(f"tooleval: no kept Prefect server ({error}); starting one for this run", file=sys.stderr,
                  flush=True)
    return LocalServer(0).spawn()


def _refuses(api_url: str) -> bool:
    """Does the API's address refuse a TCP connection? (A slow server still accepts one: only a gone one does.)"""
    parts = urlsplit(api_url)
    try:
        socket.create_connection((parts.hostname or "", parts.port or {"https": 443}.get(parts.scheme, 80)), 5).close()
    except (OSError, ValueError) as error:
        return isinstance(error, ConnectionRefusedError)
    return False


def check_api_answers(api_url: str) -> None:
    """Before a run: a configured API that refuses connections is said at once."""
    if _refuses(api_url):
        raise PrefectApiLost(f"the Prefect API at {api_url} refuses connections: start it (`prefect server start`) "
                             "or unset PREFECT_API_URL so that tooleval starts a temporary server")


class ApiWatch:
    """While a run talks to Prefect: if its local server ends, or a local API refuses connections twice in a
    row, end the process at once with exit 6 instead of Prefect's retries (a killed run resumes)."""

    def __init__(self, api_url: str, server: LocalServer | None = None, interval_s: float = 0.5) -> None:
        self.api_url, self.server, self.interval_s = api_url, server, interval_s
        self._stop = threading.Event()

    def __enter__(self) -> "ApiWatch":
        if self.server is not None or urlsplit(self.api_url).hostname in LOOPBACK:
            threading.Thread(target=self._watch, name="tooleval-api-watch", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def _watch(self) -> None:
        refusals, lost = 0, ""
        while not lost and not self._stop.wait(self.interval_s):
            if (how := self.server.exited() if self.server is not None else None) is not None:
                lost = f"the {self.server.what} {how} during the run (pid {self.server.state.pid}, {self.api_url})"
            elif (refusals := refusals + 1 if _refuses(self.api_url) else 0) >= 2:
                lost = f"the Prefect API at {self.api_url} stopped answering (connection refused) during the run"
        if lost and not self._stop.is_set() and not stopping():  # a signal's stop ends the server and says so
            try:
                print(f"tooleval: failed: {lost}.\n{resume_advice('lost')}", file=sys.stderr, flush=True)
            finally:
                os._exit(EXIT_CRASHED)


def drain_prefect_client() -> None:
    """Send what Prefect's client still queues (events, logs) while its server is up: a quiet exit."""
    if "prefect" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        with contextlib.suppress(Exception):  # a worker that never started, or a server already gone
            worker.drain_all(timeout=10)


def import_before_api(prepared) -> None:
    """Import what the flow of ``prepared`` (tasks/run/prepare_run.py) would import after the API answers
    (Prefect's engines, a lexical router's bm25s), while the
    local server starts."""
    lexical = any(getattr(arm, "selector", None) == "lexical" for arm in prepared.experiment.arms)
    for name in BEFORE_API + (("bm25s", "bm25s.stopwords") if lexical else ()):
        with contextlib.suppress(ImportError):  # an optional dependency: the run says so where it needs it
            importlib.import_module(name)
