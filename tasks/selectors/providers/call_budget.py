"""The spend cap and the call cap of one run, shared by every thread and process that calls a model.

A small SQLite ledger (one row per run_id) beside the warehouse's selection cache. Before a model call a
selector *reserves* it: one call and an estimated cost (an upper bound: prompt characters / 3 tokens and
``max_tokens`` of output at the model's price). The reservation is refused when the run's calls would pass
``max_calls`` or its spend plus the reservations in flight would pass ``max_spend_usd``; the selector then
lands the request as an error row with the detail ``budget reached`` (errors are never cached). After the
call the estimate is replaced by the cost billed. Each reservation is one ``BEGIN IMMEDIATE`` transaction,
so processes on one machine never both take the last call.

A run with neither cap has nothing to refuse: each opener keeps its calls and spend in memory and adds them
to the file in one transaction when it closes (or is asked for the summary). The caps are the run's, set by
its openers (every work unit passes the same) before the first call; an opener that finds the run capped
works call by call as above.

The ledger's commits are not synced to the disk (``synchronous=OFF``): every other process still sees each
commit at once, and a process that dies loses nothing (the OS holds its writes); only an OS crash in the
middle of a commit can leave the file damaged. Its rows matter only while their run is going (its caps, its
closing summary), so deleting such a file is the remedy.

A call is one HTTP request to a provider: a turn reserves its first attempts (the LLM router's, the chat
model's, the judge's votes), and each retry reserves one more call before it is sent, so ``max_calls`` bounds
every request that leaves, retries included (a retry refused by the cap ends its row as ``budget reached``).
A 429 or a 5xx is not billed. A reply that reports no token counts has an unknown cost: it is settled at its
reservation's estimate (an upper bound), never at $0, and counted in ``unknown_cost_calls``. The ledger also
holds the run's halts: a model whose served id differed from its pin is halted, and no process sends it
another request in that run.

Resuming: rerun the same experiment. Every completed call sits in the per-request selection cache
(``tasks/run/result_cache.py``), so the new run repeats none of them and spends only on the rest.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from tasks.files.sqlite_files import add_column_if_missing, open_shared_sqlite

BUDGET_REACHED = "budget reached"
"""The detail of a row whose call was not made because a cap was reached."""

_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS run_budget (
        run_id TEXT PRIMARY KEY, max_calls INTEGER, max_spend_usd REAL,
        calls INTEGER NOT NULL DEFAULT 0, spend_usd REAL NOT NULL DEFAULT 0,
        reserved_usd REAL NOT NULL DEFAULT 0, refused INTEGER NOT NULL DEFAULT 0,
        unknown_cost_calls INTEGER NOT NULL DEFAULT 0)""",
    """CREATE TABLE IF NOT EXISTS run_halts (
        run_id TEXT NOT NULL, model TEXT NOT NULL, reason TEXT NOT NULL, PRIMARY KEY (run_id, model))""",
]


def ledger_path(cache_path: Path) -> Path:
    """Where a warehouse keeps its runs' ledger: beside the selection cache."""
    return Path(cache_path).parent / "run_ledger.sqlite"


def spent_in_run(ledger: Path | None, run_id: str) -> LedgerSummary:
    """What run ``run_id`` spent on hosted models, as its ledger at ``ledger`` holds it."""
    with RunLedger(ledger, run_id) as opened:
        return opened.summary()


@dataclass(frozen=True)
class Reservation:
    estimate_usd: float
    calls: int = 1


@dataclass
class Turn:
    """What one request's calls (LLM router, chat model, judge votes) used of a reservation taken for all
    of them at once: a turn is either sent whole or not at all, so a cap never leaves a paid router call
    behind an unsent chat call (which a resumed run would have to repeat)."""

    cost_usd: float = 0.0
    calls: int = 0
    """Calls made (each one's first HTTP request: what the turn reserved)."""
    retries: int = 0
    """Further HTTP requests: retries, each reserved on its own (``RunLedger.reserve_retry``)."""
    unknown_cost_calls: int = 0
    """Calls answered with no token counts: their cost is unknown (settled at the turn's estimate)."""

    def add(self, cost_usd: float | None, retries: int = 0, unknown: bool = False) -> None:
        self.cost_usd += cost_usd or 0.0
        self.calls += 1
        self.retries += retries
        self.unknown_cost_calls += int(unknown)

    @property
    def http_requests(self) -> int:
        return self.calls + self.retries


@dataclass
class Tally:
    """Calls and spend of an uncapped run not yet added to the ledger's file."""

    calls: int = 0
    spend_usd: float = 0.0
    unknown_cost_calls: int = 0

    def __bool__(self) -> bool:
        return bool(self.calls or self.spend_usd or self.unknown_cost_calls)


@dataclass(frozen=True)
class LedgerSummary:
    run_id: str
    calls: int
    spend_usd: float
    refused: int
    """Requests not sent because a cap was reached."""
    max_calls: int | None
    max_spend_usd: float | None
    halts: dict[str, str] = field(default_factory=dict)
    unknown_cost_calls: int = 0
    """Calls whose reply gave no token counts: counted in ``spend_usd`` at their estimate (an upper bound)."""


class RunLedger:
    """Open per process (cheap); ``path=None`` keeps the ledger in memory (one process, e.g. a unit test)."""

    def __init__(self, path: Path | None, run_id: str, max_calls: int | None = None,
                 max_spend_usd: float | None = None):
        if max_calls is not None and max_calls < 0:
            raise ValueError("max_calls must be >= 0")
        if max_spend_usd is not None and max_spend_usd < 0:
            raise ValueError("max_spend_usd must be >= 0")
        self.path, self.run_id = path, run_id
        self._lock = threading.Lock()
        self._con = (open_shared_sqlite(path, check_same_thread=False) if path is not None else
                     sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False))
        self._con.execute("PRAGMA synchronous=OFF")  # commits handed to the OS, not synced: see the module
        for statement in _SCHEMA:
            self._con.execute(statement)
        add_column_if_missing(self._con, "run_budget", "unknown_cost_calls", "INTEGER NOT NULL DEFAULT 0")
        with self._transaction() as con:
            con.execute("INSERT OR IGNORE INTO run_budget (run_id) VALUES (?)", [run_id])
            if max_calls is not None or max_spend_usd is not None:
                con.execute("UPDATE run_budget SET max_calls = ?, max_spend_usd = ? WHERE run_id = ?",
                            [max_calls, max_spend_usd, run_id])
            caps = con.execute("SELECT max_calls, max_spend_usd FROM run_budget WHERE run_id = ?", [run_id]).fetchone()
        self._tally = None if any(cap is not None for cap in caps) else Tally()
        """An uncapped run's counts, kept here and added to the file when the ledger closes (None: capped)."""

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._con.execute("BEGIN IMMEDIATE")
            try:
                yield self._con
            except BaseException:
                self._con.execute("ROLLBACK")
                raise
            self._con.execute("COMMIT")

    def reserve(self, estimate_usd: float = 0.0, calls: int = 1) -> Reservation | None:
        """Take ``calls`` calls and ``estimate_usd`` from the budget; None (and one refusal counted) when a cap
        would be passed."""
        estimate_usd = max(float(estimate_usd), 0.0)
        if self._tally is not None:
            with self._lock:
                self._tally.calls += calls
            return Reservation(estimate_usd, calls)
        with self._transaction() as con:
            max_calls, max_spend, used, spend, reserved = con.execute(
                "SELECT max_calls, max_spend_usd, calls, spend_usd, reserved_usd FROM run_budget WHERE run_id = ?",
                [self.run_id]).fetchone()
            if (max_calls is not None and used + calls > max_calls) or (
                    max_spend is not None and spend + reserved + estimate_usd > max_spend):
                con.execute("UPDATE run_budget SET refused = refused + 1 WHERE run_id = ?", [self.run_id])
                return None
            con.execute("UPDATE run_budget SET calls = calls + ?, reserved_usd = reserved_usd + ? WHERE run_id = ?",
                        [calls, estimate_usd, self.run_id])
        return Reservation(estimate_usd, calls)

    def settle(self, reservation: Reservation, cost_usd: float | None, calls_used: int | None = None,
               unknown_cost_calls: int = 0) -> None:
        """Replace the reservation's estimate with the cost billed (0 for a call that failed), and give back
        the calls reserved but not made (a judge not asked about an error row). With calls of unknown cost
        the turn is charged at least its estimate: the cap stays an upper bound on what was spent."""
        unused = 0 if calls_used is None else max(reservation.calls - calls_used, 0)
        charged = max(cost_usd or 0.0, 0.0)
        if unknown_cost_calls:
            charged = max(charged, reservation.estimate_usd)
        if self._tally is not None:
            with self._lock:
                self._tally.calls -= unused
                self._tally.spend_usd += charged
                self._tally.unknown_cost_calls += unknown_cost_calls
            return
        with self._transaction() as con:
            con.execute("UPDATE run_budget SET reserved_usd = max(reserved_usd - ?, 0), spend_usd = spend_usd + ?, "
                        "calls = calls - ?, unknown_cost_calls = unknown_cost_calls + ? WHERE run_id = ?",
                        [reservation.estimate_usd, charged, unused, unknown_cost_calls, self.run_id])

    def reserve_retry(self) -> bool:
        """One more HTTP request for a retry (its cost is in the turn's estimate); False when ``max_calls``
        would be passed."""
        if self._tally is not None:
            with self._lock:
                self._tally.calls += 1
            return True
        with self._transaction() as con:
            max_calls, used = con.execute("SELECT max_calls, calls FROM run_budget WHERE run_id = ?",
                                          [self.run_id]).fetchone()
            if max_calls is not None and used + 1 > max_calls:
                con.execute("UPDATE run_budget SET refused = refused + 1 WHERE run_id = ?", [self.run_id])
                return False
            con.execute("UPDATE run_budget SET calls = calls + 1 WHERE run_id = ?", [self.run_id])
        return True

    def halt(self, model: str, reason: str) -> None:
        with self._transaction() as con:
            con.execute("INSERT OR IGNORE INTO run_halts VALUES (?, ?, ?)", [self.run_id, model, reason])

    def halted(self, model: str) -> str | None:
        with self._lock:
            row = self._con.execute("SELECT reason FROM run_halts WHERE run_id = ? AND model = ?",
                                    [self.run_id, model]).fetchone()
        return row[0] if row else None

    def _add_tally(self) -> None:
        """Add an uncapped run's counts kept here to the file (one transaction), and start them again."""
        if self._tally is None or not self._tally:
            return
        with self._transaction() as con:
            tally, self._tally = self._tally, Tally()
            con.execute("UPDATE run_budget SET calls = calls + ?, spend_usd = spend_usd + ?, "
                        "unknown_cost_calls = unknown_cost_calls + ? WHERE run_id = ?",
                        [tally.calls, tally.spend_usd, tally.unknown_cost_calls, self.run_id])

    def summary(self) -> LedgerSummary:
        self._add_tally()
        with self._lock:
            max_calls, max_spend, calls, spend, refused, unknown = self._con.execute(
                "SELECT max_calls, max_spend_usd, calls, spend_usd, refused, unknown_cost_calls FROM run_budget "
                "WHERE run_id = ?", [self.run_id]).fetchone()
            halts = dict(self._con.execute("SELECT model, reason FROM run_halts WHERE run_id = ?",
                                           [self.run_id]).fetchall())
        return LedgerSummary(self.run_id, calls, spend, refused, max_calls, max_spend, halts, unknown)

    def close(self) -> None:
        try:
            self._add_tally()
        finally:
            self._con.close()

    def __enter__(self) -> "RunLedger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- the scope a batch of selections runs in --------------------------------------------------------------

@dataclass
class BatchScope:
    """What a hosted-model selector needs from the run it serves, set around ``selector.select``."""

    ledger: RunLedger
    on_answer: Callable[[int, object], None] | None = None
    """Called in the selecting thread with (input index, Selection) as each answer completes: the caller
    stores it in the selection cache at once, so a crash mid-batch loses no completed call."""
    on_chat_stage: Callable[[int, object], None] | None = None
    """Called with (input index, judge.Unjudged) when a judged arm's chat call is done, before its judge is
    asked: the caller caches it apart, so a crash during the judge's calls repeats only those."""
    chat_stages: Mapping[int, object] = field(default_factory=dict)
    """Inputs whose chat call an earlier run already made (input index -> judge.Unjudged): only the judge runs."""
    batch: Any = None
    """How the inputs' chat requests may go as a provider batch (``batch_selection.BatchSend``); None: as calls."""


_SCOPE: ContextVar[BatchScope | None] = ContextVar("tooleval_batch_scope", default=None)


@contextmanager
def batch_scope(scope: BatchScope) -> Iterator[BatchScope]:
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def current_scope() -> BatchScope | None:
    return _SCOPE.get()
