"""What a user sees when tooleval fails unexpectedly: one message that names the failure and what to do,
never a traceback on the terminal; the traceback goes to a file for a bug report."""

from __future__ import annotations

import errno
import os
import sys
import tempfile
import time
import traceback

from flows.exit_codes import EXIT_CRASHED
from flows.prefect_server import PrefectServerError


def _hint(error: BaseException) -> str:
    if isinstance(error, OSError) and error.errno == errno.ENOSPC or "disk is full" in str(error).lower() \
            or "no space left" in str(error).lower():
        return "the disk is full: free space where the warehouse and the cache live, then rerun (landed rows are kept)"
    if isinstance(error, OSError) and error.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
        return f"no permission to write {getattr(error, 'filename', '') or 'a file'}: choose a writable --warehouse"
    if isinstance(error, PrefectServerError):
        return "Prefect could not start"
    text = f"{type(error).__name__} {error}".lower()
    if "prefect" in text or "httpx" in text or "connect" in text:
        return ("the Prefect API stopped answering: check PREFECT_API_URL (unset it to use a temporary server); "
                "landed rows are kept and completed selections cached, so a rerun resumes")
    return "an unexpected failure; landed rows are kept and completed selections cached, so a rerun resumes"


def report_crash(error: BaseException) -> int:
    """Print one line (and the hint), write the traceback to a file, return the crash exit code."""
    path = os.path.join(tempfile.gettempdir(), f"tooleval-crash-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log")
    try:
        with open(path, "w") as handle:
            traceback.print_exception(error, file=handle)
        where = f"; the traceback is in {path}"
    except OSError:
        where = ""
    message = str(error).strip().splitlines()[0][:300] if str(error).strip() else type(error).__name__
    print(f"tooleval: failed: {message}\n{_hint(error)}{where}", file=sys.stderr)
    return EXIT_CRASHED
