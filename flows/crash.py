"""What a user sees when tooleval fails unexpectedly: one message that names the failure and what to do,
never a traceback on the terminal; the traceback goes to a file for a bug report."""

from __future__ import annotations

import errno
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Iterable, Iterator

from flows.exit_codes import EXIT_CRASHED
from flows.prefect_server import PrefectApiLost, PrefectServerError
from tasks.files.write_probe import REFUSED_WRITE_ERRNOS, nearest_existing, write_refusal

RESUMES = "landed rows are kept and finished selections and task runs cached, so a rerun resumes"
LOW_DISK_BYTES = 16 * 2**20
"""Below this much free space a 'disk I/O error' is taken for a full disk."""


def _chain(error: BaseException) -> Iterator[BaseException]:
    """The error and what caused it (``raise ... from``, or raised while handling another)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _nearly_full(paths: Iterable[str | Path]) -> str | None:
    """The first of ``paths`` (or its nearest existing parent) on a disk with almost no free space."""
    for path in paths:
        existing = nearest_existing(Path(path).expanduser())
        try:
            free = shutil.disk_usage(existing).free
        except OSError:
            continue
        if free < LOW_DISK_BYTES:
            return f"{existing} has {free / 2**20:.1f} MiB free"
    return None


def disk_full(error: BaseException, paths: Iterable[str | Path] = ()) -> str | None:
    """Why ``error`` is a full disk, or None. DuckDB says 'No space left on device', SQLite 'database or disk
    is full' or, when its write-ahead log's index cannot grow, only 'disk I/O error': that one is taken for a
    full disk when one of the run's folders has (almost) no free space left."""
    for cause in _chain(error):
        text = str(cause).lower()
        if isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT):
            return "no space left on the device"
        if "no space left" in text or "disk is full" in text or "disk quota exceeded" in text:
            return "no space left on the device"
        if "disk i/o error" in text or "i/o error" in text and "duckdb" in type(cause).__module__:
            candidates = [*paths, os.environ.get("TOOLEVAL_WAREHOUSE") or "", os.environ.get("PREFECT_HOME") or "",
                          tempfile.gettempdir(), os.getcwd()]
            if where := _nearly_full(p for p in candidates if p):
                return where
    return None


REFUSED_WORDS = ("readonly database", "read-only file system", "operation not permitted")
"""How SQLite, DuckDB and pyarrow say a write was refused when they give no errno."""


def _refused(error: BaseException, words: tuple[str, ...] = REFUSED_WORDS) -> bool:
    """Whether a cause of ``error`` is a write refused by permissions, a read-only mount or an immutable file."""
    return any((isinstance(c, OSError) and c.errno in REFUSED_WRITE_ERRNOS) or any(w in str(c).lower() for w in words)
               for c in _chain(error))


def stops_the_run(error: BaseException) -> bool:
    """A failed write that no retry mends (a full disk; a write refused by permissions, a read-only mount or an
    immutable file): the run stops at the first one, no other unit starts and the unit is not retried; its
    landed rows and cached work stay for the rerun."""
    return disk_full(error) is not None or _refused(error)


def _unwritten_file(error: BaseException) -> str | None:
    """The file a failed write named, if any cause in the chain says."""
    return next((str(c.filename) for c in _chain(error) if isinstance(c, OSError) and c.filename), None)


AFTER_PUBLISH = "what was published stays; publishing again adds only what is missing"
"""What to do after `tooleval phoenix` failed: it is not a run, and there are no rows to resume."""
AFTER_READING = "nothing was changed: run the command again"
"""After a command that only reads (report, sql, compare, plan, validate): nothing to resume."""


def _unwritable(paths: Iterable[str | Path]) -> str | None:
    """The first of ``paths`` or their folders one level down (a warehouse's cache/, rows/) that cannot be
    written now (a file made there fails)."""
    for path in paths:
        top = Path(path).expanduser()
        folders = [top, *sorted(p for p in top.iterdir() if p.is_dir())] if top.is_dir() else []
        for folder in folders:
            if (error := write_refusal(folder)) is not None:
                return f"{folder} ({error.strerror or error})"
    return None


def write_refused(error: BaseException, paths: Iterable[str | Path] = ()) -> str | None:
    """Where a write was refused, when ``error`` is a refused write (SQLite's 'readonly database' or 'disk I/O
    error', EACCES, EROFS, EPERM) and one of the run's folders cannot be written now: made read-only or immutable
    (``chattr +i``) while the run was going, after the checks before it found it writable."""
    return _unwritable(paths) if _refused(error, (*REFUSED_WORDS, "disk i/o error")) else None


def _hint(error: BaseException, paths: Iterable[str | Path] = (), resumes: str = RESUMES) -> str:
    if where := write_refused(error, paths):
        return (f"the warehouse stopped accepting writes: {where} cannot be written (made read-only or immutable "
                f"while the run went on?); make it writable again (`chattr -R -i`, a read-write mount), then rerun "
                f"({resumes})")
    for cause in _chain(error):
        if isinstance(cause, OSError) and cause.errno in REFUSED_WRITE_ERRNOS:
            what = getattr(cause, "filename", "") or "a file"
            return (f"no permission to write {what}" + (" (a read-only file system)" if cause.errno == errno.EROFS
                                                        else "") + ": choose a writable --warehouse")
    if isinstance(error, PrefectApiLost):
        return "nothing was run or written"
    if isinstance(error, PrefectServerError):
        return "Prefect could not start"
    text = " ".join(f"{type(c).__name__} {c}" for c in _chain(error)).lower()
    if any(word in text for word in ("prefect", "httpx", "connecterror", "connection refused", "reach api")):
        return ("the Prefect API stopped answering: check PREFECT_API_URL (unset it to use a temporary server); "
                + resumes)
    if any(word in text for word in ("readtimeout", "timed out", "timeout")):
        return "a service did not answer in time (a busy machine or network); " + resumes
    return "an unexpected failure; " + resumes


def report_crash(error: BaseException, paths: Iterable[str | Path] = (), resumes: str = RESUMES) -> int:
    """Print one line (and the hint), write the traceback to a file, return the crash exit code.
    ``paths``: the folders the command wrote to (the warehouse), where a full disk is looked for; ``resumes``:
    what a rerun of this command does (a run resumes; a publish adds what is missing)."""
    path = os.path.join(tempfile.gettempdir(), f"tooleval-crash-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log")
    try:
        with open(path, "w") as handle:
            traceback.print_exception(error, file=handle)
        where = f"; the traceback is in {path}"
    except OSError:
        where = ""
    if full := disk_full(error, paths):  # one line: what, where, what to do
        paths = list(paths)
        file = _unwritten_file(error)
        place = f"writing {file}" if file else _nearly_full(paths) or full
        print(f"tooleval: stopped: the disk is full ({place}): free space where the warehouse and the cache live, "
              f"then rerun ({resumes}){where}", file=sys.stderr)
        return EXIT_CRASHED
    message = str(error).strip().splitlines()[0][:300] if str(error).strip() else type(error).__name__
    print(f"tooleval: failed: {message}\n{_hint(error, paths, resumes)}{where}", file=sys.stderr)
    return EXIT_CRASHED
