"""Fixtures the report tests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factories.rows import KnownRun, tool_rows


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """A warehouse folder whose DuckDB file holds one known selection run (refund 3/4 right, track 1/2)."""
    root = tmp_path / "wh"
    root.mkdir()
    run = KnownRun(root / "tooleval.duckdb").add(tool_rows("refund", 4, [1, 1, 1, 0]) + tool_rows("track", 2, [1, 0]))
    run.finish().close()
    return root
