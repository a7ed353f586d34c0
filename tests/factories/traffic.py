"""Small production logs for tests, in every accepted format, over the tools of tests/factories/taskset.py."""

from __future__ import annotations

import json
import random
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import yaml

from schemas.arrow import to_arrow_table
from schemas.traffic import ProductionTurn
from tests.factories import SUPPORT

LOG = SUPPORT / "production" / "support_turns.parquet"
"""The bundled production log of the support task set."""
SMALL_SAMPLING = {"size": 200, "floor_per_tool": 4, "floor_none": 8}
LATER_VERSIONS = "v[2-9]*"
"""The bundled support set's versions after v1 (file names), left out of ``copy_support_v1``."""


def copy_support_v1(target: Path) -> Path:
    """A copy of the bundled support set holding v1 alone: the set a resample or a queue import derives the
    next version from in the tests (their expectations name it v2, with parent v1)."""
    return Path(shutil.copytree(SUPPORT, target, ignore=shutil.ignore_patterns(LATER_VERSIONS)))


def shrink_sampling(taskset_dir: Path, **sampling) -> None:
    """Make the task set's resample plan small (fewer requests to check and evaluate in tests)."""
    path = taskset_dir / "production" / "traffic.yaml"
    config = yaml.safe_load(path.read_text())
    config["sampling"] = {**config.get("sampling", {}), **(sampling or SMALL_SAMPLING)}
    path.write_text(yaml.safe_dump(config, sort_keys=False))


ITEMS = ["kettle", "desk lamp", "garden hose", "office chair", "toaster", "rug", "wine glasses", "yoga mat"]
TEXTS = {
    "refund_order": ["my parcel {o} arrived smashed, refund please", "the {i} from {o} is broken, money back",
                     "{i} missing from {o}, I want a refund", "charged twice for {o}, refund one",
                     "the {i} stopped working after a week, refund it", "I never received the {i}, refund me"],
    "track_shipment": ["where is my parcel {o}", "when will {o} arrive", "tracking for {o} has not moved in days",
                       "is my delivery coming today", "where is my {i}, it should be here by now"],
    "reset_password": ["cannot log in, reset my password", "password reset email never came to {e}",
                       "locked out of my account", "forgot my password again"],
    "search_kb": ["what is your return window", "do you deliver on sundays", "how long is the warranty",
                  "do you price match"],
    "none": ["thanks!", "tell me a joke", "hello", "what's the weather tomorrow"],
}
SHARES = {"refund_order": 0.45, "track_shipment": 0.25, "reset_password": 0.1, "search_kb": 0.1, "none": 0.1}
START = datetime(2026, 10, 26, tzinfo=timezone.utc)  # Monday of 2026-W44


def make_turns(n: int = 400, weeks: int = 4, seed: int = 5) -> list[dict]:
    """Turn records (ProductionTurn fields) spread over ``weeks`` weeks from 2026-W44."""
    rng = random.Random(seed)
    turns = []
    for number in range(n):
        tool = rng.choices(list(SHARES), weights=list(SHARES.values()))[0]
        text = rng.choice(TEXTS[tool]).format(o=f"NW-{rng.randint(1_000_000, 9_999_999)}", i=rng.choice(ITEMS),
                                              e=f"user{rng.randint(1, 99)}@example.com")
        text = rng.choice(["", "hi ", "hello, ", "please "]) + text + rng.choice(["", " thanks", "!!", " asap"])
        time = START + timedelta(seconds=rng.randint(0, weeks * 7 * 86400 - 1))
        turns.append({"turn_id": f"s{number:05d}", "time": time, "user_message": text, "earlier_turns": [],
                      "first_tool": tool, "conversation_id": f"c{number}", "user_retried": rng.random() < 0.1,
                      "handed_to_human": None, "empty_reply": False})
    return sorted(turns, key=lambda t: t["time"])


def write_jsonl(path: Path, turns: list[dict]) -> Path:
    path.write_text("".join(json.dumps({**t, "time": t["time"].isoformat()}) + "\n" for t in turns))
    return path


def write_duckdb(path: Path, turns: list[dict], table: str = "turns") -> Path:
    arrow = to_arrow_table(ProductionTurn, turns)
    con = duckdb.connect(str(path))
    con.register("incoming", arrow)
    con.execute(f"CREATE TABLE {table} AS SELECT * FROM incoming")
    con.close()
    return path


def _attr(key: str, value) -> dict:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def otlp_trace(trace_id: str, start: datetime, messages: list[tuple[str, str]], tool_calls: list[str],
               reply: str | None = None, metadata: dict | None = None, session: str | None = None) -> dict:
    """One agent turn as an OTLP/JSON export: an AGENT root span, an LLM span, TOOL spans."""
    nanos = int(start.timestamp() * 1e9)
    root_attrs = [_attr("openinference.span.kind", "AGENT"), _attr("input.value", messages[-1][1])]
    if session:
        root_attrs.append(_attr("session.id", session))
    if metadata is not None:
        root_attrs.append(_attr("metadata", json.dumps(metadata)))
    llm_attrs = [_attr("openinference.span.kind", "LLM"), _attr("llm.model_name", "gpt-test")]
    for i, (role, content) in enumerate(messages):
        llm_attrs += [_attr(f"llm.input_messages.{i}.message.role", role),
                      _attr(f"llm.input_messages.{i}.message.content", content)]
    llm_attrs.append(_attr("llm.output_messages.0.message.role", "assistant"))
    if reply is not None:
        llm_attrs.append(_attr("llm.output_messages.0.message.content", reply))
    for j, name in enumerate(tool_calls):
        llm_attrs.append(_attr(f"llm.output_messages.0.message.tool_calls.{j}.tool_call.function.name", name))
    spans = [
        {"traceId": trace_id, "spanId": f"{trace_id}-root", "name": "agent", "kind": 1,
         "startTimeUnixNano": str(nanos), "endTimeUnixNano": str(nanos + 900_000_000), "attributes": root_attrs},
        {"traceId": trace_id, "spanId": f"{trace_id}-llm", "parentSpanId": f"{trace_id}-root", "name": "ChatCompletion",
         "startTimeUnixNano": str(nanos + 1_000_000), "endTimeUnixNano": str(nanos + 500_000_000), "attributes": llm_attrs},
    ]
    for j, name in enumerate(tool_calls):
        spans.append({"traceId": trace_id, "spanId": f"{trace_id}-tool{j}", "parentSpanId": f"{trace_id}-root",
                      "name": name, "startTimeUnixNano": str(nanos + 600_000_000 + j),
                      "endTimeUnixNano": str(nanos + 800_000_000),
                      "attributes": [_attr("openinference.span.kind", "TOOL"), _attr("tool.name", name)]})
    return {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "support-agent")]},
                               "scopeSpans": [{"scope": {"name": "openinference"}, "spans": spans}]}]}
