"""The small support set's decision model, trained once per test session for the modules here that read the
model ``tooleval train`` writes from it (MiniLM runs: only slow tests ask for it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factories.decision_model import small_support_set, trained_model


@pytest.fixture(scope="session")
def small_support_model(tmp_path_factory) -> tuple[Path, Path]:
    """(the set, its 5-fold model file). Shared: a test that writes beside them copies the set first."""
    root = small_support_set(tmp_path_factory.mktemp("support-model") / "support-small")
    return root, trained_model(root)
