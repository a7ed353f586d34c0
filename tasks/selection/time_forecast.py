"""How long a selection run's hosted calls will take, before its first call: per arm with paid calls, sent as
synchronous calls and as a provider batch, from the warehouse's rows of the same chat model.

As calls: the median wall time of one HTTP request of past rows of the model sent as calls (a row's latency
over its requests; rows from the cache or with no request left out), times the rounds the arm's requests
take through its endpoint's bound (the arm's ``concurrency`` option: calls in flight per endpoint and
process). Arms on one endpoint under one bound share it, so the run's time as calls is the longest sum of
the arms sharing a bound. With no such rows the time is unknown and said so, not guessed.

As a batch: the provider's window (24 h) for each batch a unit waits on one after another (an LLM router's
lines, the chat lines, a judge's votes); where past rows of the model were sent in batches, the median of
those batches' waits (a batch row's latency is its unit's wait for its batches; a batch's wait is its
longest row's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from tasks.selectors.providers.chat_options import DEFAULT_CONCURRENCY, resolve_base_url

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

    from tasks.selection.arms import SelectionArm

BATCH_WINDOW = "24 h"
"""The OpenAI and Anthropic batch APIs' completion window (tasks/selectors/providers/batch)."""

CALL_TIME_SQL = """
select a.model_id, count(*), median(r.latency_ms / coalesce(r.http_attempts, 1))
from landed_rows r join arms a on a.run_id = r.run_id and a.arm = r.arm
where not r.cache_hit and r.sent_as is distinct from 'batch' and coalesce(r.http_attempts, 1) > 0
  and r.latency_ms > 0 and a.model_id in ({models})
group by all
"""

BATCH_WAIT_SQL = """
select model_id, count(*), median(wait_ms)
from (select a.model_id, r.batch_id, max(r.latency_ms) as wait_ms
      from landed_rows r join arms a on a.run_id = r.run_id and a.arm = r.arm
      where not r.cache_hit and r.sent_as = 'batch' and r.batch_id is not null
        and a.model_id in ({models})
      group by all)
group by all
"""


@dataclass(frozen=True)
class PastTimes:
    """What past rows of one model say of its time."""

    call_rows: int = 0
    call_ms: float | None = None
    """Median wall time of one HTTP request of its rows sent as calls."""
    batches: int = 0
    batch_wait_s: float | None = None
    """Median wait of its past batches."""


def past_times(con: "DuckDBPyConnection", models: Sequence[str]) -> dict[str, PastTimes]:
    """Per model of ``models``: its past rows' call time and batch waits (the warehouse's ``landed_rows``)."""
    marks = ", ".join("?" for _ in models)
    calls = {m: (n, ms) for m, n, ms in con.execute(CALL_TIME_SQL.format(models=marks), list(models)).fetchall()}
    waits = {m: (n, ms) for m, n, ms in con.execute(BATCH_WAIT_SQL.format(models=marks), list(models)).fetchall()}
    return {model: PastTimes(*calls.get(model, (0, None)), batches=waits.get(model, (0, None))[0],
                             batch_wait_s=None if model not in waits else waits[model][1] / 1000)
            for model in {*calls, *waits}}


@dataclass(frozen=True)
class ArmTime:
    """One arm's time forecast: its bound and what past rows of its model say."""

    concurrency: int
    bound: tuple[str, str, int]
    """(provider kind, endpoint, concurrency): the arms sharing it share its calls in flight."""
    past: PastTimes = PastTimes()
    batchable: bool = True
    """False for an arm whose models have no batch price: it sends calls only."""
    rounds: int = 1
    """Batches one after another per unit: an LLM router's lines, then the chat lines, then a judge's votes."""

    def call_seconds(self, calls: int) -> float | None:
        """Wall time of ``calls`` requests at the bound; None: no past rows to time them by."""
        if self.past.call_ms is None:
            return None
        return math.ceil(calls / self.concurrency) * self.past.call_ms / 1000

    def lines(self, calls: int) -> list[str]:
        seconds = self.call_seconds(calls)
        lines = ["    time unknown as calls: no past rows" if seconds is None else
                 f"    time: about {duration(seconds)} as calls, {self.concurrency} in flight "
                 f"(from {self.past.call_rows:,} past rows)"]
        if self.batchable:
            said = f"within {BATCH_WINDOW}" if self.rounds == 1 else \
                f"{self.rounds} batches in turn, each within {BATCH_WINDOW}"
            past = (f"past batches of this model took median {duration(self.past.batch_wait_s)}"
                    if self.past.batch_wait_s is not None else None)
            line = f"    as a batch: {said}"
            if past is None:
                lines.append(line + " (the provider's window)")
            elif len(line) + len(past) + 2 <= 80:
                lines.append(f"{line}; {past}")
            else:
                lines += [line, f"      {past}"]
        return lines


def batch_rounds(options: dict[str, Any]) -> int:
    """How many batches a unit of an arm with these selector options waits on one after another."""
    judge = options.get("judge")
    return 1 + (options.get("router") == "llm") + (isinstance(judge, dict) and bool(judge.get("model")))


def arm_time(arm: "SelectionArm", times: dict[str, PastTimes], batchable: bool) -> ArmTime:
    options = arm.selector_options
    concurrency = int(options.get("concurrency", DEFAULT_CONCURRENCY))
    return ArmTime(concurrency, (arm.selector, resolve_base_url(arm.selector, options), concurrency),
                   times.get(arm.model_id, PastTimes()), batchable, batch_rounds(dict(options)))


def run_call_seconds(arms: Sequence[tuple[ArmTime, int]]) -> float | None:
    """The run's time as calls from its arms' (time, calls sent): the longest sum over arms sharing a bound;
    None when an arm's time is unknown."""
    per_bound: dict[tuple[str, str, int], float] = {}
    for time, calls in arms:
        if (seconds := time.call_seconds(calls)) is None:
            return None
        per_bound[time.bound] = per_bound.get(time.bound, 0.0) + seconds
    return max(per_bound.values(), default=0.0)


def took_line(wall_s: float, forecast_s: float | None, batch_rows: int) -> str:
    """The run's wall time beside what was forecast for the way its rows were sent."""
    if batch_rows:
        said = f"within {BATCH_WINDOW} as a batch"
    else:
        said = "time unknown (no past rows)" if forecast_s is None else f"about {duration(forecast_s)} as calls"
    return f"  time: took {duration(wall_s)}, forecast {said}"


def duration(seconds: Any) -> str:
    """'0.4s', '12s', '3m 20s', '2h 05m'."""
    seconds = float(seconds)
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s" if whole >= 60 else f"{whole}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"
