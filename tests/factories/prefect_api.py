"""One local Prefect server for the whole test session, started the first time a test needs one (the
``prefect_harness`` fixture, or a ``tooleval`` process given tests/drill/harness.py ``cli_env``), on a Prefect
home of the session's own, and ended with the session (flows/prefect_server.py ``LocalServer``). Tests of the
server's own start, keep and stop, and runs killed to see their server die with them, start their own."""

from __future__ import annotations

import os
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
    return _server.wait_ready()
