"""What a selection run will cost before its first call (tasks/selection/cost_forecast.py): estimated from the
requests where the warehouse has no rows of the same model, catalogue and routing; from the means of those
rows where it has; printed by `tooleval validate` within 80 columns; and, after the run, set against what the
rows were billed (view cost_forecast_error)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.selection.forecast import CostForecast
from tasks.run.prepare_run import prepare_run
from tasks.selection.cost_forecast import CHARS_PER_TOKEN, REPLY_TOKENS, error_lines, forecast_run, usd
from tasks.selectors.providers.pricing import price_for
from tests.factories import ROOT
from tests.factories.catalogues import SHOP_TOOLS
from tests.factories.cli import run_cli
from tests.factories.rows import KnownRun, insert, memory_warehouse, selection_row
from tests.factories.taskset import REQUESTS, write_experiment, write_taskset

MODEL = "gpt-4.1-mini-2025-04-14"
PROMPT = "Pick the one tool that fits, or none.\n"
HOSTED = {"selector": "openai", "model": MODEL}


@pytest.fixture
def hosted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A task set of 5 requests and an experiment of a hosted arm and an offline one, 3 seeds."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-forecast")
    root = write_taskset(tmp_path / "shop")
    return write_experiment(root, arms=[{"name": "gpt", **HOSTED},
                                        {"name": "bm25", "options": {"abstain_threshold": 0.5}}])


def chars_of_tools(tools) -> int:
    """Name, description and JSON schema of each tool, as the catalogue was read (parameters filled in)."""
    return sum(len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in tools)


def test_with_no_past_rows_the_forecast_is_estimated_from_the_requests(hosted):
    prepared = prepare_run(hosted, checked=False)
    forecast = forecast_run(prepared, None)
    [arm] = forecast.arms  # the offline arm forecasts nothing
    tools = chars_of_tools(prepared.experiment.arms[0].catalogue.tools)
    assert tools > sum(len(t["name"]) + len(t["description"]) for t in SHOP_TOOLS)
    tokens = 3 * sum(math.ceil((len(PROMPT) + len(r["messages"][0]["content"]) + tools) / CHARS_PER_TOKEN)
                     for r in REQUESTS)
    price = price_for(MODEL)
    assert (arm.arm, arm.source, arm.rows, arm.calls) == ("gpt", "estimate", 15, 15)
    assert (arm.input_tokens, arm.output_tokens) == (tokens, 15 * REPLY_TOKENS)
    assert arm.usd == pytest.approx(price.cost(tokens, 15 * REPLY_TOKENS))
    assert arm.batch_usd == pytest.approx(arm.usd / 2)  # the dated batch price: half of every rate
    lines = forecast.lines()
    assert lines[0] == f"cost before the first call (prices of {price.version}):"
    assert "(estimated)" in lines[2] and all(len(line) <= 78 for line in lines)  # 2 more columns in validate


def test_past_rows_of_the_same_model_catalogue_and_routing_make_the_forecast(hosted, tmp_path):
    prepared = prepare_run(hosted, checked=False)
    [arm] = [a for a in prepared.experiment.arms if a.name == "gpt"]
    (tmp_path / "wh").mkdir()
    known = KnownRun(tmp_path / "wh" / "tooleval.duckdb", arms=("gpt", "other"))
    same = dict(arm="gpt", model_id=MODEL, selector="openai", output_tokens=20, http_attempts=1)
    known.add([selection_row(f"q{i}", "refund_order", True, input_tokens=1000 + 200 * (i % 2), **same)
               for i in range(6)])
    known.add([selection_row("cached", "refund_order", True, input_tokens=5000, cache_hit=True, **same)])
    known.add([selection_row(f"o{i}", "refund_order", True, arm="other", model_id=MODEL, input_tokens=9000,
                             output_tokens=20) for i in range(4)])  # another catalogue: not the arm's history
    known.arm_respects("gpt", model_id=MODEL, catalogue_hash=arm.catalogue_hash, selector="openai")
    known.arm_respects("other", model_id=MODEL, catalogue_hash="another", selector="openai")
    known.finish().close()

    [made] = forecast_run(prepared, tmp_path / "wh").arms
    assert (made.source, made.past_rows, made.rows, made.calls) == ("history", 6, 15, 15)
    assert (made.input_tokens, made.output_tokens) == (15 * 1100, 15 * 20)
    assert made.usd == pytest.approx(15 * price_for(MODEL).cost(1100, 20))
    assert "(from 6 past rows)" in made.lines()[1]


def test_validate_reads_the_past_rows_of_the_warehouse_it_is_given(hosted, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TOOLEVAL_CACHE_DIR", str(tmp_path / "cache"))
    prepared = prepare_run(hosted, checked=False)
    (tmp_path / "wh").mkdir()
    known = KnownRun(tmp_path / "wh" / "tooleval.duckdb", arms=("gpt",))
    known.add([selection_row(f"q{i}", "refund_order", True, arm="gpt", model_id=MODEL, input_tokens=1000,
                             output_tokens=20, http_attempts=1) for i in range(4)])
    known.arm_respects("gpt", model_id=MODEL, catalogue_hash=prepared.experiment.arms[0].catalogue_hash)
    known.finish().close()
    code, out, _ = run_cli(capsys, "validate", str(hosted), "--warehouse", str(tmp_path / "wh"))
    assert code == 0 and "$0.0065 as calls, $0.0032 as a batch (from 4 past rows)" in out  # 15 x 1,000 in, 20 out
    code, _, err = run_cli(capsys, "validate", str(hosted.parent.parent / "v1.jsonl"), "--warehouse", "wh")
    assert code != 0 and "--warehouse is for an experiment's cost forecast" in err


def test_the_error_view_sets_the_forecast_against_the_rows_sent_as_they_were_sent(con):
    rows = [selection_row(f"q{i}", "refund_order", True, cost_usd=0.01, sent_as="call") for i in range(4)]
    rows += [selection_row(f"b{i}", "refund_order", True, cost_usd=0.004, sent_as="batch") for i in range(4)]
    rows += [selection_row(f"c{i}", "refund_order", True, cost_usd=0.01, cache_hit=True) for i in range(2)]
    insert(con, "landed_rows", __import__("schemas.selection.rows", fromlist=["SelectionRow"]).SelectionRow, rows)
    insert(con, "cost_forecasts", CostForecast, [dict(
        run_id="run1", arm="base", model_id=MODEL, source="estimate", past_rows=0, rows=10, calls=10,
        input_tokens=1, output_tokens=1, usd=0.1, batch_usd=0.05, price_version="2026-12-07")])
    found = con.execute("select arm, forecast_usd, billed_usd, error, called_rows, rows "
                        "from cost_forecast_error").fetchall()
    # 4 calls at 0.1/10 and 4 batch requests at 0.05/10 forecast; 0.056 billed (the cache's rows cost nothing)
    [(arm, forecast, billed, error, called, planned)] = found
    assert (arm, called, planned) == ("base", 8, 10)
    assert forecast == pytest.approx(0.06) and billed == pytest.approx(0.056)
    assert error == pytest.approx(0.056 / 0.06 - 1)
    lines = error_lines(found)
    assert lines[1] == "  arm base: $0.0560 billed, $0.0600 forecast, -6.7% (8 of 10 rows sent)"
    assert all(len(line) <= 80 for line in lines)


def test_validate_prints_the_forecast_and_an_offline_check_imports_no_duckdb(hosted, tmp_path, capsys,
                                                                             monkeypatch):
    monkeypatch.setenv("TOOLEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TOOLEVAL_WAREHOUSE", str(tmp_path / "no-warehouse"))
    for _ in range(2):  # checked, then its remembered pass: the forecast is worked out each time
        code, out, _ = run_cli(capsys, "validate", str(hosted))
        assert code == 0 and "  cost before the first call (prices of" in out and "(cost forecast)" not in out
        forecast = out[out.index("  cost before"):out.index("nothing was run")].splitlines()
        assert forecast[1].startswith("    arm gpt: 15 calls,") and "(estimated)" in forecast[2]
        assert "arm bm25" not in "".join(forecast) and all(len(line) <= 80 for line in forecast)

    offline = write_experiment(hosted.parent.parent, "offline.yaml", arms=[{"name": "a"}])
    code = ("import sys, json\nfrom pathlib import Path\n"
            "from tasks.run.validate_experiment import validate_experiment_file\n"
            f"lines = validate_experiment_file(Path({str(offline)!r}))\n"
            "print(json.dumps([lines, sorted(sys.modules)]))")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOOLEVAL_CACHE_DIR": str(tmp_path / "cache")}
    lines, loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                              env=env, cwd=ROOT, check=True).stdout)
    assert not any("cost before" in line for line in lines) and "duckdb" not in loaded


def test_a_forecast_is_registered_with_its_run_and_read_back(tmp_path):
    con = memory_warehouse(tmp_path / "tooleval.duckdb")
    record = CostForecast(run_id="r", arm="a", model_id=MODEL, source="history", past_rows=3, rows=9, calls=9,
                          input_tokens=900, output_tokens=90, usd=0.01, batch_usd=None, price_version="2026-12-07")
    insert(con, "cost_forecasts", CostForecast, [record.model_dump()])
    assert con.execute("select source, past_rows, batch_usd from cost_forecasts").fetchall() == [("history", 3, None)]


def test_the_llm_routers_estimate_counts_the_prompt_it_is_sent(hosted):
    """The router's characters are its system prompt and ``router_prompt``'s text, within 3%: the constants
    follow tasks/selectors/providers/routed.py."""
    from schemas.taskset import Message
    from tasks.selection.cost_forecast import request_sizes
    from tasks.selectors.base import SelectionInput
    from tasks.selectors.providers.routed import ROUTER_SYSTEM, router_prompt

    prepared = prepare_run(hosted, checked=False)
    arm = prepared.experiment.arms[0]
    sizes = request_sizes(arm, prepared.versions["v1"])
    for request, size in zip(REQUESTS, sizes):
        item = SelectionInput(request_id=request["id"], prompt=arm.prompt_text, tools=arm.catalogue.tools,
                              messages=tuple(Message(**m) for m in request["messages"]))
        sent = len(ROUTER_SYSTEM) + len(router_prompt(item, arm.catalogue.tools))
        assert size.router == pytest.approx(sent, rel=0.03)


def test_rows_the_result_cache_answers_are_not_forecast_as_sent(hosted, tmp_path):
    """The cache's keys are the run's own (plan_batch): 4 of the arm's 15 rows held there are left out of what
    the lines say it will send and cost, and the record keeps every planned row's figures and the count."""
    import sqlite3

    from tasks.selection.plan_batch import plan_arm_seed, plan_batch

    prepared = prepare_run(hosted, checked=False)
    arm = prepared.experiment.arms[0]
    [unit] = plan_arm_seed(arm, 1, prepared.versions["v1"].requests, prepared.taskset, 100)
    (tmp_path / "wh" / "cache").mkdir(parents=True)
    con = sqlite3.connect(tmp_path / "wh" / "cache" / "selections.sqlite")
    con.execute("create table selections (key text primary key, selection text not null)")
    con.executemany("insert into selections values (?, '{}')", [(p.cache_key,) for p in plan_batch(unit)[:4]])
    con.commit()
    con.close()

    whole = forecast_run(prepared, tmp_path / "wh", use_cache=False).arms[0]
    [made] = forecast_run(prepared, tmp_path / "wh").arms
    assert (whole.cached_rows, made.cached_rows) == (0, 4) and made.usd == pytest.approx(whole.usd)
    assert made.sent_usd == pytest.approx(whole.usd * 11 / 15)
    lines = made.lines()
    assert lines[0].startswith(f"  arm gpt: 11 calls,") and lines[1] == "    4 of 15 rows from the result cache, not sent"
    assert made.sent_batch_usd is not None and lines[2].startswith(f"    {usd(made.sent_usd)} as calls")
    assert forecast_run(prepared, tmp_path / "wh").records("r")["cost_forecasts"][0].cached_rows == 4


def test_a_warehouse_held_by_a_writer_is_not_waited_for_the_forecast_is_estimated_and_says_why(hosted, tmp_path):
    from tests.factories.processes import hold

    (tmp_path / "wh").mkdir()
    memory_warehouse(tmp_path / "wh" / "tooleval.duckdb").close()
    holder = hold(tmp_path / "wh" / "tooleval.duckdb", 60, read_only=False)  # a run registering, say
    try:
        made = forecast_run(prepare_run(hosted, checked=False), tmp_path / "wh")
    finally:
        holder.kill()
        holder.wait()
    assert made.arms[0].source == "estimate" and made.note and made.note.startswith("past rows not read:")
    assert made.lines()[-1].startswith("  (past rows not read:") and len(made.lines()[-1]) <= 78


def test_the_hosted_experiments_header_points_at_the_forecast_not_a_sum():
    """Its cost is what validate prints at today's prices, not a figure written down once."""
    import re

    lines = (ROOT / "tasksets" / "support" / "experiments" / "models.yaml").read_text().splitlines()
    header = " ".join(line.lstrip("# ") for line in lines[:lines.index(next(l for l in lines if l[:1] != "#"))])
    assert "`tooleval validate tasksets/support/experiments/models.yaml`" in header
    assert not re.search(r"\$\d|\d{4}-\d\d-\d\d|\d,\d{3} calls", header)


def test_routed_and_judged_arms_are_forecast_at_the_batch_price(tmp_path, monkeypatch):
    """An offline router runs locally, an LLM router's calls and a judge's votes go as batch rounds: every
    line is at the batch price (half of every rate)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-forecast")
    root = write_taskset(tmp_path / "shop")
    judge = {"model": MODEL, "votes": 3}
    experiment = write_experiment(root, arms=[
        {"name": "lexical", **HOSTED, "options": {"route": "forced", "router": "lexical"}},
        {"name": "llm", **HOSTED, "options": {"route": "gated", "router": "llm", "router_model": MODEL,
                                              "threshold": 0.5}},
        {"name": "judged", **HOSTED, "options": {"judge": judge}}])
    lexical, llm, judged = forecast_run(prepare_run(experiment, checked=False), None).arms
    assert lexical.batch_usd == pytest.approx(lexical.usd / 2)
    assert llm.calls == 2 * lexical.calls and llm.usd > lexical.usd and llm.batch_usd == pytest.approx(llm.usd / 2)
    assert judged.calls == 4 * lexical.calls and judged.batch_usd == pytest.approx(judged.usd / 2)
