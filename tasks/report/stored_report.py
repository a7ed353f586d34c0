"""A run's report tables kept beside its report files (``reports/<run_id>/report.json``), so that ``tooleval
report RUN`` prints them without importing the figures' libraries (polars, numpy, pyarrow) or opening the
warehouse file, and recomputes them whenever anything they were computed from may differ.

What a report's tables are computed from, and so what the stored copy is keyed by:

- the warehouse file's contents: the run's rows and records, and the tables other runs share and may replace
  (a weights window, a tool set's members). Keyed by the file's (and its write-ahead log's) identity: device,
  inode, size, modification and change times, taken once the figures are read, while the read-only connection
  that read them still holds the file (no process can write it in between). Any write to the file
  (another run registered, this one registered again) changes it, so the copy is then not used. A state is
  only kept once its modification time is older than the file system's time granularity, so a later write
  cannot carry the same times;
- the code that computes and tabulates the figures: a hash of every source file of tasks/, warehouse/ and
  schemas/, and the installed versions of the libraries the figures are computed with;
- the run's registration folder (``registrations/<run_id>/``: its saved verdict, or the registered criteria
  a run without one is judged against when read; a hash of every file in it).

Anything missing, unreadable or different: the report is computed as before (and stored again when the
warehouse file is settled). The stored file holds what report.md already shows (the tables and the
verdict), not the figures.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from tasks.report_types import Report, ReportTable
from warehouse.location import Warehouse

STORED_FILE = "report.json"
LATEST_FILE = "latest_runs.json"
"""In ``reports/``: the latest run (of any instrument, and of each) at a warehouse state."""
FORMAT = 1
SOURCE_ROOTS = ("tasks", "warehouse", "schemas")
FIGURE_LIBRARIES = ("duckdb", "polars", "numpy", "pyarrow")
"""Libraries the figures are computed with: their installed versions are part of the key."""
SETTLE_S = 0.1
"""A warehouse state is kept only when its modification time is this much older than now (2 s on a file
system with whole-second times)."""
SETTLE_WAIT_S = 2.5
"""How long ``tooleval run`` waits for its freshly written warehouse file to settle before storing."""

_ROOT = Path(__file__).resolve().parents[2]


def _stat_fields(path: Path) -> list[int] | None:
    try:
        s = os.stat(path)
    except FileNotFoundError:
        return None
    return [s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns]


def warehouse_state(warehouse: Warehouse) -> list[Any]:
    """The warehouse file's and its write-ahead log's identity (None for an absent log)."""
    db = Path(warehouse.db_path)
    return [_stat_fields(db), _stat_fields(db.with_name(db.name + ".wal"))]


def _settle_s(state: list[Any]) -> float:
    times = [fields[3] for fields in state if fields]
    whole_seconds = all(t % 1_000_000_000 == 0 for t in times)
    return 2.0 if whole_seconds else SETTLE_S


def settled(state: list[Any]) -> bool:
    """No write after this state can leave the same times (the newest is older than the granularity)."""
    newest = max((max(fields[3], fields[4]) for fields in state if fields), default=0)
    return time.time_ns() - newest > _settle_s(state) * 1e9


def settled_state(warehouse: Warehouse, wait_s: float = 0.0) -> list[Any] | None:
    """The warehouse's state once settled (waiting up to ``wait_s``), or None."""
    deadline = time.monotonic() + wait_s
    while True:
        state = warehouse_state(warehouse)
        if state[0] is not None and settled(state):
            return state
        if time.monotonic() >= deadline:
            return None
        time.sleep(min(_settle_s(state), max(0.0, deadline - time.monotonic())) or 0.01)


@dataclass
class HeldState:
    """The warehouse's settled state (``settled_state``, waiting up to ``wait_s``), taken by ``take`` once a
    report's figures are read, while their read-only connection still holds the file: no process can write
    it between the reading and the state, and the wait for the file to settle overlaps the reading."""

    warehouse: Warehouse
    wait_s: float = 0.0
    state: list[Any] | None = None

    def take(self) -> None:
        self.state = settled_state(self.warehouse, self.wait_s)


@lru_cache(maxsize=1)
def code_stamp() -> str:
    """A hash of the sources that compute and tabulate a report, and of the figure libraries' versions
    (their installed distributions' names, read without importing them)."""
    digest = hashlib.sha256()
    for root in SOURCE_ROOTS:
        for relative in _sources(root):
            with open(_ROOT / relative, "rb") as source:
                digest.update(relative.encode() + b"\0" + source.read() + b"\0")
    for entry in sys.path:
        if entry.endswith("-packages") and os.path.isdir(entry):
            for name in sorted(os.listdir(entry)):
                if name.endswith(".dist-info") and name.split("-")[0].lower() in FIGURE_LIBRARIES:
                    digest.update(name.encode() + b"\0")
    return digest.hexdigest()


def _sources(root: str) -> list[str]:
    """The .py and .sql files under ``root`` (a folder of the checkout), relative to the checkout, in path
    order (folder by folder, as paths compare)."""
    found = []
    for directory, _, files in os.walk(_ROOT / root, followlinks=True):
        relative = os.path.relpath(directory, _ROOT)
        found.extend(os.path.join(relative, name) for name in files if name.endswith((".py", ".sql")))
    return sorted(found, key=lambda path: path.split(os.sep))


def registration_stamp(warehouse: Warehouse, run_id: str) -> str:
    """A hash of the run's registration folder (its saved verdict, its registered criteria and their copy):
    what its verdict is read or judged from."""
    digest = hashlib.sha256()
    folder = warehouse.registrations_dir / run_id
    for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if path.is_file():
            digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _key(state: list[Any], run_id: str, instrument_name: str, registration: str) -> dict[str, Any]:
    return {"format": FORMAT, "run_id": run_id, "instrument": instrument_name, "warehouse": state,
            "code": code_stamp(), "registration": registration}


def store_report(warehouse: Warehouse, state: list[Any] | None, registration: str, instrument_name: str,
                 report: Report, latest: dict[str, str | None]) -> Path | None:
    """Keep the report's tables, keyed by ``state`` (taken before its figures were read) and
    ``registration`` (``registration_stamp``, taken before its verdict was read), and the latest runs at that
    state. Nothing is kept for an unsettled state; a warehouse whose reports folder cannot be written is left as it is."""
    from tasks.files.atomic_write import write_atomic

    if state is None or report.verdict is None:
        return None
    body = {"key": _key(state, report.run_id, instrument_name, registration), "run_id": report.run_id,
            "verdict": report.verdict.model_dump(mode="json"), "title": report.title, "headline": report.headline,
            "tables": [asdict(table) for table in report.tables]}
    try:  # not flushed to disk: a file a crash left empty or torn is not JSON, or not of these types, and
        # the report is then computed again (stored_report, stored_latest)
        write_atomic(warehouse.reports_dir / LATEST_FILE, json.dumps({"warehouse": state, "latest": latest}),
                     durable=False)
        return write_atomic(warehouse.reports_dir / report.run_id / STORED_FILE, json.dumps(body), durable=False)
    except OSError:
        return None


def stored_latest(warehouse: Warehouse, instrument_name: str | None) -> str | None:
    """The latest run (of ``instrument_name``, or of any) recorded at the warehouse's current state."""
    try:
        data = json.loads((warehouse.reports_dir / LATEST_FILE).read_text())
        if data["warehouse"] != warehouse_state(warehouse):
            return None
        found = data["latest"][str(instrument_name)]
        return found if isinstance(found, str) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def stored_report(warehouse: Warehouse, run_id: str | None, instrument_name: str | None) -> Report | None:
    """The stored report of ``run_id`` (default: the latest run) when everything it was computed from is
    unchanged, with its verdict; else None (nothing kept, or kept for another state of what it depends on)."""
    if run_id is None and (run_id := stored_latest(warehouse, instrument_name)) is None:
        return None
    try:
        state = warehouse_state(warehouse)
        data = json.loads((warehouse.reports_dir / run_id / STORED_FILE).read_text())
        key = data["key"]
        if instrument_name not in (None, key["instrument"]):
            return None
        if key != _key(state, run_id, key["instrument"], registration_stamp(warehouse, run_id)) or \
                data["run_id"] != run_id:
            return None
        tables = [ReportTable(**table) for table in data["tables"]]
        if not (_strings(data["headline"]) and isinstance(data["title"], str) and all(map(_table_read, tables))):
            return None
        return Report(run_id=run_id, headline=data["headline"], tables=tables, title=data["title"],
                      verdict=KeptVerdict.read(data["verdict"]))
    except Exception:  # noqa: BLE001 — a missing, truncated or foreign file: computed instead
        return None


@dataclass(frozen=True)
class KeptGate:
    """What a printed report shows of a gate's result (schemas/criteria.py ``GateResult``)."""

    name: str
    status: str
    statement: str
    evidence: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class KeptVerdict:
    """What a printed report shows of a verdict (schemas/criteria.py ``Verdict``: the terminal and markdown
    renderers read these fields), read from its kept JSON without pydantic."""

    run_id: str
    status: str
    reason: str
    criteria_path: str | None
    criteria_hash: str | None
    registered_at: datetime | None
    gates: list[KeptGate]

    @classmethod
    def read(cls, data: dict[str, Any]) -> KeptVerdict:
        texts = [data["run_id"], data["status"], data["reason"]]
        optional = [data["criteria_path"], data["criteria_hash"], data["registered_at"]]
        gates = [KeptGate(g["name"], g["status"], g["statement"], g["evidence"]) for g in data["gates"]]
        if not (_strings(texts) and all(v is None or isinstance(v, str) for v in optional) and all(
                _strings([g.name, g.status, g.statement]) and _strings(g.evidence) for g in gates)):
            raise ValueError("not a kept verdict")
        registered = data["registered_at"]
        return cls(data["run_id"], data["status"], data["reason"], data["criteria_path"], data["criteria_hash"],
                   datetime.fromisoformat(registered) if registered else None, gates)


def _table_read(table: ReportTable) -> bool:
    """Every field of the kept table has its type (what the renderers lay out)."""
    return (_strings([table.title, table.note, table.key]) and _strings(table.columns) and _strings(table.wrap)
            and isinstance(table.rows, list) and all(_strings(row) for row in table.rows)
            and isinstance(table.sections, list) and all(type(k) is int for k in table.sections)
            and type(table.summary) is bool and type(table.summary_only) is bool)


def _strings(values: Any) -> bool:
    return isinstance(values, list) and all(isinstance(value, str) for value in values)
