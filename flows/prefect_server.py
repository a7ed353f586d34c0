"""The Prefect API a run talks to: the server at ``PREFECT_API_URL`` when one is configured, else the local
server kept between runs (flows/kept_server.py: started by the first run, stopped after minutes without
one), or with ``TOOLEVAL_KEEP_SERVER=0`` a temporary local server started early, while the run's checks go
on, and stopped with the run.

Prefect's own ephemeral mode starts the same server (uvicorn serving ``prefect.server.api.server``) only
when the first flow run asks for it, after the parent has imported the server app (~3 s) and then waits
for it (~7 s): both on the critical path. Here the server process is spawned before anything heavy is
imported, so its start-up overlaps the label checks; the parent never imports the server app.

The temporary server dies with its parent: it is started with the parent-death signal set (Linux), so a
``kill -9`` of ``tooleval`` takes it down too, and ``stop()`` (also registered at exit) ends it on every
other way out. Its port is chosen by the kernel and bound before the server process starts: the parent
binds and listens on a loopback socket and hands that socket to the server (``uvicorn --fd``), so two runs
starting at once can never be given, or take, the same port, and a health check can only reach this run's
own server. Should the server still exit before answering, it is started once more on a new socket.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flows.kept_server import KeptServer

START_TIMEOUT_ENV = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
PR_SET_PDEATHSIG = 1
APP_DIR = Path(__file__).resolve().parent.parent
"""Where ``flows`` is imported from: the server runs flows/temporary_server_app.py (Prefect's app, built with
the garbage collector held off)."""


class PrefectServerError(RuntimeError):
    """The temporary Prefect server could not be started (the message says why and what to do)."""


class PrefectApiLost(PrefectServerError):
    """The Prefect API refuses connections (before or during a run): the message names it and what to do."""


LOST_EXIT_CODE = 6
"""flows/exit_codes.py EXIT_CRASHED (not imported: this module stays import-light for the launcher)."""


def configured_api_url() -> str | None:
    """The API a user configured (environment, Prefect profile, or an active Prefect settings context such
    as a test harness), without importing Prefect when nothing can have configured one."""
    if url := os.environ.get("PREFECT_API_URL"):
        return url
    profile = Path(os.environ.get("PREFECT_HOME", Path.home() / ".prefect")) / "profiles.toml"
    if "prefect.settings" not in sys.modules and not profile.is_file():
        return None
    from prefect.settings import PREFECT_API_URL  # settings contexts and profiles live in Prefect

    return PREFECT_API_URL.value() or None


def _listening_socket() -> socket.socket:
    """A loopback socket on a port the kernel chooses, already listening: handed to the server process as
    is (``uvicorn --fd``), so no other process can take the port between choosing it and serving on it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


BLOCK_REGISTRATION_OFF = {"PREFECT_API_BLOCKS_REGISTER_ON_START": "false",
                          "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false"}


def blocks_already_registered(site_packages: Path, environ: "os._Environ[str] | dict[str, str]" = os.environ) -> bool:
    """Has this Prefect home's database already been given the block types of the installed Prefect and its
    collections? Then the temporary server can skip block auto-registration, which imports every Prefect
    collection (prefect-dask: dask, distributed, numpy) only to hash the block registry and find it unchanged.

    True when Prefect's memo store records a registration and was written after Prefect and every
    ``prefect*`` distribution (its collections) was installed, and the database is the home's default SQLite
    file (no other database configured by environment or profile). An upgrade or a new collection makes
    the memo store older than its dist-info, so the server registers again (and rewrites the memo store)."""
    if any(key in environ for key in BLOCK_REGISTRATION_OFF):
        return False  # the user decides
    home = Path(environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    if any("DATABASE" in key or "MEMO_STORE" in key for key in environ if key.startswith("PREFECT_")):
        return False
    profiles = home / "profiles.toml"
    try:
        if profiles.is_file() and ("DATABASE" in (text := profiles.read_text()) or "MEMO_STORE" in text):
            return False
        memo = home / "memo_store.toml"
        if "block_auto_registration" not in memo.read_text():
            return False
        written = memo.stat().st_mtime
        installed = [d.stat().st_mtime for d in site_packages.glob("prefect*.dist-info")]
    except OSError:
        return False
    return bool(installed) and written > max(installed)


PATIENCE_FACTOR = 4
"""A server still starting (alive, using CPU) at the start-up timeout is waited for up to this many times it
(and at least a minute more)."""


def health_answers(api_url: str, timeout_s: float = 1.0) -> bool:
    """The Prefect API at ``api_url`` answers ``/health`` with 200."""
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=timeout_s) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def _cpu_ticks(pid: int) -> int | None:
    """User + system CPU ticks of a process (Linux /proc); None where that cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


class TemporaryServer:
    """A local Prefect server for one run: ``spawn()`` returns at once, ``wait_ready()`` blocks until it
    answers, ``stop()`` ends it."""

    kept = False

    def __init__(self, timeout_s: float | None = None) -> None:
        self.timeout_s = timeout_s or float(os.environ.get(START_TIMEOUT_ENV, "120"))
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        self._stderr = tempfile.TemporaryFile()
        self._ready = False

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def spawn(self) -> "TemporaryServer":
        spec = importlib.util.find_spec("prefect")
        if spec is None or spec.origin is None:
            raise PrefectServerError("Prefect is not installed in this environment: run `make install`")
        site_packages = Path(spec.origin).parent.parent
        sock = _listening_socket()
        self.port = sock.getsockname()[1]
        env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
               "PREFECT__SERVER_FINAL": "1", "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
               **(BLOCK_REGISTRATION_OFF if blocks_already_registered(site_packages) else {})}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "--app-dir", str(APP_DIR), "--factory",
                 "flows.temporary_server_app:create_app", "--fd", str(sock.fileno()),
                 "--log-level", "critical", "--lifespan", "on"],
                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr,
                pass_fds=(sock.fileno(),), preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        finally:
            sock.close()  # the server process holds its own copy; connections before it serves wait in the queue
        atexit.register(self.stop)
        return self

    def wait_ready(self) -> str:
        """Block until the server answers ``/api/health``; the API URL. Restarts it once on a lost port."""
        if self._ready:
            return self.api_url
        if self.process is None:
            self.spawn()
        started = time.monotonic()
        deadline = started + self.timeout_s
        restarted = extended = False
        while time.monotonic() < deadline or (not extended and self._still_starting()):
            if time.monotonic() >= deadline:  # alive and working, only slow: a busy machine, not a crash
                extended, deadline = True, started + max(self.timeout_s * PATIENCE_FACTOR, self.timeout_s + 60)
                print(f"tooleval: the temporary Prefect server has not answered in {self.timeout_s:.0f} s but is "
                      f"still starting (a busy machine); waiting up to {deadline - time.monotonic():.0f} s more",
                      file=sys.stderr, flush=True)
            code = self.process.poll()
            if code is not None:
                self._stderr.seek(0)
                stderr = self._stderr.read().decode(errors="replace")
                self._stderr.seek(0)
                self._stderr.truncate()
                if not restarted and ("address already in use" in stderr.lower() or code == 3):
                    restarted = True
                    self.spawn()
                    continue
                last = "\n".join(stderr.strip().splitlines()[-5:])
                raise PrefectServerError(
                    f"the temporary Prefect server exited with code {code} before answering"
                    + (f":\n{last}" if last else "")
                    + f"\nCheck that PREFECT_HOME ({os.environ.get('PREFECT_HOME', '~/.prefect')}) is writable, "
                    "or start a server (`prefect server start`) and set PREFECT_API_URL.")
            if health_answers(self.api_url):
                self._ready = True
                return self.api_url
            time.sleep(0.05)
        waited = time.monotonic() - started
        self.stop()
        raise PrefectServerError(
            f"the temporary Prefect server did not answer within {waited:.0f} s ({START_TIMEOUT_ENV}, "
            f"{self.timeout_s:.0f} s, then longer while it was still starting); "
            "the machine may be overloaded. Start a server (`prefect server start`) and set PREFECT_API_URL.")

    def _still_starting(self) -> bool:
        """The server process is alive and used CPU in the last second (it is starting, slowly)."""
        process = self.process
        if process is None or process.poll() is not None:
            return False
        before = _cpu_ticks(process.pid)
        time.sleep(1.0)
        return before is not None and (_cpu_ticks(process.pid) or 0) > before

    def exited(self) -> int | None:
        """The server's exit code once it has exited on its own (None while it runs or after stop())."""
        process = self.process
        return process.poll() if process is not None else None

    def stop(self) -> None:
        process, self.process, self._ready = self.process, None, False
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


_early: "TemporaryServer | KeptServer | None" = None


def local_server() -> "TemporaryServer | KeptServer":
    """The kept server (found or started) unless ``TOOLEVAL_KEEP_SERVER=0``, else a temporary one; a kept
    server that cannot be started is said once and replaced by a temporary one."""
    from flows.kept_server import KeptServer, keep_minutes

    minutes = keep_minutes()
    if minutes > 0:
        try:
            return KeptServer(minutes).spawn()
        except (PrefectServerError, OSError) as error:
            print(f"tooleval: no kept Prefect server ({error}); starting one for this run", file=sys.stderr,
                  flush=True)
    return TemporaryServer().spawn()


def spawn_early() -> None:
    """Find or spawn the local server at process start (before the heavy imports) unless an API is
    configured; ``run_server()`` hands it to the run."""
    global _early
    if _early is None and not os.environ.get("PREFECT_API_URL"):
        _early = local_server()


def run_server() -> "TemporaryServer | KeptServer | None":
    """The server a run should use: None when an API is configured, else the early one or a new one."""
    global _early
    if configured_api_url():  # e.g. a Prefect profile's API, which the launcher does not read
        if _early is not None:
            _early.stop()
            if _early.kept and _early.started_here:  # started for nothing: do not leave it waiting
                from flows.kept_server import stop_kept

                stop_kept(state=_early.state)
            _early = None
        return None
    server, _early = (_early or local_server()), None
    return server


def stop_early() -> None:
    """Stop a server spawned early that no run took (bad input, --help): called on the way out."""
    global _early
    if _early is not None:
        _early.stop()
        _early = None


def _host_port(api_url: str) -> tuple[str, int] | None:
    from urllib.parse import urlsplit

    parts = urlsplit(api_url)
    if not parts.hostname:
        return None
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def _refuses(address: tuple[str, int]) -> bool:
    """Does the API's address refuse a TCP connection? A slow or busy server still accepts one (the kernel
    queues it), so only a server that is gone answers True; a time-out is not taken for a refusal."""
    try:
        with socket.create_connection(address, timeout=5):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


def check_api_answers(api_url: str) -> None:
    """Before a run: a configured API that refuses connections is said at once (Prefect's client would
    retry it for a minute or more)."""
    address = _host_port(api_url)
    if address is not None and _refuses(address):
        raise PrefectApiLost(f"the Prefect API at {api_url} refuses connections: start it (`prefect server start`) "
                             "or unset PREFECT_API_URL so that tooleval starts a temporary server")


class ApiWatch:
    """While a run talks to Prefect: if the API goes away (the temporary server exits, or a local API
    refuses connections twice in a row), end the process at once with one message and exit 6 instead of
    letting Prefect's client retry every call with back-off for minutes. Ending abruptly is safe by
    construction: the failure drill kills runs at every step and the next run resumes (landed rows kept or
    re-registered, finished selections and task runs cached, leftovers tidied)."""

    def __init__(self, api_url: str, server: "TemporaryServer | None" = None, interval_s: float = 0.5) -> None:
        self.api_url, self.server, self.interval_s = api_url, server, interval_s
        address = _host_port(api_url)
        # a remote API is left to Prefect's retries: refusals there are rare and time-outs are not losses
        self.address = address if address is not None and (server is not None or address[0] in LOOPBACK) else None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="tooleval-api-watch", daemon=True)

    def __enter__(self) -> "ApiWatch":
        if self.address is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def _watch(self) -> None:
        refusals = 0
        while not self._stop.wait(self.interval_s):
            code = self.server.exited() if self.server is not None else None
            if code is not None:
                self._lost(f"the temporary Prefect server exited with code {code} during the run")
            refusals = refusals + 1 if _refuses(self.address) else 0
            if refusals >= 2 and not self._stop.is_set():
                self._lost(f"the Prefect API at {self.api_url} stopped answering (connection refused) during the run")

    def _lost(self, what: str) -> None:
        from flows.stop_on_signal import stopping  # import-light

        if self._stop.is_set() or stopping():  # a signal's stop ends the server itself and says so (130/143)
            self._stop.set()
            return
        try:
            from flows.progress import what_is_done  # import-light, like this module

            sys.stdout.flush()
            done = what_is_done()
            if done:  # registered (and maybe judged) before the API went: say so, nothing is to be redone
                after = ("Done before it was lost:\n  " + "\n  ".join(done) + "\nThose rows are registered for good: "
                         "no rerun is needed for them (a rerun would make a second run of them, from the cache). "
                         "What this run left undone (its reports if not written, tidying earlier runs' leftovers) "
                         "the next run into this warehouse finishes.")
            else:
                after = ("The run stops here. Landed rows are kept and finished selections and task runs are cached: "
                         "rerun the same command to resume (it repeats none of them; the next run registers or "
                         "tidies what this one left).")
            print(f"tooleval: failed: {what}.\n{after}", file=sys.stderr, flush=True)
        finally:
            os._exit(LOST_EXIT_CODE)


def drain_prefect_client() -> None:
    """Send what Prefect's client still queues (events, API logs) while its server is up, so that stopping
    the temporary server afterwards leaves nothing to fail, and nothing to print, at interpreter exit."""
    if "prefect" not in sys.modules:
        return
    try:
        from prefect.events.worker import EventsWorker
        from prefect.logging.handlers import APILogWorker
    except ImportError:
        return
    for worker in (APILogWorker, EventsWorker):
        try:
            worker.drain_all(timeout=10)
        except Exception:  # noqa: BLE001 - a worker that never started, or a server already gone: nothing to send
            pass
