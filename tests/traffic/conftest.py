"""Fixtures for live traffic: the bundled production log, one resample of the support set shared by the
tests (each gets its own copy), and small logs in every input format."""

from __future__ import annotations

import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from tests.conftest import SUPPORT

LOG = SUPPORT / "production" / "support_turns.parquet"
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)
"""A fixed 'now' (Monday of 2026-W49): the default window is then 2026-W44-W47."""
SMALL_SAMPLING = {"size": 200, "floor_per_tool": 4, "floor_none": 8}


def shrink_sampling(taskset_dir: Path, **sampling) -> None:
    """Make the task set's resample plan small (fewer requests to check and evaluate in tests)."""
    path = taskset_dir / "production" / "traffic.yaml"
    config = yaml.safe_load(path.read_text())
    config["sampling"] = {**config.get("sampling", {}), **(sampling or SMALL_SAMPLING)}
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: starts real servers, workers or clusters (tens of seconds); runs in make test")


@pytest.fixture(scope="session")
def resampled_base(tmp_path_factory):
    """The support set resampled once from the bundled log (v2 from 2026-W44-W47): (folder, summary)."""
    from tasks.traffic.resample_version import resample_version

    target = tmp_path_factory.mktemp("resampled") / "support"
    shutil.copytree(SUPPORT, target)
    shrink_sampling(target)
    summary = resample_version(target, now=NOW)
    return target, summary


@pytest.fixture
def resampled(resampled_base, tmp_path) -> Path:
    """A private copy of the resampled support set (v1 hand-written, v2 provisional)."""
    target = tmp_path / "support"
    shutil.copytree(resampled_base[0], target)
    return target
