"""Awkward reply shapes through the whole evaluate flow and the CLI: tool calls written as text
counted "as text" in the report's failure table, HTTP requests (retries included) on the rows, in the
ledger and on the `model calls:` line, a reply without usage landing a NULL cost, the arguments as sent."""

from __future__ import annotations

import zlib
from pathlib import Path

import duckdb

from flows.cli import EXIT_OK, main
from tests.factories.catalogues import support_tools
from tests.provider_server import ProviderServer, Reply, Seen, oracle, status_reply, text_reply
from tests.selectors.providers.conftest import FAKE_KEY
from tests.selectors.providers.example_arguments import example_arguments
from tests.selectors.providers.test_provider_flow import one_arm_experiment, trimmed_support


def kind_of(text: str) -> int:
    return zlib.crc32(text.encode()) % 4


def awkward(expected: dict[str, str]):
    """By request: 0 a tool call written as text, 1 a 500 first, 2 no usage and no model, 3 a plain right
    answer."""
    arguments = {t.name: example_arguments(t.parameters) for t in support_tools()}
    right = oracle(expected, arguments)

    def script(seen: Seen) -> Reply:
        kind = kind_of(seen.user_text.strip())
        if kind == 0:
            return text_reply(f"functions.{seen.tools[0]}:")
        if kind == 1 and seen.attempt == 0:
            return status_reply(500)
        reply = right(seen)
        if kind == 2:
            return Reply(**{**reply.__dict__,
                            "reshape": lambda p: {k: v for k, v in p.items() if k not in ("usage", "model")}})
        return reply
    return script


def test_reply_shapes_land_as_rows_and_reach_the_report_and_the_calls_line(
        prefect_harness, support_copy, tmp_path, monkeypatch, capsys):
    expected = trimmed_support(support_copy)
    kinds = [kind_of(text) for text in expected]
    assert {0, 1, 2, 3} <= set(kinds), "the trimmed set should hold every kind of reply"
    server = ProviderServer(awkward(expected), api_key=FAKE_KEY).__enter__()
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        experiment = one_arm_experiment(support_copy, "awkward", (
            "{name: gpt, catalogue: giftcards, prompt: default, selector: openai, model: gpt-4.1-mini-2025-04-14, "
            "options: {concurrency: 2, tool_choice: auto, retry_base_delay_s: 0.01, retry_max_delay_s: 0.02}}"))
        warehouse = tmp_path / "wh"
        code = main(["run", str(experiment), "--warehouse", str(warehouse)])
        out = capsys.readouterr()
    finally:
        server.__exit__(None, None, None)
    assert code == EXIT_OK
    requests = server.requests()
    turns = 3 * len(expected)
    assert len(requests) == turns + 3 * kinds.count(1)  # one retry per seed of each request that saw a 500
    assert all(seen.body["tool_choice"] == "auto" for seen in requests)
    assert f"model calls:   {len(requests):,} HTTP requests" in out.out
    assert f"{3 * kinds.count(2):,} replies without token counts" in out.out

    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        attempts, retries, text_calls, null_costs = con.execute("""
            select sum(http_attempts), sum(retries),
                   count(*) filter (where text_tool_call(outcome, detail)),
                   count(*) filter (where cost_usd is null) from selection_rows""").fetchall()[0]
        [(as_text,)] = con.execute("select sum(text_calls) from aggregate_accuracy").fetchall()
        sent = con.execute("select count(*) from selection_rows where outcome = 'correct' and expected != 'none' "
                           "and (arguments is null or n_tool_calls != 1)").fetchall()[0][0]
    finally:
        con.close()
    assert attempts == len(requests) and retries == 3 * kinds.count(1)
    assert text_calls == as_text == 3 * kinds.count(0) and null_costs == 3 * kinds.count(2)
    assert sent == 0  # every correct tool row carries its arguments as sent and its call count

    report = next(Path(warehouse, "reports").rglob("report.html")).read_text()
    assert "as text" in report and "functions.NAME:" in report
    failures = out.out.split("Invalid, error and empty rows", 1)[1].split("\n\n", 1)[0]
    assert "as text" in failures and "functions.NAME:" in failures  # the column, and its note
    evidence = " ".join(out.out.split("Which model answered:", 1)[1].split("\n\n", 1)[0].split())
    assert "server echoes the request" in evidence and "not reported" in evidence
    assert "provider reported gpt" not in evidence  # the loopback server echoes the id it is asked for
    assert "served model not evidenced for 1. gpt" in " ".join(out.out.split())
