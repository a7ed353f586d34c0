"""The Prefect API a run talks to: the one at ``PREFECT_API_URL`` (or a Prefect profile's) when configured,
else a local server, kept between runs (flows/kept_server.py; it stops after ``TOOLEVAL_KEEP_SERVER``
minutes, default 10, with no run) or with ``TOOLEVAL_KEEP_SERVER=0`` the run's own, which dies with it.

The launcher spawns the local server before anything heavy is imported (standard library only here), so
its start-up overlaps the run's checks. The server is Prefect's own app under uvicorn, serving a loopback
socket the spawning process has bound and handed over (``uvicorn --fd``): no other process can take the
port, and a health check reaches only that server. While a run talks to the API, ``ApiWatch`` ends it at
once with exit 6 if the API goes away, instead of Prefect's client retrying every call for minutes.
"""

from __future__ import annotations

import atexit
import ctypes
import fcntl
import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from flows.exit_codes import EXIT_CRASHED
from flows.kept_server import KeptState, health_answers, locked, prefect_home, prefect_version, state_dir, stop_kept
from flows.server_app import MINUTES_ENV
from flows.stop_on_signal import proc_stat, resume_advice, stopping

KEEP_ENV = "TOOLEVAL_KEEP_SERVER"
START_TIMEOUT_ENV = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
APP_DIR = Path(__file__).resolve().parent.parent
BLOCK_REGISTRATION_OFF = {"PREFECT_API_BLOCKS_REGISTER_ON_START": "false",
                          "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false"}
PATIENCE_FACTOR = 4
"""A server still starting (alive, using CPU) at the timeout is waited for up to this many times it."""
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
"""Environment variables a kept server is not given: it needs no provider's key, and it outlives the run."""
LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


class PrefectServerError(RuntimeError):
    """The local Prefect server could not be started (the message says why and what to do)."""


class PrefectApiLost(PrefectServerError):
    """The Prefect API refuses connections (before or during a run)."""


class KeepSettingError(PrefectServerError):
    """``TOOLEVAL_KEEP_SERVER`` is not a number of minutes (bad input)."""


def keep_minutes(environ: "os._Environ[str] | dict[str, str]" = os.environ) -> float:
    """Minutes a kept server waits without a run before it stops; 0 = a server per run."""
    text = environ.get(KEEP_ENV, "").strip()
    try:
        return max(0.0, float(text)) if text else 10.0
    except ValueError:
        raise KeepSettingError(f"{KEEP_ENV}={text!r}: give minutes (e.g. 10), or 0 for a server per run") from None


def configured_api_url() -> str | None:
    """The API a user configured (environment, Prefect profile, or an active settings context such as a test
    harness), without importing Prefect when nothing can have configured one."""
    if url := os.environ.get("PREFECT_API_URL"):
        return url
    if "prefect.settings" not in sys.modules and not (prefect_home() / "profiles.toml").is_file():
        return None
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or None


def blocks_already_registered(site_packages: Path, environ: "os._Environ[str] | dict[str, str]" = os.environ) -> bool:
    """Has this Prefect home's default SQLite database been given the block types of the installed Prefect and
    its collections (``prefect*`` distributions)? Then the server can skip block auto-registration, which
    imports every collection only to find the registry unchanged. True when Prefect's memo store records a
    registration written after every such distribution was installed, and neither the environment nor the
    profile names another database, memo store or registration setting."""
    home = prefect_home(environ)
    if any(key in environ for key in BLOCK_REGISTRATION_OFF) or any(
            key.startswith("PREFECT_") and ("DATABASE" in key or "MEMO_STORE" in key) for key in environ):
        return False
    try:
        profiles = home / "profiles.toml"
        if profiles.is_file() and any(word in profiles.read_text() for word in ("DATABASE", "MEMO_STORE")):
            return False
        memo = home / "memo_store.toml"
        installed = [d.stat().st_mtime for d in site_packages.glob("prefect*.dist-info")]
        return "block_auto_registration" in memo.read_text() and bool(installed) and \
            memo.stat().st_mtime > max(installed)
    except OSError:
        return False


def _die_with_parent() -> None:  # in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class LocalServer:
    """A run's local Prefect server: kept between runs (``minutes`` > 0: found or started, held while this
    process lives) or the run's own (0: it dies with this process; one that exits before answering, as when two
    servers create one fresh database at once, is started once more). ``spawn()`` returns at once,
    ``wait_ready()`` blocks until it answers (its API URL), ``stop()`` lets it go (and ends the run's own)."""

    def __init__(self, minutes: float = 0, timeout_s: float | None = None) -> None:
        self.minutes, self.kept = minutes, minutes > 0
        self.what = "kept Prefect server" if self.kept else "temporary Prefect server"
        self.timeout_s = timeout_s or float(os.environ.get(START_TIMEOUT_ENV, "120"))
        self.folder = state_dir()
        self.state: KeptState | None = None
        self.process: subprocess.Popen | None = None
        self.started_here = False
        self._hold = self._log = None

    @property
    def api_url(self) -> str:
        assert self.state is not None
        return self.state.api_url

    @property
    def port(self) -> int:
        return int(self.api_url.rsplit(":", 1)[1].split("/")[0])

    def spawn(self) -> "LocalServer":
        if not self.kept:
            self.state, self.started_here = self._start(tempfile.TemporaryFile()), True
            atexit.register(self.stop)
            return self
        self.folder.mkdir(parents=True, exist_ok=True)
        with locked(self.folder / "spawn.lock", fcntl.LOCK_EX):
            state = KeptState.read(self.folder)
            if state is not None and state.alive() and not state.current():
                stop_kept(self.folder, state)  # another Python or Prefect: replaced
                state = None
            if state is None or not state.alive():
                (state := self._start(open(self.folder / "server.log", "w+b"))).write(self.folder)
                self.started_here = True
            self._hold = locked(self.folder / "runs.lock", fcntl.LOCK_SH)  # held until this process ends
            self.state = state
        return self

    def _start(self, log) -> KeptState:
        spec = importlib.util.find_spec("prefect")
        if spec is None or spec.origin is None:
            raise PrefectServerError("Prefect is not installed in this environment: run `make install`")
        env = {name: value for name, value in os.environ.items() if not (self.kept and SECRET_NAME.search(name))}
        env.update({"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1",
                    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
                    **({MINUTES_ENV: str(self.minutes)} if self.kept else {}),
                    **(BLOCK_REGISTRATION_OFF if blocks_already_registered(Path(spec.origin).parent.parent) else {})})
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:  # the server holds its own copy
            sock.bind(("127.0.0.1", 0))
            sock.listen(128)  # connections before it serves wait in the queue
            self._log, port = log, sock.getsockname()[1]
            self.process = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "--app-dir", str(APP_DIR), "--factory", "flows.server_app:create_app",
                 "--fd", str(sock.fileno()), "--log-level", "critical", "--lifespan", "on"], cwd=APP_DIR,
                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(sock.fileno(),),
                start_new_session=self.kept,
                preexec_fn=None if self.kept or sys.platform != "linux" else _die_with_parent)
        return KeptState(pid=self.process.pid, api_url=f"http://127.0.0.1:{port}/api", python=sys.executable,
                         prefect=prefect_version() if self.kept else "", keep_minutes=self.minutes,
                         started_at=time.time())

    def wait_ready(self) -> str:
        """Block until the server answers; its API URL. A server still starting (alive and using CPU) at the
        timeout is waited for longer, with one line saying so."""
        if self.state is None:
            self.spawn()
        started, extended, restarted = time.monotonic(), False, self.kept
        deadline = started + self.timeout_s
        while not health_answers(self.api_url):
            if (code := self.exited()) is not None and not restarted:  # e.g. two servers creating one database
                restarted, self.state = True, self._start(self._log)
                continue
            if code is not None:
                raise PrefectServerError(
                    f"the {self.what} exited with code {code} before answering{self._log_tail()}\nCheck that "
                    f"PREFECT_HOME ({prefect_home()}) is writable, or start a server (`prefect server start`) and "
                    f"set PREFECT_API_URL{f'; or set {KEEP_ENV}=0 for a server per run' if self.kept else ''}.")
            if time.monotonic() >= deadline:
                if extended or not self._still_starting():
                    self.stop()
                    raise PrefectServerError(
                        f"the {self.what} did not answer within {time.monotonic() - started:.0f} s "
                        f"({START_TIMEOUT_ENV}, {self.timeout_s:.0f} s, then longer while it was still starting); "
                        "the machine may be overloaded. Start a server (`prefect server start`) and set "
                        "PREFECT_API_URL.")
                extended, deadline = True, started + max(self.timeout_s * PATIENCE_FACTOR, self.timeout_s + 60)
                print(f"tooleval: the {self.what} has not answered in {self.timeout_s:.0f} s but is still starting "
                      f"(a busy machine); waiting up to {deadline - time.monotonic():.0f} s more",
                      file=sys.stderr, flush=True)
            time.sleep(0.05)
        return self.api_url

    def _log_tail(self) -> str:
        if self._log is None:
            return f" (see {self.folder / 'server.log'})"
        self._log.seek(0)
        last = "\n".join(self._log.read().decode(errors="replace").strip().splitlines()[-5:])
        return f":\n{last}" if last else ""

    def _still_starting(self) -> bool:
        """The server process is alive and used CPU in the last second."""
        def ticks() -> int:
            fields = proc_stat(self.state.pid)
            return int(fields[11]) + int(fields[12]) if len(fields) > 12 else 0
        before = ticks()
        time.sleep(1.0)
        return self.exited() is None and ticks() > before

    def exited(self) -> int | None:
        """The server's exit code once it has ended on its own (1 when not its parent); None while it runs
        or after stop()."""
        if self.process is not None:
            return self.process.poll()
        return None if self.state is None or self.state.alive() else 1

    def stop(self) -> None:
        """Let the server go: the kept one stays for the next run, the run's own is ended."""
        hold, process, self._hold, self.process = self._hold, self.process, None, None
        if hold is not None:
            hold.close()
        if not self.kept:
            self.state = None
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    def summary(self) -> str:
        how = "started by this run" if self.started_here else "already running"
        return (f"{self.api_url} ({how}; stops after {self.state.keep_minutes:g} min with no run: `tooleval server "
                f"stop` ends it now, {KEEP_ENV}=0 starts a server per run)")


_early: LocalServer | None = None


def local_server() -> LocalServer:
    """The kept server (found or started) unless ``TOOLEVAL_KEEP_SERVER=0``, else the run's own; a kept server
    that cannot be started is said once and replaced by the run's own."""
    if (minutes := keep_minutes()) > 0:
        try:
            return LocalServer(minutes).spawn()
        except (PrefectServerError, OSError) as error:
            print(f"tooleval: no kept Prefect server ({error}); starting one for this run", file=sys.stderr,
                  flush=True)
    return LocalServer(0).spawn()


def spawn_early() -> None:
    """Find or spawn the local server at process start (before the heavy imports) unless the environment
    configures an API; ``run_server()`` hands it to the run."""
    global _early
    if _early is None and not os.environ.get("PREFECT_API_URL"):
        _early = local_server()


def run_server() -> LocalServer | None:
    """The server a run should use: None when an API is configured (a profile's too, which the launcher does
    not read: a kept server it started for nothing is stopped), else the early one or a new one."""
    global _early
    server, _early = _early, None
    if configured_api_url():
        if server is not None:
            server.stop()
            if server.kept and server.started_here:
                stop_kept(state=server.state)
        return None
    return server or local_server()


def stop_early() -> None:
    """Stop a server spawned early that no run took (bad input, --help): called on the way out."""
    global _early
    server, _early = _early, None
    if server is not None:
        server.stop()


def _refuses(api_url: str) -> bool:
    """Does the API's address refuse a TCP connection? A slow server still accepts one (the kernel queues it):
    only a server that is gone answers True."""
    parts = urlsplit(api_url)
    try:
        with socket.create_connection((parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)),
                                      timeout=5):
            return False
    except ConnectionRefusedError:
        return True
    except (OSError, ValueError):
        return False


def check_api_answers(api_url: str) -> None:
    """Before a run: a configured API that refuses connections is said at once."""
    if _refuses(api_url):
        raise PrefectApiLost(f"the Prefect API at {api_url} refuses connections: start it (`prefect server start`) "
                             "or unset PREFECT_API_URL so that tooleval starts a temporary server")


class ApiWatch:
    """While a run talks to Prefect: if the API goes away (its local server ends, or a local API refuses
    connections twice in a row), end the process at once with one message and exit 6. Safe by construction:
    a killed run resumes (landed rows kept, finished items cached, leftovers tidied by the next run). A remote
    API is left to Prefect's retries."""

    def __init__(self, api_url: str, server: LocalServer | None = None, interval_s: float = 0.5) -> None:
        self.api_url, self.server, self.interval_s = api_url, server, interval_s
        self.local = server is not None or urlsplit(api_url).hostname in LOOPBACK
        self._stop = threading.Event()

    def __enter__(self) -> "ApiWatch":
        if self.local:
            threading.Thread(target=self._watch, name="tooleval-api-watch", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def _watch(self) -> None:
        refusals = 0
        while not self._stop.wait(self.interval_s):
            if (code := self.server.exited() if self.server is not None else None) is not None:
                self._lost(f"the {self.server.what} exited with code {code} during the run")
            refusals = refusals + 1 if _refuses(self.api_url) else 0
            if refusals >= 2:
                self._lost(f"the Prefect API at {self.api_url} stopped answering (connection refused) during the run")

    def _lost(self, what: str) -> None:
        if self._stop.is_set() or stopping():  # a signal's stop ends the server itself and says so (130/143)
            self._stop.set()
            return
        try:
            print(f"tooleval: failed: {what}.\n{resume_advice('lost')}", file=sys.stderr, flush=True)
        finally:
            os._exit(EXIT_CRASHED)


def drain_prefect_client() -> None:
    """Send what Prefect's client still queues (events, API logs) while its server is up, so that stopping the
    server afterwards leaves nothing to fail, or to print, at interpreter exit."""
    if "prefect" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        try:
            worker.drain_all(timeout=10)
        except Exception:  # noqa: BLE001 - a worker that never started, or a server already gone
            pass
