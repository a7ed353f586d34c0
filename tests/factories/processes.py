"""Other processes a test needs: one that holds a DuckDB file open, as an analyst's session would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def hold(path: Path, seconds: float, read_only: bool = True) -> subprocess.Popen:
    """Another process with the file open; returns once it holds it."""
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(path)!r}, read_only={read_only}); "
                               f"print('held', flush=True); time.sleep({seconds})"],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder
