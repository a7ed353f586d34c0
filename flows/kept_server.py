"""The local Prefect server kept between runs, per Prefect home (``$PREFECT_HOME/tooleval-server/``): the run
that starts it writes ``server.json`` (the server's pid, API URL, the Python and Prefect it runs); each run
holds a shared lock on ``runs.lock`` while its process lives (the kernel drops it when the process ends,
``kill -9`` included); runs find or start it under ``spawn.lock``, so there is only ever one. The server
ends itself (``watch_idle``, a thread in its process) once no run has held it for its idle time, or once
``server.json`` no longer names it (withdrawn, replaced, or its home removed). Standard library only.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, fields
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import IO

from flows.stop_on_signal import alive

CHECK_EVERY_S = 2.0
"""How often the kept server looks whether a run holds it."""


def prefect_home(environ: "os._Environ[str] | dict[str, str]" = os.environ) -> Path:
    return Path(environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()


def state_dir(environ: "os._Environ[str] | dict[str, str]" = os.environ) -> Path:
    return prefect_home(environ) / "tooleval-server"


def health_answers(api_url: str, timeout_s: float = 1.0) -> bool:
    """The Prefect API at ``api_url`` answers ``/health`` with 200."""
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=timeout_s) as response:
            return response.status == 200
    except OSError:  # refused, reset, timed out, an HTTP error
        return False


def prefect_version() -> str:
    try:
        return version("prefect")
    except PackageNotFoundError:
        return "?"


@dataclass
class KeptState:
    pid: int
    """The server's pid."""
    api_url: str
    python: str
    prefect: str
    keep_minutes: float
    started_at: float

    @classmethod
    def read(cls, folder: Path) -> "KeptState | None":
        try:
            data = json.loads((folder / "server.json").read_text())
            return cls(**{field.name: data[field.name] for field in fields(cls)})
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def write(self, folder: Path) -> None:
        partial = folder / f"server.json.{os.getpid()}"
        partial.write_text(json.dumps(asdict(self)))
        partial.replace(folder / "server.json")

    def alive(self) -> bool:
        return alive(self.pid)

    def current(self) -> bool:
        """Started by this Python and this Prefect (an upgrade replaces it)."""
        return self.python == sys.executable and self.prefect == prefect_version()


def locked(path: Path, mode: int) -> IO[str]:
    """The file at ``path`` opened and flock-ed (``mode``: LOCK_SH / LOCK_EX, maybe | LOCK_NB)."""
    handle = open(path, "a+")
    try:
        fcntl.flock(handle.fileno(), mode)
    except OSError:
        handle.close()
        raise
    return handle


def unused(folder: Path) -> bool:
    """No run holds the server (its shared lock on runs.lock)."""
    try:
        locked(folder / "runs.lock", fcntl.LOCK_EX | fcntl.LOCK_NB).close()
    except OSError:
        return False
    return True


def _retire(folder: Path) -> bool:
    """Withdraw server.json under spawn.lock, only while still unused (a run finding the server takes its hold
    under the same lock); False when a run is finding or starting a server just now."""
    try:
        spawning = locked(folder / "spawn.lock", fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    with spawning:
        if not unused(folder):
            return False
        if (state := KeptState.read(folder)) is not None and state.pid == os.getpid():
            (folder / "server.json").unlink(missing_ok=True)
        return True


def watch_idle(minutes: float) -> None:
    """In the kept server's process: end it (SIGTERM: the server shuts down) once no run has held it for
    ``minutes``, or once server.json no longer names it."""
    folder, last_used = state_dir(), time.monotonic()
    while getattr(KeptState.read(folder), "pid", None) == os.getpid():
        if not unused(folder):
            last_used = time.monotonic()
        elif time.monotonic() - last_used >= minutes * 60 and _retire(folder):
            print(f"no run for {minutes:g} min: stopping", file=sys.stderr, flush=True)
            break
        time.sleep(CHECK_EVERY_S)
    os.kill(os.getpid(), signal.SIGTERM)


def stop_kept(folder: Path | None = None, state: KeptState | None = None, wait_s: float = 10.0) -> KeptState | None:
    """End the kept server of this Prefect home; the state it had, or None when none was running."""
    folder = folder or state_dir()
    state = state or KeptState.read(folder)
    (folder / "server.json").unlink(missing_ok=True)
    if state is None or not state.alive():
        return None
    os.kill(state.pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while state.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    if state.alive():
        os.kill(state.pid, signal.SIGKILL)
    return state


def status_lines(folder: Path | None = None) -> list[str]:
    folder = folder or state_dir()
    state = KeptState.read(folder)
    if state is None or not state.alive():
        return [f"no kept Prefect server for {folder.parent} (the next `tooleval run` starts one)"]
    return [f"kept Prefect server: {state.api_url} (pid {state.pid}, "
            f"{'answering' if health_answers(state.api_url) else 'not answering yet'})",
            f"started {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(state.started_at))}; "
            f"{'no run is using it' if unused(folder) else 'a run is using it'}; stops after "
            f"{state.keep_minutes:g} min with no run; Prefect {state.prefect}"]
