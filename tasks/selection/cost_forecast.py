"""What a selection run will cost before its first call: per arm with hosted-model calls, its calls, input and
output tokens and US dollars, sent as synchronous calls and as a provider batch (the dated price file's batch
price, tasks/selectors/providers/pricing.py).

Where the warehouse already holds rows of the same chat model, catalogue (by content) and routing design
(route and router kind) that were not answered from the cache, the forecast is their per-row means times the
arm's planned rows: prompt tokens (and those read from the provider's prompt cache), completion tokens, HTTP
requests (retries, the LLM router's and the judge's calls included) and the router's and the judge's cost; the
tokens are priced at today's price file. Otherwise it is an estimate from the requests themselves: the prompt,
the messages and the offered tools at ``CHARS_PER_TOKEN`` characters a token, ``REPLY_TOKENS`` completion
tokens a chat call, one call per turn for the chat model, one for an LLM router (one output token) and one
per judge vote. Either way, the rows the warehouse's result cache answers already (their cache keys as the
run plans them) are left out of what the run is said to send and cost, unless it runs with ``--no-cache``.

Offline arms forecast nothing. ``tooleval validate`` and the first lines of ``tooleval run`` print it, the run
registers it (table ``cost_forecasts``) and the view ``cost_forecast_error`` sets it against what the rows were
billed. DuckDB is imported only when an experiment has a hosted arm and the warehouse file exists.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from tasks.selection.time_forecast import ArmTime, PastTimes, arm_time, duration, past_times, run_call_seconds, \
    took_line
from tasks.selectors.providers.chat_options import HOSTED_KINDS
from tasks.selectors.providers.pricing import ModelPrice, price_for

if TYPE_CHECKING:
    from schemas.selection.forecast import CostForecast
    from tasks.instrument_api import PreparedRun
    from tasks.selection.arms import SelectionArm

CHARS_PER_TOKEN = 4
"""Characters a prompt token stands for in an estimate (English text and JSON schemas; the budget's upper bound,
``CHARS_PER_TOKEN_BOUND``, is 3)."""
REPLY_TOKENS = 40
"""Completion tokens an estimate gives a chat call or a judge vote: one tool call with a few arguments."""
ROUTER_PROMPT_CHARS = 330
"""The LLM router's fixed text around a request (its system prompt, headings, the 'none' option and the closing
line: tasks/selectors/providers/routed.py ``router_prompt``), in characters."""
OPTION_LINE_CHARS = 6
"""What the router's list adds to a tool's name and description (its number and punctuation)."""
DB_FILE = "tooleval.duckdb"
CACHE_FILE = "selections.sqlite"
"""The selection instrument's result cache under the warehouse's ``cache/`` (its card's ``cache_file``)."""
CACHE_CHUNK = 500


@dataclass(frozen=True)
class PastRows:
    """Per-row means of past rows of one (model, catalogue, route, router kind)."""

    n: int
    input_tokens: float
    output_tokens: float
    cached_input_tokens: float
    cache_write_tokens: float
    calls: float
    other_usd: float
    """The router's and the judge's cost per row, at the prices they were billed."""


@dataclass(frozen=True)
class ArmForecast:
    arm: str
    model_id: str
    rows: int
    calls: int
    input_tokens: int
    output_tokens: int
    usd: float
    batch_usd: float | None
    past_rows: int
    price_version: str
    no_batch: str = "no batch price"
    """Why ``batch_usd`` is None: the price file gives none, or the arm cannot send a batch."""
    cached_rows: int = 0
    """Planned rows the result cache answers already: not sent, not billed. The figures above are for every
    planned row; what the run will send is their share (``sent``)."""
    time: ArmTime | None = None
    """How long its calls will take (tasks/selection/time_forecast.py)."""

    @property
    def source(self) -> str:
        return "history" if self.past_rows else "estimate"

    @property
    def sent(self) -> float:
        """The share of the planned rows the run will send."""
        return (self.rows - self.cached_rows) / self.rows if self.rows else 0.0

    @property
    def sent_calls(self) -> int:
        return round(self.calls * self.sent)

    @property
    def sent_usd(self) -> float:
        return self.usd * self.sent

    @property
    def sent_batch_usd(self) -> float | None:
        return None if self.batch_usd is None else self.batch_usd * self.sent

    def lines(self) -> list[str]:
        share = self.sent
        batch = self.no_batch if self.batch_usd is None else f"{usd(self.sent_batch_usd or 0)} as a batch"
        source = f"from {self.past_rows:,} past rows" if self.past_rows else "estimated"
        cached = [f"    {self.cached_rows:,} of {self.rows:,} rows from the result cache, not sent"] \
            if self.cached_rows else []
        return [f"  arm {self.arm}: {self.sent_calls:,} calls, {tokens(round(self.input_tokens * share))} "
                f"input and {tokens(round(self.output_tokens * share))} output tokens", *cached,
                f"    {usd(self.sent_usd)} as calls, {batch} ({source})",
                *(self.time.lines(self.sent_calls) if self.time is not None else [])]


@dataclass(frozen=True)
class RunForecast:
    """The forecast of every arm with hosted-model calls (none: an offline experiment)."""

    arms: tuple[ArmForecast, ...]
    note: str | None = None
    """Why the warehouse's history or its result cache was not read (e.g. the file is held by a writer)."""

    def lines(self) -> list[str]:
        if not self.arms:
            return []
        versions = sorted({arm.price_version for arm in self.arms})
        total = sum(arm.sent_usd for arm in self.arms)
        batch = sum(arm.sent_usd if arm.sent_batch_usd is None else arm.sent_batch_usd for arm in self.arms)
        lines = [f"cost before the first call (prices of {', '.join(versions)}):"]
        for arm in self.arms:
            lines += arm.lines()
        lines.append(f"  total: {sum(a.sent_calls for a in self.arms):,} calls, {usd(total)} as calls"
                     + (f", {usd(batch)} with batches where they can go" if batch != total else ""))
        seconds = self.call_seconds()
        lines.append("  time as calls: unknown for an arm without past rows" if seconds is None else
                     f"  time as calls: about {duration(seconds)} (arms on one endpoint share its bound)")
        if self.note:
            lines.append(f"  ({self.note})")
        return lines

    def call_seconds(self) -> float | None:
        """The run's time as calls (None: an arm's time is unknown)."""
        return run_call_seconds([(a.time, a.sent_calls) for a in self.arms if a.time is not None]) \
            if all(a.time is not None for a in self.arms) else None

    def records(self, run_id: str) -> dict[str, list[CostForecast]]:
        from schemas.selection.forecast import CostForecast

        return {"cost_forecasts": [CostForecast(
            run_id=run_id, arm=a.arm, model_id=a.model_id, source=a.source, past_rows=a.past_rows, rows=a.rows,
            calls=a.calls, input_tokens=a.input_tokens, output_tokens=a.output_tokens, usd=a.usd,
            batch_usd=a.batch_usd, cached_rows=a.cached_rows, price_version=a.price_version, **time_fields(a))
            for a in self.arms]}

    def error_lines(self, db_path: Path, run_id: str) -> list[str]:
        if not self.arms:
            return []
        import duckdb

        from warehouse.connect import WarehouseBusy, WarehouseUnreadable, connect

        try:
            con = connect(db_path, read_only=True, wait_s=5)
            try:
                found = con.execute(ERROR_SQL, [run_id]).fetchall()
                took = con.execute(TOOK_SQL, [run_id, run_id]).fetchone()
            finally:
                con.close()
        except (duckdb.Error, WarehouseBusy, WarehouseUnreadable) as error:  # registered: read it later
            return [f"cost against the forecast: not read now ({str(error).splitlines()[0][:40]}); "
                    f"see the view cost_forecast_error"]
        wall_s, batch_rows = took if took is not None else (None, 0)
        return error_lines(found) + ([took_line(wall_s, self.call_seconds(), batch_rows or 0)]
                                     if wall_s is not None else [])


def time_fields(arm: ArmForecast) -> dict[str, Any]:
    """The time forecast's columns of ``cost_forecasts`` (none when the arm has no time forecast)."""
    time = arm.time
    if time is None:
        return {}
    return {"concurrency": time.concurrency, "latency_rows": time.past.call_rows,
            "call_latency_ms": time.past.call_ms, "call_seconds": time.call_seconds(arm.sent_calls),
            "past_batches": time.past.batches, "batch_wait_s": time.past.batch_wait_s}


ERROR_SQL = """
select arm, forecast_usd, billed_usd, error, called_rows, rows
from cost_forecast_error where run_id = ? order by arm
"""

TOOK_SQL = """
select date_diff('millisecond', started_at, finished_at) / 1000,
       (select count(*) from landed_rows where run_id = ? and sent_as = 'batch' and not cache_hit)
from runs where run_id = ?
"""


def error_lines(found: Sequence[tuple]) -> list[str]:
    """The forecast against the bill, per arm (rows of ``cost_forecast_error``) and for the run."""
    lines = ["cost against the forecast (of the rows sent, as they were sent):"]
    for arm, forecast, billed, error, called, rows in found:
        if not called:
            lines.append(f"  arm {arm}: every row came from the cache, nothing billed")
            continue
        lines.append(f"  arm {arm}: {usd(billed)} billed, {usd(forecast or 0)} forecast"
                     + (f", {percent(error)}" if error is not None else "")
                     + (f" ({called:,} of {rows:,} rows sent)" if called != rows else ""))
    forecast = sum(row[1] or 0 for row in found)
    billed = sum(row[2] or 0 for row in found)
    if len(found) > 1 and forecast:
        error = percent((billed - forecast) / forecast)
        lines.append(f"  run: {usd(billed)} billed, {usd(forecast)} forecast, {error}")
    return lines if found else []


def percent(error: float) -> str:
    """A relative error, signed, to a tenth of a percent (no '-0.0%')."""
    return f"{0.0 if abs(error) < 0.0005 else error:+.1%}"


def usd(value: float) -> str:
    return f"${value:,.2f}" if value >= 0.995 or value == 0 else f"${value:.4f}"


def tokens(value: int) -> str:
    for size, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if value >= size:
            return f"{value / size:.1f}{suffix}".replace(".0" + suffix, suffix)
    return str(value)


# -- the arms ---------------------------------------------------------------------------------------------

def is_hosted(arm: Any) -> bool:
    return getattr(arm, "selector", None) in HOSTED_KINDS


def routing_key(arm: "SelectionArm") -> tuple[str, str, str, str]:
    """(model, catalogue content, route, router kind): what past rows must share to stand for the arm's."""
    options = arm.selector_options
    return (arm.model_id, arm.catalogue_hash, str(options.get("route") or ""), str(options.get("router") or ""))


# -- history ----------------------------------------------------------------------------------------------

HISTORY_SQL = """
select a.model_id, a.catalogue_hash, coalesce(r.route, ''), coalesce(split_part(r.router, ':', 1), ''),
       count(*), avg(coalesce(r.input_tokens, 0)), avg(coalesce(r.output_tokens, 0)),
       avg(coalesce(r.cached_input_tokens, 0)), avg(coalesce(r.cache_write_tokens, 0)),
       avg(coalesce(r.http_attempts, 1)),
       avg(coalesce(r.router_cost_usd, 0) + coalesce(r.judge_cost_usd, 0))
from landed_rows r join arms a on a.run_id = r.run_id and a.arm = r.arm
where not r.cache_hit and r.input_tokens is not null and a.model_id in ({models})
group by all
"""


def _not_read(error: BaseException) -> str:
    from warehouse.connect import is_lock_conflict

    why = "the file is held by another process" if is_lock_conflict(error) else str(error).splitlines()[0][:40]
    return f"past rows not read: {why}"


@dataclass(frozen=True)
class History:
    """What the warehouse's past rows say: per (model, catalogue hash, route, router kind) their means, per
    model their times; and a note when the file could not be read (the forecast then estimates)."""

    rows: dict[tuple[str, str, str, str], PastRows]
    times: dict[str, PastTimes]
    note: str | None = None


def past_rows(db_path: Path, models: Sequence[str]) -> History:
    """The past rows of ``models`` in the DuckDB file at ``db_path``."""
    if not db_path.is_file() or not models:
        return History({}, {})
    import duckdb

    try:
        con = duckdb.connect(str(db_path), read_only=True)
    except duckdb.Error as error:
        return History({}, {}, _not_read(error))
    try:
        tables = {row[0] for row in con.execute("select table_name from information_schema.tables").fetchall()}
        if not {"landed_rows", "arms"} <= tables:
            return History({}, {})
        found = con.execute(HISTORY_SQL.format(models=", ".join("?" for _ in models)), list(models)).fetchall()
        times = past_times(con, models)
    except duckdb.Error as error:
        return History({}, {}, _not_read(error))
    finally:
        con.close()
    return History({(m, c, route, router): PastRows(n, *means) for m, c, route, router, n, *means in found}, times)


# -- the forecast -----------------------------------------------------------------------------------------

def forecast_run(prepared: "PreparedRun", warehouse: Path | None, use_cache: bool = True) -> RunForecast:
    """The forecast of each hosted arm of ``prepared`` from the warehouse at ``warehouse`` (its history, if
    it has one) or from the requests, less the rows its result cache answers (``use_cache``). Never raises
    for the warehouse: a file that cannot be read is a note."""
    experiment = prepared.experiment
    hosted = [arm for arm in experiment.arms if is_hosted(arm)]
    if not hosted:
        return RunForecast(())
    history = past_rows(Path(warehouse) / DB_FILE, sorted({arm.model_id for arm in hosted})) \
        if warehouse is not None else History({}, {})
    cached, cache_note = cached_rows(prepared, hosted, Path(warehouse) / "cache" / CACHE_FILE) \
        if warehouse is not None and use_cache else ({}, None)
    seeds = len(experiment.seeds)
    arms = []
    for arm in hosted:
        version = prepared.versions[arm.version]
        past = history.rows.get(routing_key(arm))
        made = (from_history(arm, len(version.requests) * seeds, past) if past else
                estimated(arm, version, seeds))
        made = replace(made, cached_rows=cached.get(arm.name, 0),
                       time=arm_time(arm, history.times, batchable=made.batch_usd is not None))
        arms.append(made)
    return RunForecast(tuple(arms), "; ".join(n for n in (history.note, cache_note) if n) or None)


def cached_rows(prepared: "PreparedRun", arms: Sequence["SelectionArm"], cache: Path
                ) -> tuple[dict[str, int], str | None]:
    """Per arm, how many of its planned rows the result cache at ``cache`` answers already (their cache keys,
    as the run plans them); and a note when the cache could not be read."""
    if not cache.is_file():
        return {}, None
    import sqlite3

    from tasks.selection.plan_batch import plan_arm_seed, plan_batch

    keys = {arm.name: [planned.cache_key for seed in prepared.experiment.seeds
                       for unit in plan_arm_seed(arm, seed, prepared.versions[arm.version].requests,
                                                 prepared.taskset, CACHE_CHUNK)
                       for planned in plan_batch(unit)] for arm in arms}
    found: dict[str, int] = {}
    try:
        con = sqlite3.connect(f"file:{cache}?mode=ro", uri=True)
        try:
            for arm, wanted in keys.items():
                found[arm] = sum(
                    con.execute(f"select count(*) from selections where key in ({','.join('?' * len(chunk))})",
                                chunk).fetchone()[0]
                    for chunk in (wanted[i:i + CACHE_CHUNK] for i in range(0, len(wanted), CACHE_CHUNK)))
        finally:
            con.close()
    except sqlite3.Error as error:
        return {}, f"result cache not read: {str(error)[:50]}"
    return found, None


def _prices(arm: "SelectionArm", model_id: str | None = None) -> tuple[ModelPrice, ModelPrice | None]:
    """The arm's (or its router's or judge's) price, and its batch price (None: the price file gives none). Every
    hosted arm can batch: an LLM router's calls and a judge's votes go as batch rounds of their own."""
    model_id = model_id or arm.model_id
    options = arm.selector_options if model_id == arm.model_id else {}
    price = price_for(model_id, options)
    try:
        return price, price_for(model_id, options, batch=True)
    except KeyError:
        return price, None


def from_history(arm: "SelectionArm", rows: int, past: PastRows) -> ArmForecast:
    price, batch_price = _prices(arm)
    per_row = (past.input_tokens, past.output_tokens, past.cached_input_tokens, past.cache_write_tokens)
    usd_row = price.cost(*per_row) + past.other_usd
    batch_row = None if batch_price is None else batch_price.cost(*per_row) + past.other_usd
    return ArmForecast(arm=arm.name, model_id=arm.model_id, rows=rows, calls=round(past.calls * rows),
                       input_tokens=round(past.input_tokens * rows), output_tokens=round(past.output_tokens * rows),
                       usd=usd_row * rows, batch_usd=None if batch_row is None else batch_row * rows,
                       past_rows=past.n, price_version=price.version)


def _tool_chars(tools: Sequence[Any]) -> tuple[int, int]:
    """(name, description and JSON schema, as the chat model is sent them; name and description, as the LLM
    router lists them) of ``tools``, in characters."""
    sent = listed = 0
    for tool in tools:
        name, description, parameters = ((tool.get("name", ""), tool.get("description", ""),
                                          tool.get("parameters") or {}) if isinstance(tool, dict)
                                         else (tool.name, tool.description, tool.parameters))
        sent += len(name) + len(description) + len(json.dumps(parameters))
        listed += len(name) + len(description) + OPTION_LINE_CHARS
    return sent, listed


@dataclass(frozen=True)
class RequestSize:
    """One request's characters: the arm's prompt, its messages, its tools as sent and as the router lists them."""

    prompt: int
    said: int
    tools: int
    options: int

    @property
    def chat(self) -> int:
        return self.prompt + self.said + self.tools

    @property
    def router(self) -> int:
        return ROUTER_PROMPT_CHARS + self.said + self.options


def request_sizes(arm: "SelectionArm", version: Any) -> list[RequestSize]:
    """Each request's ``RequestSize`` under the arm (a narrowed arm sends its share of the tools)."""
    catalogue = _tool_chars(arm.catalogue.tools) if arm.catalogue is not None else (0, 0)
    n_catalogue = len(arm.catalogue.tools) if arm.catalogue is not None else 0
    narrowed = arm.selector_options.get("route") == "narrowed" and n_catalogue
    share = min(1.0, int(arm.selector_options.get("narrow_k", 1)) / n_catalogue) if narrowed else 1.0
    messages = version.column("messages")
    own_tools = version.column("tools") if arm.catalogue is None else [None] * len(messages)
    out = []
    for text, tools in zip(messages, own_tools):
        parsed = json.loads(text) if isinstance(text, str) else text
        said = sum(len(m["content"] if isinstance(m, dict) else m.content) for m in parsed)
        sent, listed = catalogue if arm.catalogue is not None else _tool_chars(
            json.loads(tools) if isinstance(tools, str) else (tools or []))
        out.append(RequestSize(len(arm.prompt_text), said, round(sent * share), listed))
    return out


def _tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def estimated(arm: "SelectionArm", version: Any, seeds: int) -> ArmForecast:
    options = arm.selector_options
    price, batch_price = _prices(arm)
    sizes = request_sizes(arm, version)
    chat_in = sum(_tokens(size.chat) for size in sizes) * seeds
    turns = len(sizes) * seeds
    chat_out = REPLY_TOKENS * turns
    calls, other = turns, 0.0
    extra: list[tuple[str, int, int, int]] = []  # (model, calls, input tokens, output tokens)
    if options.get("router") == "llm":
        router_in = sum(_tokens(size.router) for size in sizes) * seeds
        extra.append((str(options.get("router_model") or arm.model_id), turns, router_in, turns))
    judge = options.get("judge")
    if isinstance(judge, dict) and judge.get("model"):
        votes = int(judge.get("votes", 1))
        extra.append((str(judge["model"]), turns * votes, chat_in * votes, REPLY_TOKENS * turns * votes))
    other_batch: float | None = 0.0  # the LLM router's and judge's lines at their batch price (None: none)
    for model, n, tokens_in, tokens_out in extra:
        extra_price, extra_batch = _prices(arm, model)
        calls += n
        other += extra_price.cost(tokens_in, tokens_out)
        other_batch = None if extra_batch is None or other_batch is None else \
            other_batch + extra_batch.cost(tokens_in, tokens_out)
    batch_usd = None if batch_price is None or other_batch is None else \
        batch_price.cost(chat_in, chat_out) + other_batch
    return ArmForecast(arm=arm.name, model_id=arm.model_id, rows=turns, calls=calls, input_tokens=chat_in,
                       output_tokens=chat_out, usd=price.cost(chat_in, chat_out) + other, batch_usd=batch_usd,
                       past_rows=0, price_version=price.version)
