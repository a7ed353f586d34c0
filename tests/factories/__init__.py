"""What tests build their inputs from, in one place: task sets and experiments (``taskset``), selection rows
and known runs in an in-memory warehouse (``rows``), tools and selector inputs (``catalogues``), criteria
files (``criteria``), production logs (``traffic``); and the paths and the fixed time they share."""

from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = ROOT / "tasksets" / "support"
"""The bundled support task set (tests copy it before editing: the ``support_copy`` fixture)."""
BENCH = ROOT.parent / "shared" / "bench"
"""Public benchmark data (BFCL, MetaTool), when present on the machine."""

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)
"""The tests' fixed 'now' (Monday of 2026-W49): the default production window is then 2026-W44-W47."""
