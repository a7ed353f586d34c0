"""Fixtures for live traffic: one resample of the support set from the bundled production log, shared by
the tests (each gets its own copy)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tasks.traffic.resample_version import resample_version
from tests.factories import NOW
from tests.factories.traffic import copy_support_v1, shrink_sampling


@pytest.fixture(scope="session")
def resampled_base(tmp_path_factory):
    """The support set as of v1 resampled once from the bundled log (v2 from 2026-W44-W47): (folder, summary)."""
    target = copy_support_v1(tmp_path_factory.mktemp("resampled") / "support")
    shrink_sampling(target)
    summary = resample_version(target, now=NOW)
    return target, summary


@pytest.fixture
def resampled(resampled_base, tmp_path) -> Path:
    """A private copy of the resampled support set (v1 hand-written, v2 provisional)."""
    target = tmp_path / "support"
    shutil.copytree(resampled_base[0], target)
    return target
