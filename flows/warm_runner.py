"""The warm runner: a process beside the kept Prefect server that has already imported what a run imports, and forks
one child per ``tooleval run`` / ``tooleval tasks run`` handed to it, so that a run skips the imports. Standard
library only.

One per Prefect home, in the kept server's folder (flows/prefect_server.py): ``warm.json`` names it and the socket
where runs reach it (``warm.PID.sock``, 0600, its own: a runner removes only its own), ``warm.log`` holds what it
says. A cold run that used the kept server starts it at its very end (none alive, or the one alive refused that
run), detached and without secret-named variables, with the run's environment and the list of modules the run
imported. It ends itself after ``TOOLEVAL_KEEP_SERVER`` minutes with no job, once ``server.json`` no longer names
the server it was started beside (``tooleval server stop``, a replaced server, a removed home) or ``warm.json`` no
longer names it (replaced), on SIGTERM, and when it cannot accept a run (out of file descriptors): it then takes
no more runs and ends once the runs it holds have ended.

The hand-over (``hand_over``, called by flows/launch.py before anything heavy is imported): the run sends its argv,
working folder, environment, its stdin/stdout/stderr and a stamp of what the imports depend on (the Python, its
flags and path, the project's source files, the installed packages, Prefect's settings files) and of what a process
inherits besides its environment (umask, limits, CPUs, niceness, namespaces). The runner refuses
unless the stamp and the environment (but for secret-named variables and ``SHELL_NOISE``) equal its own and no file
of a module it imported (a plug-in's, an installed package's) has changed since (a secret-named ``PREFECT_``
variable, an API key, makes every run cold); then its child takes the run's streams, environment, folder and argv
and does what the console script does after its first line. The runner tells the run its child's pid, then how the
child ended; it kills the child when the run's end of the connection closes (the run was killed). The run forwards
SIGINT, SIGTERM and SIGHUP to the child by its pidfd (not one it ignores, as under ``nohup``), which holds them
from its fork until its handlers are set, and exits with the child's code (128+N for a signal N). Refused,
unreachable or stale: the run goes on cold, as it would without a runner. ``TOOLEVAL_WARM_RUN=0`` turns it off."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Mapping

WARM_ENV = "TOOLEVAL_WARM_RUN"
SHELL_NOISE = ("PWD", "OLDPWD", "SHLVL", "_", "COLUMNS", "LINES")
"""Variables that differ between shells and terminals and change nothing a run imports (besides ``TERM*``)."""
PACKAGES = ("flows", "tasks", "schemas", "warehouse")
SOURCES = (".py", ".sql", ".yaml")
"""The kinds of file the project's packages read their code, views and prices from (not data)."""
WAREHOUSE_DATA = ("rows", "reports", "cache", "registrations", "task_runs", "task_calls")
"""The default warehouse's data folders inside warehouse/ (every run writes there): not walked."""
PREFECT_FILES = (".env", "prefect.toml", "pyproject.toml")
"""Files in the working folder Prefect's settings read when it is imported."""
ANSWER_S = 5.0  # how long a run waits for the runner to accept or refuse it
ALWAYS = ("flows.cli", "flows.api", "flows.evaluate", "flows.task_runners", "prefect.flow_engine",
          "prefect.task_engine")
"""Imported by every runner, besides what the run that started it imported (it may have ended early)."""
LOG_BYTES = 1 << 20  # warm.log is started afresh by a runner starting when it is larger
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Passed on by a run to its child; held for the child from its fork until its own handlers are set."""
_warm = False
try:
    START: tuple[list[str], str | None] = (list(sys.path), os.getcwd())
except OSError:  # a removed working folder
    START = (list(sys.path), None)
"""The run's path and working folder before anything it imports could change them: its runner's."""


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """Runs may start warm: not turned off, the kept server used (not ``PREFECT_API_URL``, not a server per run)."""
    from flows.prefect_server import keep_minutes

    return environ.get(WARM_ENV, "").strip() != "0" and "PREFECT_API_URL" not in environ and \
        keep_minutes(environ) > 0 and sys.platform == "linux"  # pidfds, PR_SET_PDEATHSIG


def mention() -> str:
    """What a run's ``Prefect:`` line adds when the run started warm."""
    return "; warm start" if _warm else ""


def _folder(environ: Mapping[str, str]) -> Path:
    from flows.prefect_server import state_dir  # standard library only

    return state_dir(environ)


def _secret(name: str) -> bool:
    from flows.prefect_server import SECRET_NAME

    return bool(SECRET_NAME.search(name))


def compared(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables a client's and the runner's environments must agree on."""
    return {name: value for name, value in environ.items()
            if not (_secret(name) or name in SHELL_NOISE or name == WARM_ENV or name.startswith("TERM"))}


def _stat(path: str) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size


def _files(folder: str, found: list[object], skip: tuple[str, ...] = ()) -> None:
    """(path, mtime, size) of every source file (``SOURCES``) under ``folder`` but in the folders ``skip`` names
    and Python's byte code, in a stable order."""
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda entry: entry.name):
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__" and entry.name not in skip:
                    _files(entry.path, found)
            elif entry.name.endswith(SOURCES):
                with contextlib.suppress(OSError):
                    found.append((entry.path, entry.stat().st_mtime_ns, entry.stat().st_size))


def _process() -> list[object]:
    """What a process hands its children besides its environment: umask, limits, CPUs, niceness, namespaces (a
    network of its own, or none)."""
    import resource

    mask = os.umask(0o022)
    os.umask(mask)
    spaces = []
    with contextlib.suppress(OSError):
        spaces = sorted((name, os.readlink(f"/proc/self/ns/{name}")) for name in os.listdir("/proc/self/ns"))
    return [mask, [resource.getrlimit(getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_")],
            sorted(os.sched_getaffinity(0)), os.nice(0), spaces]


START_PROCESS = _process()


def stamp(environ: Mapping[str, str]) -> str:
    """What the imports of a run depend on, as one hash: the interpreter, its flags and path (each folder's
    mtime: an install or removal changes it), every source file of the project's packages, Prefect's profiles and the
    settings files of the working folder; and what the process inherits besides its environment (a child takes
    the runner's)."""
    import hashlib

    from flows.prefect_server import prefect_home

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parts: list[object] = [sys.executable, sys.version, sys.flags, sys._xoptions, sys.path,
                           [_stat(entry or ".") for entry in sys.path],
                           _stat(str(prefect_home(environ) / "profiles.toml")), [_stat(name) for name in PREFECT_FILES],
                           _process()]
    for package in PACKAGES:
        _files(os.path.join(root, package), parts, WAREHOUSE_DATA if package == "warehouse" else ())
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _address(path: Path) -> str:
    """A unix socket's address: the path, or through /proc when it is longer than a socket address allows."""
    if len(os.fsencode(path)) < 100:
        return str(path)
    folder = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)  # left open: the address names it
    return f"/proc/self/fd/{folder}/{path.name}"


def _read_state(folder: Path) -> dict:
    try:
        return json.loads((folder / "warm.json").read_text())
    except (OSError, ValueError):
        return {}


def _write_state(folder: Path, state: dict) -> None:
    from tasks.files.atomic_write import write_atomic

    write_atomic(folder / "warm.json", json.dumps(state), durable=False)  # damaged after a crash: read as no runner


def _alive(pid: object) -> bool:
    from flows.stop_on_signal import alive

    return isinstance(pid, int) and alive(pid)


# ------------------------------------------------------------------------------------------------------------
# The run's side
# ------------------------------------------------------------------------------------------------------------


class Refused(str):
    """Why the runner refused a run (the cold run then starts a runner in its place)."""


def hand_over(environ: Mapping[str, str]) -> Refused | None:
    """Run this command (``sys.argv``, ``environ``: the environment as given) in a warm child, if a runner for
    this Prefect home accepts it: then this process exits with the child's code and never returns. Else None (no
    runner answered) or why it refused."""
    if not enabled(environ) or any(_secret(name) for name in environ if name.startswith("PREFECT_")) or \
            None in (sys.__stdin__, sys.__stdout__, sys.__stderr__):  # a stream closed at start: its number would
        return None  # be the socket's, which a child given it would keep (a kill -9 of the run would not end it)
    folder = _folder(environ)
    if not (state := _read_state(folder)).get("ready"):
        return None
    child: list[int] = []  # a pidfd: a signal can never reach another process that took the child's pid
    pending: list[int] = []

    def forward(signum: int, frame: object) -> None:
        if child:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(child[0], signum)
        else:
            pending.append(signum)

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED  # one ignored (nohup) stays so
                if signal.getsignal(signum) != signal.SIG_IGN}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        try:
            client.settimeout(ANSWER_S)
            client.connect(_address(folder / str(state.get("socket"))))
        except OSError:  # no runner there (a socket left by one that died): a cold run
            answer = {"refused": None}
        else:
            try:
                request = json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": dict(environ),
                                      "stamp": stamp(environ)}).encode()
                message = struct.pack("!I", len(request)) + request
                client.sendall(message[socket.send_fds(client, [message], [0, 1, 2]):])
                lines = client.makefile("rb")
                answer = json.loads(lines.readline() or b"{}")
                if "pid" in answer:
                    answer["pidfd"] = os.pidfd_open(answer["pid"])  # the child waits for the byte: it is there
                    client.sendall(b"g")  # from here the child runs: its child waits for this
            except (OSError, ValueError) as error:  # a runner that does not answer is replaced
                answer = {"refused": f"no answer ({error!r})"}
        if "pid" not in answer:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            for signum in pending:
                os.kill(os.getpid(), signum)
            return None if answer.get("refused") is None else Refused(answer["refused"])
        child.append(answer["pidfd"])

        def suspend(signum: int, frame: object) -> None:  # Ctrl-Z stops the child too; `fg` continues both
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(child[0], signal.SIGSTOP)
            signal.signal(signal.SIGTSTP, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTSTP)
            signal.signal(signal.SIGTSTP, suspend)
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(child[0], signal.SIGCONT)

        if signal.getsignal(signal.SIGTSTP) != signal.SIG_IGN:
            signal.signal(signal.SIGTSTP, suspend)
        for signum in pending:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(child[0], signum)
        try:
            client.settimeout(None)
            ended = json.loads(lines.readline() or b"{}")
        except (OSError, ValueError):
            ended = {}
    if "code" not in ended:  # the runner ended during the run, and its child with it
        print("tooleval: failed: the warm runner ended during the run; rerun the same command to resume "
              f"({WARM_ENV}=0 runs without it)", file=sys.stderr, flush=True)
        from flows.exit_codes import EXIT_CRASHED

        os._exit(EXIT_CRASHED)
    code = ended["code"]
    os._exit(code if code >= 0 else 128 - code)


def start(environ: Mapping[str, str], refused: Refused | None) -> None:
    """At the end of a cold run that used the kept server: start a runner for the next runs, unless one is
    alive that did not refuse this run. Never raises: the next run is cold if this fails."""
    try:
        from flows.prefect_server import KeptState

        folder = _folder(environ)
        server = KeptState.read(folder)
        if not enabled(environ) or server is None or not _alive(server.pid):
            return
        state = _read_state(folder)
        if _alive(state.get("pid")) and refused is None:
            return
        if _process() != START_PROCESS:  # a runner would inherit what the run changed: no run would match it
            raise RuntimeError("the run changed its umask, limits, CPUs, niceness or namespaces")
        _launch(folder, environ, server.pid)
    except Exception as error:  # noqa: BLE001 - the run is over; this only makes the next one faster
        with contextlib.suppress(OSError):
            with open(_folder(environ) / "warm.log", "a") as log:
                print(f"{time.strftime('%H:%M:%S')} not started: {error!r}", file=log)


def _launch(folder: Path, environ: Mapping[str, str], server_pid: int) -> None:
    import subprocess

    from tasks.files.atomic_write import write_atomic

    modules = [name for name in sys.modules if not name.startswith("__")]
    write_atomic(folder / "warm.modules", json.dumps(modules), durable=False)
    boot = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); from flows.warm_runner import serve; "
            "serve(int(sys.argv[2]))")
    log_size = _stat(str(folder / "warm.log")) or (0, 0)
    with open(folder / "warm.log", "ab" if log_size[1] < LOG_BYTES else "wb") as log:
        process = subprocess.Popen(
            [sys.executable, *subprocess._args_from_interpreter_flags(), "-c", boot, json.dumps(START[0]),
             str(server_pid)], env={name: value for name, value in environ.items() if not _secret(name)},
            cwd=START[1], stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True)
    _write_state(folder, {"pid": process.pid, "server": server_pid, "ready": False, "started_at": time.time()})


def stop(environ: Mapping[str, str] = os.environ, grace_s: float = 10.0) -> int | None:
    """End this Prefect home's runner (its jobs are told to stop); its pid, or None when none was alive."""
    from flows.stop_on_signal import end_processes

    folder = _folder(environ)
    pid = _read_state(folder).get("pid")
    with contextlib.suppress(OSError):
        (folder / "warm.json").unlink()
    if not _alive(pid):
        return None
    end_processes([pid], grace_s)
    return pid


def status_line(environ: Mapping[str, str] = os.environ) -> str | None:
    state = _read_state(_folder(environ))
    if not _alive(state.get("pid")):
        return None
    return (f"warm runner: pid {state['pid']}, " + ("ready: runs start with their imports done" if state.get("ready")
                                                    else "still importing"))


# ------------------------------------------------------------------------------------------------------------
# The runner's side
# ------------------------------------------------------------------------------------------------------------


def _say(text: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} pid {os.getpid()}: {text}", flush=True)


def _import_all(folder: Path) -> int:
    """Import what a run imports (``ALWAYS``, and what the run that started this runner imported); the number of
    modules that failed to import."""
    import importlib

    failed = 0
    with contextlib.suppress(OSError, ValueError):
        for name in [*ALWAYS, *json.loads((folder / "warm.modules").read_text())]:
            if name not in sys.modules:
                try:
                    importlib.import_module(name)
                except BaseException:  # noqa: BLE001 - the child imports it again, and says why if it must
                    failed += 1
    return failed


class _Job:
    def __init__(self, connection: socket.socket, pid: int, pidfd: int) -> None:
        self.connection, self.pid, self.pidfd = connection, pid, pidfd

    def ended(self) -> None:
        """The child ended: reap it and tell the run how."""
        _, status = os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            self.connection.sendall(json.dumps({"code": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
        self.close()

    def abandoned(self) -> None:
        """The run's end closed (the run was killed): kill the child, as the run's death would have."""
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        self.close()

    def close(self) -> None:
        self.connection.close()
        os.close(self.pidfd)


def serve(server_pid: int) -> None:
    """The runner's life (``python -c`` started by ``start``): import, listen, fork a child per accepted run."""
    import gc

    from flows.prefect_settings import apply_prefect_defaults

    gc.disable()  # as the console script imports; each child resumes it as a run does
    environ, folder = dict(os.environ), _folder(os.environ)
    own = {"stamp": stamp(environ), "env": compared(environ)}  # before the imports: a file changed meanwhile is stale
    apply_prefect_defaults()
    failed = _import_all(folder)
    own["modules"] = _module_files()
    import threading

    if threading.active_count() != 1:  # a fork would lose a thread (and any lock it held)
        _say(f"not serving: the imports started threads ({[t.name for t in threading.enumerate()]})")
        return
    gc.freeze()
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    path, listener = folder / f"warm.{os.getpid()}.sock", socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(_address(path))
    try:
        os.chmod(path, 0o600)
        listener.listen(16)
        if _read_state(folder).get("pid") != os.getpid():
            return _say("replaced before it was ready")
        _write_state(folder, {**_read_state(folder), "ready": True, "socket": path.name})
        _serve(folder, listener, server_pid, environ, own, failed, stopping)
    finally:
        _withdraw(folder)


def _withdraw(folder: Path) -> None:
    """Remove this runner's socket, and warm.json while it names this runner."""
    (folder / f"warm.{os.getpid()}.sock").unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        if _read_state(folder).get("pid") == os.getpid():
            (folder / "warm.json").unlink()


def _serve(folder: Path, listener: socket.socket, server_pid: int, environ: dict[str, str], own: dict,
           failed: int, stopping: list[int]) -> None:
    from flows.prefect_server import KeptState, keep_minutes

    _say(f"ready: {len(sys.modules)} modules ({failed} failed), {len(os.listdir('/proc/self/task'))} OS threads")
    jobs: dict[int, _Job] = {}
    idle_s, last_job, last_look, told = keep_minutes(environ) * 60, time.monotonic(), 0.0, False
    while listener.fileno() >= 0 or jobs:
        if time.monotonic() - last_look >= 1.0:
            last_look, named = time.monotonic(), getattr(KeptState.read(folder), "pid", None) == server_pid
            mine = _read_state(folder).get("pid") == os.getpid()
            last_job = time.monotonic() if jobs else last_job
            if listener.fileno() >= 0 and (stopping or not (named and mine) or
                                           time.monotonic() - last_job >= idle_s):
                _stop_listening(listener, folder, "stopped" if stopping else "replaced" if named and not mine
                                else "idle" if named else "its server is gone")
            if stopping and not told:  # a run in a child stops as a cold run told to stop would
                told = True
                for job in jobs.values():
                    with contextlib.suppress(OSError):
                        os.kill(job.pid, signal.SIGTERM)
        waiting = [job.connection for job in jobs.values()] + [job.pidfd for job in jobs.values()] + \
            ([listener] if listener.fileno() >= 0 else [])
        ready, _, _ = select.select(waiting, [], [], 1.0)
        for job in list(jobs.values()):
            if job.pidfd in ready:
                job.ended()
                del jobs[job.pid]
            elif job.connection in ready and _closed(job.connection):
                job.abandoned()
                del jobs[job.pid]
        if listener in ready:
            try:
                connection, _ = listener.accept()
            except OSError as error:  # e.g. out of descriptors: new runs go cold; those in flight go on
                _stop_listening(listener, folder, f"cannot accept a run ({error!r})")
                continue
            if (job := _accept(connection, own, listener, jobs)) is not None:
                jobs[job.pid] = job
                last_job = time.monotonic()


def _stop_listening(listener: socket.socket, folder: Path, why: str) -> None:
    """Take no more runs (they go cold); the runner ends once the runs it holds have ended."""
    _say(f"ending: {why}")
    listener.close()
    _withdraw(folder)


def _closed(connection: socket.socket) -> bool:
    """Whether the run's end of a readable connection closed (or was reset): the run is gone."""
    try:
        return not connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return False
    except OSError:
        return True


def _receive(connection: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(connection, 1 << 16, 3)
    while len(data) < 4 or len(data) < 4 + struct.unpack("!I", data[:4])[0]:
        more = connection.recv(1 << 16)
        if not more:
            raise ValueError("the run closed before its request was whole")
        data += more
    return json.loads(data[4:]), fds


def _module_files() -> dict[str, tuple[int, int] | None]:
    """(mtime, size) of the file of every module imported: a plug-in's or a package's as much as the project's."""
    return {module.__file__: _stat(module.__file__) for module in list(sys.modules.values())
            if isinstance(getattr(module, "__file__", None), str)}


def _refusal(request: dict, own: dict) -> str | None:
    if request.get("stamp") != own["stamp"]:
        return ("stale: the Python, its packages, the project's files, Prefect's settings files or the process's "
                "umask, limits, CPUs, niceness or namespaces differ")
    if changed := next((path for path, seen in own["modules"].items() if _stat(path) != seen), None):
        return f"stale: {changed} changed since it was imported"
    theirs = compared(request.get("env", {}))
    if theirs != own["env"]:
        names = sorted(name for name in theirs.keys() | own["env"].keys() if theirs.get(name) != own["env"].get(name))
        return f"another environment: {', '.join(names[:5])}"
    return None


def _accept(connection: socket.socket, own: dict, listener: socket.socket, jobs: dict[int, _Job]) -> _Job | None:
    """Read one run's request; refuse it, or fork its child. The job, or None."""
    fds: list[int] = []
    try:
        connection.settimeout(ANSWER_S)
        uid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
        request, fds = _receive(connection) if uid == os.getuid() else ({}, [])
        if (why := "another user" if uid != os.getuid() else _refusal(request, own) or
                (None if len(fds) == 3 else "no streams")) is not None:
            _say(f"refused a run: {why}")
            connection.sendall(json.dumps({"refused": why}).encode() + b"\n")
            connection.close()
            return None
        sys.stdout.flush()
        sys.stderr.flush()
        go, started = os.pipe()
        held = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)  # a signal passed on at once waits for the
        try:  # child's handlers: the runner's would lose it
            if (pid := os.fork()) == 0:
                os.close(started)
                _child(request, fds, [listener, connection] + [job.connection for job in jobs.values()],
                       [job.pidfd for job in jobs.values()] + [go])
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        os.close(go)
        released, pidfd = False, None
        try:  # the child starts once the run has its pid (else the run may have gone on cold)
            pidfd = os.pidfd_open(pid)
            connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
            released = connection.recv(1) == b"g" and os.write(started, b"g") == 1
        finally:
            os.close(started)
            if not released:  # without the byte the child ends before doing anything
                os.waitpid(pid, 0)
                if pidfd is not None:
                    os.close(pidfd)
        if not released:
            raise ValueError("the run went away before its child started")
        connection.settimeout(None)
        return _Job(connection, pid, pidfd)
    except (OSError, ValueError) as error:
        _say(f"dropped a run: {error!r}")
        connection.close()
        return None
    finally:
        for fd in fds:
            os.close(fd)


def _child(request: dict, fds: list[int], sockets: list[socket.socket], own: list[int]) -> None:
    """The run, in the forked child: the client's streams, environment, folder and argv, then what the console
    script does after its first line. Never returns."""
    global _warm
    code = 70
    go = own.pop()
    try:
        with contextlib.suppress(OSError):  # the runner's death ends its runs (the client says so)
            import ctypes

            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.read(go, 1) != b"g":  # the run did not take it: it runs cold
            os._exit(code)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL if signum != signal.SIGINT else signal.default_int_handler)
        for sock in sockets:
            sock.close()
        for fd in own + [go]:
            os.close(fd)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        if sys.stdout.isatty():
            sys.stdout.reconfigure(line_buffering=True)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = request["argv"]
        if sys.stderr.isatty() and "prefect.logging.configuration" in sys.modules:  # its console was set up on
            sys.modules["prefect.logging.configuration"].setup_logging(incremental=False)  # the runner's log file
        _warm = True
        from flows import launch, progress

        progress._announced.add("first line")  # the run's own process said it
        launch.before_imports(sys.argv[1:])
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)  # its handlers are set: a signal held is taken
        code = launch.run(sys.argv[1:])
    except BaseException:  # noqa: BLE001 - outside the command's own handling: said as Python would
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(code)
