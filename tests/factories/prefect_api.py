"""One local Prefect server for the whole test session, started the first time a test needs one (the
``prefect_harness`` fixture, or a ``tooleval`` process given tests/drill/harness.py ``cli_env``), on a Prefect
home of the session's own, and ended with the session (flows/prefect_server.py ``LocalServer``). Tests of the
server's own start, keep and stop, and runs killed to see their server die with them, start their own: on a
fresh home, or on ``migrated_home`` where a fresh home is not what they check."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

SHARED_SERVER_ENV = "TOOLEVAL_TESTS_SHARE_PREFECT"
"""Set by tests/conftest.py: the ``tooleval`` processes of a test session share its server."""
_server = None


def session_home() -> Path:
    """The shared server's Prefect home (its database): in the session's temporary folder."""
    return Path(tempfile.gettempdir()) / "prefect-home"


def shared_prefect_api() -> str:
    """The session's Prefect API URL, starting its server on the first call."""
    global _server
    if _server is None:
        from flows.prefect_server import LocalServer

        before = os.environ.get("PREFECT_HOME")
        os.environ["PREFECT_HOME"] = str(session_home())  # the server's database: the session's, not the user's
        try:
            _server = LocalServer(0, timeout_s=180).spawn()  # stopped at exit, or with this process
        finally:
            if before is None:
                os.environ.pop("PREFECT_HOME")
            else:
                os.environ["PREFECT_HOME"] = before
        _server.wait_ready()
        _keep_migrated(session_home(), _migrated_template())
    return _server.wait_ready()


def _migrated_template() -> Path:
    return Path(tempfile.gettempdir()) / "prefect-home-migrated"


def _keep_migrated(home: Path, template: Path) -> None:
    """A copy of ``home`` as its server left it on first answering: the database migrated, Prefect's block
    types registered and the memo store saying so; no run yet (sqlite's backup: a consistent copy of a live
    database)."""
    template.mkdir(parents=True, exist_ok=True)
    source, copy = sqlite3.connect(home / "prefect.db"), sqlite3.connect(template / "prefect.db")
    try:
        source.backup(copy)
    finally:
        source.close()
        copy.close()
    if (home / "memo_store.toml").is_file():
        shutil.copy2(home / "memo_store.toml", template / "memo_store.toml")


def migrated_home(home: Path) -> Path:
    """``home``, new, as a Prefect home whose server has started once before: a server started on it finds its
    database migrated and Prefect's block types registered, and skips that work (seconds of CPU a start). For
    tests of runs that start their own server where a fresh home is not what they check; the session's server
    starts if it has not."""
    shared_prefect_api()
    shutil.copytree(_migrated_template(), home)
    return home
