"""Shared fixtures: one Prefect server per session, a private copy of the support task set, an
in-memory warehouse; and the rule that puts a test in the slow tier (``make test`` runs every test,
``make test-fast`` leaves the slow ones out). Inputs are built with tests/factories/."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from flows.prefect_settings import apply_prefect_defaults
from tests.factories import SUPPORT
from tests.factories.prefect_api import SHARED_SERVER_ENV
from tests.factories.rows import memory_warehouse
from tests.longest_first import module_rank

apply_prefect_defaults()
os.environ.pop("TOOLEVAL_WAREHOUSE", None)
# the report's width off a terminal is the tool's own default, whoever runs the suite: pytest-xdist's workers are
# given COLUMNS=80, a shell may export its own; a test of folding sets COLUMNS itself
os.environ.pop("COLUMNS", None)
# a server per run: nothing a test starts outlives it (tests/flows/test_kept_server.py keeps one on purpose); the
# runs share the session's one server where a test allows it (tests/factories/prefect_api.py)
os.environ["TOOLEVAL_KEEP_SERVER"] = "0"
os.environ[SHARED_SERVER_ENV] = "1"
# What the tool writes to the temporary folder (crash tracebacks, MCP servers' state folders, what a killed run
# leaves), in this process and its subprocesses, goes to a folder of this session, removed when it ends;
# pytest's own tmp_path folders stay where they were (kept for a look after a failure).
os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())
SESSION_TMP = tempfile.mkdtemp(prefix="tooleval-tests-")
os.environ["TMPDIR"] = tempfile.tempdir = SESSION_TMP
atexit.register(shutil.rmtree, SESSION_TMP, ignore_errors=True)
# remembered label-check passes go to a folder of this session, not the user's cache
os.environ["TOOLEVAL_CACHE_DIR"] = tempfile.mkdtemp(prefix="tooleval-test-cache-")

SLOW_FIXTURES = {
    "prefect_harness": "runs flows through Prefect's engine and the session's Prefect server",
    "embedding_selector": "loads the MiniLM model (torch)",
}
"""A test that asks for one of these (directly or through another fixture) is marked slow. Tests that start
real servers, workers or clusters, or run the CLI end to end, say ``pytest.mark.slow`` themselves."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks the slow tier; then puts the longest modules first (tests/longest_first.py)."""
    for item in items:
        if SLOW_FIXTURES.keys() & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    has_slow_test = {item.nodeid.split("::", 1)[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: module_rank(item.nodeid, has_slow_test))  # stable: a module's tests keep their order


@pytest.fixture(scope="session")
def prefect_harness():
    """The session's one Prefect server (tests/factories/prefect_api.py) for the flows a test runs in-process."""
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_DATABASE_CONNECTION_URL, temporary_settings

    from flows.prefect_server import drain_prefect_client
    from tests.factories.prefect_api import session_home, shared_prefect_api

    database = f"sqlite+aiosqlite:///{session_home() / 'prefect.db'}"  # where the server keeps what it is sent
    with temporary_settings({PREFECT_API_URL: shared_prefect_api(), PREFECT_SERVER_DATABASE_CONNECTION_URL: database}):
        yield
        drain_prefect_client()


@pytest.fixture
def support_copy(tmp_path: Path) -> Path:
    """A private copy of the bundled support task set, safe to edit."""
    target = tmp_path / "support"
    shutil.copytree(SUPPORT, target)
    return target


@pytest.fixture
def warehouse_dir(tmp_path: Path) -> Path:
    return tmp_path / "warehouse"


@pytest.fixture
def con():
    """An in-memory warehouse: the project's tables and views, no rows (fill it with tests/factories/rows.py)."""
    connection = memory_warehouse()
    yield connection
    connection.close()
