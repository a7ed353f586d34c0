"""A local Prefect server kept between runs: the first ``tooleval run`` starts it, later runs use it, and it
stops by itself after ``TOOLEVAL_KEEP_SERVER`` minutes (default 10) with no run using it.

Why: with a server per run, the run cannot begin its flow before that server has imported Prefect's server
app and answered (~5 s of the ~7 s a small run costs beyond its selections, on 2 cores); a server that is
already up answers at once (docs/scale-out/speed.md). ``prefect server start`` does the same by hand.

How it is kept, per Prefect home (``$PREFECT_HOME/tooleval-server/``):
- a keeper process (``python -m flows.kept_server``, in a session of its own, its output in ``keeper.log``)
  runs the same server a run would start (flows/prefect_server.py ``TemporaryServer``, which dies with its
  keeper) and writes ``server.json`` (its pid, the API URL, the Python and Prefect it runs);
- each run holds a shared lock on ``runs.lock`` for as long as its process lives (the kernel drops it when
  the process ends, ``kill -9`` included); the keeper stops the server once it could take that lock
  exclusively, continuously, for the idle time;
- runs starting at once find or start the keeper under ``spawn.lock``, so there is only ever one; a keeper
  started by another Python or Prefect is stopped and replaced.

``TOOLEVAL_KEEP_SERVER=0`` gives each run its own temporary server again (the tests do: nothing outlives
them); ``tooleval server status`` / ``tooleval server stop`` show and end the kept one. Standard library only:
the launcher imports this before anything heavy.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import IO

from flows.prefect_server import START_TIMEOUT_ENV, PrefectServerError, TemporaryServer, health_answers

KEEP_ENV = "TOOLEVAL_KEEP_SERVER"
DEFAULT_KEEP_MINUTES = 10.0
CHECK_EVERY_S = 2.0
"""How often the keeper looks whether a run holds the server."""
APP_DIR = Path(__file__).resolve().parent.parent
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
"""Environment variables the keeper is not given: the server needs no provider's key, and it outlives the run."""


class KeptServerError(PrefectServerError):
    """The kept server could not be started or reached (the message says why and what to do)."""


class KeepSettingError(KeptServerError):
    """``TOOLEVAL_KEEP_SERVER`` is not a number of minutes (bad input)."""


def keep_minutes(environ: "os._Environ[str] | dict[str, str]" = os.environ) -> float:
    """Minutes a kept server waits without a run before it stops; 0 = no kept server (a server per run)."""
    text = environ.get(KEEP_ENV, "").strip()
    if not text:
        return DEFAULT_KEEP_MINUTES
    try:
        return max(0.0, float(text))
    except ValueError:
        raise KeepSettingError(f"{KEEP_ENV}={text!r}: give minutes (e.g. 10), or 0 for a server per run") from None


def state_dir(environ: "os._Environ[str] | dict[str, str]" = os.environ) -> Path:
    home = Path(environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    return home / "tooleval-server"


def prefect_version() -> str:
    try:
        return version("prefect")
    except PackageNotFoundError:
        return "?"


@dataclass
class KeptState:
    pid: int
    """The keeper's pid (the server is its child)."""
    api_url: str
    python: str
    prefect: str
    keep_minutes: float
    started_at: float

    @classmethod
    def read(cls, folder: Path) -> "KeptState | None":
        try:
            data = json.loads((folder / "server.json").read_text())
            return cls(**{name: data[name] for name in cls.__dataclass_fields__})
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, folder: Path) -> None:
        partial = folder / f"server.json.{os.getpid()}"
        partial.write_text(json.dumps(self.__dict__))
        partial.replace(folder / "server.json")

    def alive(self) -> bool:
        return _alive(self.pid)

    def current(self) -> bool:
        """Started by this Python and this Prefect (an upgrade replaces it)."""
        return self.python == sys.executable and self.prefect == prefect_version()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped by a parent that is still running) is not alive
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _locked(path: Path, mode: int) -> IO[str]:
    """The file at ``path`` opened and flock-ed (``mode``: LOCK_SH / LOCK_EX, maybe | LOCK_NB)."""
    handle = open(path, "a+")
    try:
        fcntl.flock(handle.fileno(), mode)
    except OSError:
        handle.close()
        raise
    return handle


class KeptServer:
    """A run's use of the kept server: ``spawn()`` finds or starts it and holds it for this process,
    ``wait_ready()`` blocks until it answers, ``stop()`` lets it go (the server itself stays)."""

    kept = True

    def __init__(self, minutes: float, timeout_s: float | None = None) -> None:
        self.minutes = minutes
        self.timeout_s = timeout_s or float(os.environ.get(START_TIMEOUT_ENV, "120"))
        self.folder = state_dir()
        self.state: KeptState | None = None
        self.started_here = False
        self._hold: IO[str] | None = None
        self._ready = False

    @property
    def api_url(self) -> str:
        assert self.state is not None
        return self.state.api_url

    def spawn(self) -> "KeptServer":
        self.folder.mkdir(parents=True, exist_ok=True)
        with _locked(self.folder / "spawn.lock", fcntl.LOCK_EX):
            state = KeptState.read(self.folder)
            if state is not None and state.alive() and not state.current():
                stop_kept(self.folder, state)
                state = None
            if state is None or not state.alive():
                state = self._start_keeper()
                self.started_here = True
            self._hold = _locked(self.folder / "runs.lock", fcntl.LOCK_SH)  # held until this process ends
            self.state = state
        return self

    def _start_keeper(self) -> KeptState:
        (self.folder / "server.json").unlink(missing_ok=True)
        log = open(self.folder / "keeper.log", "w")
        env = {name: value for name, value in os.environ.items() if not SECRET_NAME.search(name)}
        env["PYTHONPATH"] = os.pathsep.join([str(APP_DIR), *filter(None, [os.environ.get("PYTHONPATH")])])
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "flows.kept_server", "--minutes", str(self.minutes)], cwd=APP_DIR, env=env,
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True)
        finally:
            log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the keeper writes server.json once its socket is bound (~0.1 s)
            state = KeptState.read(self.folder)
            if state is not None and state.pid == process.pid:
                return state
            if process.poll() is not None:
                break
            time.sleep(0.02)
        raise KeptServerError(f"the kept Prefect server's keeper did not start: {self._log_tail()}"
                              f"; set {KEEP_ENV}=0 for a server per run")

    def _log_tail(self) -> str:
        try:
            lines = (self.folder / "keeper.log").read_text(errors="replace").strip().splitlines()
        except OSError:
            lines = []
        return " | ".join(lines[-3:]) or f"see {self.folder / 'keeper.log'}"

    def wait_ready(self) -> str:
        """Block until the kept server answers ``/api/health``; the API URL."""
        if self._ready:
            return self.api_url
        if self.state is None:
            self.spawn()
        assert self.state is not None
        deadline = time.monotonic() + self.timeout_s * 2
        while time.monotonic() < deadline:
            if health_answers(self.api_url):
                self._ready = True
                return self.api_url
            if not self.state.alive():
                raise KeptServerError(f"the kept Prefect server stopped before answering: {self._log_tail()}; "
                                      f"set {KEEP_ENV}=0 for a server per run")
            time.sleep(0.05)
        raise KeptServerError(f"the kept Prefect server did not answer within {self.timeout_s * 2:.0f} s "
                              f"({self.folder / 'keeper.log'}); set {KEEP_ENV}=0 for a server per run")

    def exited(self) -> int | None:
        """1 once the keeper (and so the server) is gone, else None (ApiWatch reads this)."""
        return None if self.state is None or self.state.alive() else 1

    def stop(self) -> None:
        """This run lets the server go (it stays for the next run, up to its idle time)."""
        hold, self._hold = self._hold, None
        if hold is not None:
            hold.close()

    def summary(self) -> str:
        how = "started by this run" if self.started_here else "already running"
        minutes = self.state.keep_minutes if self.state is not None else self.minutes
        return (f"{self.api_url} ({how}; stops after {minutes:g} min with no run: `tooleval server stop` "
                f"ends it now, {KEEP_ENV}=0 starts a server per run)")


def stop_kept(folder: Path | None = None, state: KeptState | None = None, wait_s: float = 10.0) -> KeptState | None:
    """End the kept server of this Prefect home (its keeper stops the server); the state it had, or None."""
    folder = folder or state_dir()
    state = state or KeptState.read(folder)
    if state is None or not state.alive():
        (folder / "server.json").unlink(missing_ok=True)
        return None
    os.kill(state.pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while state.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    if state.alive():
        os.kill(state.pid, signal.SIGKILL)
    (folder / "server.json").unlink(missing_ok=True)
    return state


def status_lines(folder: Path | None = None) -> list[str]:
    folder = folder or state_dir()
    state = KeptState.read(folder)
    if state is None or not state.alive():
        return [f"no kept Prefect server for {folder.parent} (the next `tooleval run` starts one)"]
    in_use = not unused(folder)
    return [f"kept Prefect server: {state.api_url} (keeper pid {state.pid}, "
            f"{'answering' if health_answers(state.api_url) else 'not answering yet'})",
            f"started {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(state.started_at))}; "
            f"{'a run is using it' if in_use else 'no run is using it'}; stops after {state.keep_minutes:g} min "
            f"with no run; Prefect {state.prefect}"]


def unused(folder: Path) -> bool:
    """No run holds the server (its shared lock on runs.lock)."""
    try:
        _locked(folder / "runs.lock", fcntl.LOCK_EX | fcntl.LOCK_NB).close()
    except OSError:
        return False
    return True


def _retire(folder: Path) -> bool:
    """Withdraw server.json, under spawn.lock and only while still unused: a run finding the server takes
    its hold under the same lock, so it either holds the server before this looks or finds no server. False
    when a run is finding or starting a server just now (try again later)."""
    try:
        spawning = _locked(folder / "spawn.lock", fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    with spawning:
        if not unused(folder):
            return False
        _withdraw(folder)
        return True


def _withdraw(folder: Path) -> None:
    """Remove server.json when it names this keeper (a replacing keeper may have written its own since)."""
    if (current := KeptState.read(folder)) is not None and current.pid == os.getpid():
        (folder / "server.json").unlink(missing_ok=True)


class _Stopped(Exception):
    """SIGTERM or SIGINT reached the keeper (``tooleval server stop``, a replacing run)."""


def _raise_stopped(*_: object) -> None:
    raise _Stopped


def keep(minutes: float) -> int:
    """The keeper: start the server, say where it is, stop it after ``minutes`` with no run holding it, or
    at once on SIGTERM / SIGINT (even while the server is still starting)."""
    folder = state_dir()
    signal.signal(signal.SIGTERM, _raise_stopped)
    signal.signal(signal.SIGINT, _raise_stopped)
    server = TemporaryServer().spawn()  # dies with this process (parent-death signal)
    state = KeptState(pid=os.getpid(), api_url=server.api_url, python=sys.executable, prefect=prefect_version(),
                      keep_minutes=minutes, started_at=time.time())
    try:
        state.write(folder)
        server.wait_ready()
        print(f"serving {server.api_url}", flush=True)
        last_used = time.monotonic()
        while True:
            time.sleep(CHECK_EVERY_S)
            if server.exited() is not None:
                print(f"the server exited with code {server.exited()}", flush=True)
                return 1
            if not unused(folder):
                last_used = time.monotonic()  # a run holds it
            elif time.monotonic() - last_used >= minutes * 60 and _retire(folder):
                print(f"no run for {minutes:g} min: stopping", flush=True)
                return 0
    except _Stopped:
        print("stopped (signal)", flush=True)
        return 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the clean-up below is not interrupted
        _withdraw(folder)
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.kept_server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=DEFAULT_KEEP_MINUTES)
    return keep(parser.parse_args(argv).minutes)


if __name__ == "__main__":
    sys.exit(main())
