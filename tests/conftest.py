"""Shared fixtures: the repository paths, one Prefect test harness per session, small task sets."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from flows.prefect_settings import apply_prefect_defaults

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = ROOT / "tasksets" / "support"
BENCH = ROOT.parent / "shared" / "bench"

apply_prefect_defaults()
os.environ.pop("TOOLEVAL_WAREHOUSE", None)
# remembered label-check passes go to a folder of this session, not the user's cache
os.environ["TOOLEVAL_CACHE_DIR"] = tempfile.mkdtemp(prefix="tooleval-test-cache-")


@pytest.fixture(scope="session")
def prefect_harness():
    """A temporary Prefect API for the whole session (each harness start costs ~30 s)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


@pytest.fixture
def support_copy(tmp_path: Path) -> Path:
    """A private copy of the bundled support task set, safe to edit."""
    target = tmp_path / "support"
    shutil.copytree(SUPPORT, target)
    return target


@pytest.fixture
def warehouse_dir(tmp_path: Path) -> Path:
    return tmp_path / "warehouse"
