"""Where a warehouse's files live."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DIR = Path(__file__).resolve().parent
ENV_VAR = "TOOLEVAL_WAREHOUSE"


@dataclass(frozen=True)
class Warehouse:
    root: Path

    @property
    def db_path(self) -> Path:
        return self.root / "tooleval.duckdb"

    @property
    def rows_dir(self) -> Path:
        return self.root / "rows"

    @property
    def reports_dir(self) -> Path:
        return self.root / "reports"

    @property
    def cache_path(self) -> Path:
        return self.root / "cache" / "selections.sqlite"

    @property
    def registrations_dir(self) -> Path:
        return self.root / "registrations"


def warehouse_at(path: str | Path | None = None) -> Warehouse:
    """--warehouse DIR, else $TOOLEVAL_WAREHOUSE, else the warehouse/ folder of the checkout.

    ``path`` None means "not given"; an empty (or blank) path is bad input (InputError), never the default.
    An empty $TOOLEVAL_WAREHOUSE counts as unset, as shells treat it."""
    if path is not None and not str(path).strip():
        from tasks.files.input_errors import InputError

        raise InputError.one("--warehouse", "", "warehouse-path", "an empty path names no warehouse: give a "
                             "directory, or leave it out for the default ($TOOLEVAL_WAREHOUSE, else warehouse/ in "
                             "the checkout)")
    chosen = path or os.environ.get(ENV_VAR) or DEFAULT_DIR
    return Warehouse(Path(chosen).expanduser().resolve())
