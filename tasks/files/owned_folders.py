"""Scratch folders that name the process owning them, so a run killed with kill -9 (no ``finally``, no
``atexit``) leaves nothing the next run cannot recognise and remove.

``owned_folder(kind)`` makes ``$TMPDIR/tooleval-<kind>-<pid>-<start>-<random>``: the owner's process id and
its start time (clock ticks since boot, from ``/proc/<pid>/stat``; 0 where the system does not say), so a
process id the system later gives to another process is not taken for the owner. The MCP surface's server
state folders are such folders (``tooleval-mcp-...``, tasks/surface/mcp_backend.py), as are the scratch
folders a surface lists an unpinned server's tools in and ``tooleval import mcp`` starts a server in.

``remove_orphaned_folders()`` removes every such folder of this machine's temporary folder whose owner is
gone; a folder whose owner still runs (a concurrent run, a long one) is never touched, nor a folder whose
name does not carry an owner (made by another program, or by a tooleval older than this naming). Each run
calls it when it tidies earlier runs' leftovers (tasks/run/leftovers.py).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PREFIX = "tooleval-"
OWNED = re.compile(r"^tooleval-(?P<kind>[a-z][a-z-]*?)-(?P<pid>\d+)-(?P<start>\d+)-[^/]+$")
"""An owned folder's name: kind, owner's pid, owner's start time in clock ticks (0: unknown), mkdtemp's random part."""


def process_start(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (Linux); None when it does not exist or the
    system does not say."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:
        return int(stat.rsplit(")", 1)[1].split()[19])  # field 22 of proc(5); fields after the name start at 3
    except (IndexError, ValueError):
        return None


def owned_folder(kind: str) -> Path:
    """A new scratch folder in the temporary folder, named after this process (see the module's docstring)."""
    pid = os.getpid()
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{pid}-{process_start(pid) or 0}-"))


@contextmanager
def owned_temporary_folder(kind: str) -> Iterator[Path]:
    """``owned_folder(kind)``, removed when the block ends (and by the next run when this process is killed)."""
    folder = owned_folder(kind)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def owner_gone(pid: int, start: int) -> bool:
    """Has the process that made a folder (``pid``, started at ``start`` ticks; 0: unknown) ended? A process
    that exists but cannot be signalled (another user's) counts as alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    except OSError:
        return False
    if start:
        now = process_start(pid)
        return now is not None and now != start  # the pid was given to another process since
    return False


@dataclass(frozen=True)
class RemovedFolders:
    """What ``remove_orphaned_folders`` removed."""

    folders: tuple[str, ...]
    """Names of the folders removed."""
    bytes: int
    """The disk space they held (allocated blocks of the folders and their files, as ``du`` counts)."""

    def lines(self) -> list[str]:
        if not self.folders:
            return []
        kinds = sorted({OWNED.match(name)["kind"] for name in self.folders})  # type: ignore[index]
        return [f"removed {len(self.folders)} scratch folder(s) of killed runs ({', '.join(kinds)}; "
                f"{self.bytes / 1024:.0f} KB) from {tempfile.gettempdir()}"]


def _size(folder: Path) -> int:
    total = 0
    for path in (folder, *folder.rglob("*")):
        try:
            total += path.lstat().st_blocks * 512
        except OSError:
            pass
    return total


def remove_orphaned_folders(directory: Path | None = None) -> RemovedFolders:
    """Remove the owned folders in ``directory`` (default: the temporary folder) whose owner is gone."""
    directory = Path(tempfile.gettempdir() if directory is None else directory)
    removed: list[str] = []
    size = 0
    try:
        candidates = sorted(directory.glob(f"{PREFIX}*"))
    except OSError:
        return RemovedFolders((), 0)
    for folder in candidates:
        match = OWNED.match(folder.name)
        if match is None or not folder.is_dir() or folder.is_symlink():
            continue
        if int(match["pid"]) == os.getpid() or not owner_gone(int(match["pid"]), int(match["start"])):
            continue
        try:
            if folder.stat().st_uid != os.geteuid():
                continue
        except OSError:
            continue
        size += _size(folder)
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder.name)
    return RemovedFolders(tuple(removed), size)
