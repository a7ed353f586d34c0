"""A passed read-only check remembered by everything it read, so the same check of the same inputs answers at
once: ``tooleval validate EXPERIMENT`` and ``tooleval tasks validate`` repeat their lines without loading the
task set, the catalogues or the checks' libraries.

While a check runs, ``remembered`` notes (through a Python audit hook, a recording ``os.stat`` and a recording
view of ``os.environ``) every file it opened or asked about (exists, is_file: a file that was missing must
still be missing), every folder it listed and every environment variable it read. A pass is kept in the
user's cache folder (tasks/files/cache_folder.py, ``passes``) under the command, its arguments and the
working folder, with the sha256 and size of each file read (the sizes are compared first: most edits move
one), each folder's listing, each variable (hashed: a key is never written down), the source of every module
loaded that is not an installed library's (tooleval's, a plug-in's), the Python version and the installed
distributions. It answers again only while all of these are unchanged, so an edited, added, removed or
renamed input, another environment, another tooleval or another library version checks everything again.
Failures are never kept: a broken input is checked, and its problems listed, every time.

Files under the interpreter's prefix (its libraries: their versions are in the key) and the cache folder
(what it holds is computed from the inputs) are not noted. A check that started a process or opened a
network connection is not kept: what answered it is not all in files this process read.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from tasks.files.atomic_write import write_atomic
from tasks.files.cache_folder import cache_folder
from tasks.files.content_hash import file_sha256, sha256_hex

FORMAT = 2
_recording: _Reads | None = None
_hooked = False
_one_at_a_time = threading.Lock()
"""One check is recorded at a time in a process (it swaps os.environ and os.stat)."""


class _Reads:
    """What one check read: files, listed folders, environment variables (None: unset; ``whole``: all of it)."""

    def __init__(self) -> None:
        self.files: set[str] = set()
        self.folders: set[str] = set()
        self.variables: dict[str, str | None] = {}
        """Each variable's value (hashed) when the check first read it, unless the check had set it itself."""
        self.written: set[str] = set()
        self.whole_environment = False
        self.outside = False
        """The check started a process or opened a connection: what it depends on is not all noted here."""

    def read(self, name: str, value: str | None) -> None:
        if name not in self.variables and name not in self.written:
            self.variables[name] = None if value is None else sha256_hex(value)


class _RecordingEnviron(MutableMapping):
    """``os.environ`` as a check sees it: every name read is noted; reading all of it notes the whole."""

    def __init__(self, real: MutableMapping[str, str], reads: _Reads) -> None:
        self._real, self._reads = real, reads

    def __getitem__(self, key: str) -> str:
        self._reads.read(key, self._real.get(key))
        return self._real[key]

    def __setitem__(self, key: str, value: str) -> None:
        self._reads.written.add(key)
        self._real[key] = value

    def __delitem__(self, key: str) -> None:
        self._reads.written.add(key)
        del self._real[key]

    def __iter__(self) -> Iterator[str]:
        self._reads.whole_environment = True
        return iter(self._real)

    def __len__(self) -> int:
        self._reads.whole_environment = True
        return len(self._real)

    def copy(self) -> dict[str, str]:
        return dict(self)


OUTSIDE_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.posix_spawn", "os.spawn", "os.exec", "os.fork",
                            "os.forkpty", "pty.spawn", "socket.connect", "socket.getaddrinfo"})
"""Audit events after which a pass is not kept: another process or a connection answered part of the check."""


def _audit(event: str, args: tuple[Any, ...]) -> None:
    reads = _recording
    if reads is None:
        return
    if event in OUTSIDE_EVENTS:
        reads.outside = True
    elif event == "open":
        path, mode = args[0], args[1]
        if isinstance(path, (str, bytes, os.PathLike)) and (mode is None or not set(str(mode)) & set("wax+")):
            reads.files.add(os.path.abspath(os.fsdecode(path)))
    elif event in ("os.listdir", "os.scandir"):
        path = args[0]
        if isinstance(path, (str, bytes, os.PathLike)):
            reads.folders.add(os.path.abspath(os.fsdecode(path)))


def _file_hash(path: str) -> str | None:
    try:
        return file_sha256(Path(path))
    except OSError:
        return None


def _file_size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _listing_hash(path: str) -> str | None:
    try:
        return sha256_hex("\n".join(sorted(os.listdir(path))))
    except OSError:
        return None


def _installed() -> str:
    """The interpreter and every installed distribution's name and version (the site folders' listings)."""
    names = [sys.version, sys.executable]
    for folder in sys.path:
        if folder.endswith(("site-packages", "dist-packages")):
            try:
                names += sorted(name for name in os.listdir(folder) if name.endswith((".dist-info", ".egg-info")))
            except OSError:
                continue
    return sha256_hex("\n".join(names))


def _environment(names: list[str] | None, environment: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """Each variable's value in ``environment`` (default: now), hashed (None: unset); ``names`` None: the whole
    environment as one entry."""
    environment = os.environ if environment is None else environment
    if names is None:
        return {"*": sha256_hex(json.dumps(sorted(environment.items())))}
    return {name: None if (value := environment.get(name)) is None else sha256_hex(value) for name in names}


def _noted(path: str, skipped: tuple[str, ...]) -> bool:
    return not path.startswith(skipped) and not path.endswith(".pyc") and "/__pycache__/" not in path


def _sources() -> set[str]:
    """The source file of every module loaded that is not an installed library's: tooleval's, a plug-in's, a
    task set's backend's (an installed distribution's version is in the key instead)."""
    prefixes = (sys.prefix + os.sep, sys.base_prefix + os.sep)
    files = set()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if (file and file.endswith(".py") and not file.startswith(prefixes)
                and os.sep + "site-packages" + os.sep not in file and os.sep + "dist-packages" + os.sep not in file):
            files.add(os.path.abspath(file))
    return files


def _key(command: str, arguments: list[Any]) -> str:
    return sha256_hex(json.dumps([FORMAT, command, arguments, os.getcwd()]))


def _fresh(kept: dict[str, Any]) -> bool:
    """Every input of a kept pass is as it was."""
    if kept.get("format") != FORMAT or kept.get("installed") != _installed():
        return False
    variables = kept["environment"]
    if _environment(None if "*" in variables else sorted(variables)) != variables:
        return False
    if any(_file_size(path) != size for path, size in kept["sizes"].items()):  # an edit that moved the size: no
        return False  # file need be read to see it
    return (all(_file_hash(path) == digest for path, digest in kept["files"].items())
            and all(_listing_hash(path) == digest for path, digest in kept["folders"].items()))


def remembered(command: str, arguments: list[Any], check: Callable[[], list[str]]) -> list[str]:
    """The lines of ``check()`` (a read-only check of the inputs ``arguments`` name), or the lines of its pass
    kept from an earlier call whose every input is unchanged (the last line then says so); ``arguments`` (as
    JSON) tell one call's inputs from another's. What ``check`` raises is raised, and nothing is kept."""
    folder = cache_folder("passes")
    path = folder / f"{_key(command, arguments)}.json"
    try:
        kept = json.loads(path.read_text())
        if _fresh(kept):
            return [*kept["lines"], "(remembered: every file it read is as it was when it passed)"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    if not _one_at_a_time.acquire(blocking=False):  # a check inside a check, or another thread's: the one
        return check()  # recording notes what this one reads, and nothing of this one is kept
    try:
        return _recorded(path, check)
    finally:
        _one_at_a_time.release()


def _recorded(path: Path, check: Callable[[], list[str]]) -> list[str]:
    """``check()`` with what it reads noted, and its pass kept (os.environ and os.stat swapped meanwhile)."""
    global _recording, _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True
    reads, real, real_stat = _Reads(), os.environ, os.stat
    before = dict(real)  # what a check that reads the whole environment depends on: as it found it

    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if isinstance(path, (str, bytes, os.PathLike)):
            reads.files.add(os.path.abspath(os.fsdecode(path)))
        return real_stat(path, *args, **kwargs)

    _recording, os.environ, os.stat = reads, _RecordingEnviron(real, reads), stat  # type: ignore[assignment]
    try:
        lines = check()
    finally:
        _recording, os.environ, os.stat = None, real, real_stat  # type: ignore[assignment]
    if not reads.outside:
        _keep(path, lines, reads, before)
    return lines


def _keep(path: Path, lines: list[str], reads: _Reads, environment: Mapping[str, str]) -> None:
    skipped = (sys.prefix + os.sep, sys.base_prefix + os.sep, str(path.parent.parent) + os.sep, "/proc/",
               "/dev/", "/sys/")
    files = {file for file in reads.files | _sources() if _noted(file, skipped)}
    passed = {
        "format": FORMAT, "lines": lines, "installed": _installed(),
        "environment": _environment(None, environment) if reads.whole_environment else reads.variables,
        "files": {file: _file_hash(file) for file in sorted(files)},
        "sizes": {file: _file_size(file) for file in sorted(files)},
        "folders": {folder: _listing_hash(folder) for folder in sorted(reads.folders) if _noted(folder, skipped)},
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(passed))
    except OSError:
        pass
