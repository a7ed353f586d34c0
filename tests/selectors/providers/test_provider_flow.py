"""A whole hosted-model experiment through the real Prefect flow, against the loopback server.

The bundled ``experiments/models.yaml`` runs unchanged: its arms name the official services, and the test
points the SDKs at 127.0.0.1 through ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` with a distinctive fake
key. Afterwards every file of the warehouse and of Prefect's home, database and result storage is read
byte by byte: the key must be nowhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from flows.cli import EXIT_MODEL_MISMATCH, EXIT_OK, main
from tasks.selectors.providers.pricing import current_price_file
from tasks.taskset.load_taskset import freeze_version
from tests.factories.catalogues import support_tools
from tests.provider_server import ProviderServer, oracle, tool_call
from tests.selectors.providers.conftest import FAKE_KEY
from tests.selectors.providers.example_arguments import example_arguments

N_REQUESTS = 12
ARMS = ["gpt-default", "claude-default", "gpt-forced-embedding", "gpt-gated-embedding", "gpt-narrowed-embedding",
        "gpt-gated-llm"]


def trimmed_support(support_copy: Path) -> dict[str, str]:
    """Cut the copied support set's v1 to a few requests, and its v2 (v1 with expected arguments) to the same
    ones (new frozen versions of the copy, v2's parent v1); text -> label."""
    lines = [json.loads(line) for line in (support_copy / "v1.jsonl").read_text().splitlines() if line.strip()]
    plain = [r for r in lines if "fallback" not in r and len(r["messages"]) == 1]
    kept = plain[:: max(1, len(plain) // N_REQUESTS)][:N_REQUESTS]
    ids = {r["id"] for r in kept}
    for version, parent in (("v1", None), ("v2", "v1")):
        requests = [json.loads(line) for line in (support_copy / f"{version}.jsonl").read_text().splitlines()]
        (support_copy / f"{version}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in requests
                                                               if r["id"] in ids))
        (support_copy / f"{version}.adjudications.jsonl").unlink(missing_ok=True)
        (support_copy / f"{version}.manifest.json").unlink()
        freeze_version(support_copy, version, ["existing", "new_tools"], parent=parent)
    return {r["messages"][-1]["content"].strip(): r["expected"] for r in kept}


def one_arm_experiment(support_copy: Path, name: str, arm: str) -> Path:
    """An experiment file of one arm (``arm``: its YAML flow mapping) on the trimmed support copy."""
    experiment = support_copy / "experiments" / f"{name}.yaml"
    experiment.write_text(f"name: {name}\ntaskset: ..\nversion: v1\nseeds: [1, 2, 3]\narms:\n  - {arm}\n")
    return experiment


def files_under(*roots: Path) -> list[Path]:
    return [p for root in roots if root and root.exists() for p in root.rglob("*") if p.is_file()]


def prefect_paths() -> list[Path]:
    import prefect.settings as settings

    paths = [Path(settings.PREFECT_HOME.value()), Path(settings.PREFECT_LOCAL_STORAGE_PATH.value())]
    url = str(settings.PREFECT_SERVER_DATABASE_CONNECTION_URL.value() or "")
    if url.startswith("sqlite") and ":///" in url:
        paths.append(Path(url.split(":///", 1)[1]).parent)  # the harness's temporary database directory
    return paths


@pytest.fixture
def models_experiment(support_copy: Path, monkeypatch: pytest.MonkeyPatch):
    expected = trimmed_support(support_copy)
    arguments = {t.name: example_arguments(t.parameters) for t in support_tools()}
    server = ProviderServer(oracle(expected, arguments, router_confidence=0.9), api_key=FAKE_KEY).__enter__()
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_url)
    yield support_copy / "experiments" / "models.yaml", server, expected
    server.__exit__(None, None, None)


def test_models_experiment_runs_through_prefect_and_no_artifact_holds_the_key(
        prefect_harness, models_experiment, warehouse_dir, capsys):
    from flows.evaluate import evaluate

    path, server, expected = models_experiment
    summary = evaluate(experiment_path=str(path), warehouse_dir=str(warehouse_dir))
    n = len(expected)
    assert summary.n_rows == len(ARMS) * 3 * n and summary.n_budget_stopped == 0 and not summary.halts
    assert summary.n_calls == len(server.requests()) == len(ARMS) * 3 * n + 3 * n  # + the LLM router's calls
    assert summary.spend_usd > 0 and all(s.authorized for s in server.requests())

    con = duckdb.connect(str(Path(summary.warehouse) / "tooleval.duckdb"), read_only=True)
    try:
        by_arm = dict(con.execute("""
            select arm, count(*) filter (where correct) * 1.0 / count(*) from selection_rows group by arm""").fetchall())
        assert by_arm["gpt-default"] == 1.0 and by_arm["claude-default"] == 1.0 and by_arm["gpt-gated-llm"] == 1.0
        scored = con.execute("select count(*) from selection_rows where arguments_correct is not null").fetchone()[0]
        assert scored > 0  # the experiment is on v2: calls of the right tool have their arguments scored
        rows = con.execute("""
            select arm, route, router, decided_by, fallback, router_confidence, served_model_id, price_version,
                   cost_usd, stop_reason
            from selection_rows""").fetchall()
        for arm, route, router, decided_by, fallback, confidence, served, price_version, cost, stop in rows:
            assert served in ("gpt-4.1-mini-2025-04-14", "claude-haiku-4-5-20251001")
            assert price_version == current_price_file().effective and cost > 0 and stop is not None
            if arm.startswith("gpt-") and arm != "gpt-default":
                assert route in ("forced", "gated", "narrowed") and router and decided_by in ("router", "chat")
                assert 0 < confidence <= 1 and fallback is not None
        # the forecast made before the first call (no past rows in a new warehouse) is registered with the run
        forecasts = con.execute("select arm, source, rows from cost_forecasts").fetchall()
        assert sorted(forecasts) == sorted((arm, "estimate", 3 * n) for arm in ARMS)
        billed = con.execute("select arm, billed_usd, forecast_usd from cost_forecast_error").fetchall()
        assert {r[0] for r in billed} == set(ARMS) and all(r[1] > 0 and r[2] > 0 for r in billed)
        operations = con.execute("select arm, n, fallback_rate, mean_cost_usd from arm_operations").fetchall()
        assert {r[0] for r in operations} == set(ARMS) and all(r[1] == 3 * n and r[3] > 0 for r in operations)
    finally:
        con.close()
    for kind in ("markdown", "html"):
        report = Path(summary.reports[kind]).read_text()
        assert "Per arm: first-match accuracy" in report and "router/fb" in report

    out = capsys.readouterr()
    artifacts = files_under(Path(summary.warehouse), *prefect_paths())
    assert any(p.suffix == ".parquet" for p in artifacts) and any(p.name == "tooleval.duckdb" for p in artifacts)
    assert any(p.name.startswith("prefect") and ".db" in p.name for p in artifacts)  # Prefect's database too
    holding = [str(p) for p in artifacts if FAKE_KEY.encode() in p.read_bytes()]
    assert holding == [], f"the API key was written to {holding}"
    assert FAKE_KEY not in out.out and FAKE_KEY not in out.err

    calls_before = len(server.requests())
    again = evaluate(experiment_path=str(path), warehouse_dir=str(warehouse_dir))
    assert again.n_cache_hits == again.n_rows and len(server.requests()) == calls_before and again.n_calls == 0


def test_cli_budget_stops_cleanly_says_how_to_resume_and_the_rerun_repeats_nothing(
        prefect_harness, models_experiment, tmp_path, capsys):
    path, server, expected = models_experiment
    warehouse = tmp_path / "capped"
    code = main(["run", str(path), "--warehouse", str(warehouse), "--max-calls", "40"])
    out = capsys.readouterr()
    assert code == EXIT_OK
    assert "budget reached:" in out.err and f"tooleval run {path} --warehouse {warehouse}" in out.err
    assert "repeats no completed call" in out.err and len(server.requests()) == 40
    # the cost before the first call (a new warehouse: estimated), and after the run against it
    assert "cost before the first call" in out.err and "(estimated)" in out.err
    assert "cost against the forecast" in out.out
    assert "time unknown as calls: no past rows" in out.err  # and its time, then the time it took
    assert "  time: took " in out.out and "forecast time unknown (no past rows)" in out.out
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        stopped, total = con.execute("""select count(*) filter (where detail = 'budget reached' and error), count(*)
                                        from selection_rows""").fetchall()[0]
    finally:
        con.close()
    assert total == len(ARMS) * 3 * len(expected) and stopped > 0

    assert main(["run", str(path), "--warehouse", str(warehouse)]) == EXIT_OK
    out = capsys.readouterr()
    assert "budget reached" not in out.err
    assert " past rows)" in out.err  # the rerun's forecast reads the rows the first run was billed for
    assert "rows from the result cache, not sent" in out.err  # and leaves out the rows the cache answers
    assert " in flight (from " in out.err  # the time from the first run's calls' latencies
    assert "  time: took " in out.out and " as calls" in out.out.split("  time: took ")[1].splitlines()[0]
    n = len(expected)
    assert len(server.requests()) == len(ARMS) * 3 * n + 3 * n  # both runs together: each call made once
    assert FAKE_KEY not in out.out + out.err


def test_cli_fails_loudly_when_a_served_model_differs(prefect_harness, support_copy, tmp_path, monkeypatch, capsys):
    trimmed_support(support_copy)
    server = ProviderServer(lambda seen: tool_call(seen.tools[0], served_model="claude-haiku-4-5-20251101"),
                            api_key=FAKE_KEY).__enter__()
    try:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_url)
        experiment = one_arm_experiment(support_copy, "claude-only", (
            "{name: claude, catalogue: giftcards, prompt: default, selector: anthropic, "
            "model: claude-haiku-4-5-20251001, options: {concurrency: 1}}"))
        code = main(["run", str(experiment), "--warehouse", str(tmp_path / "wh")])
        err = capsys.readouterr().err
    finally:
        server.__exit__(None, None, None)
    assert code == EXIT_MODEL_MISMATCH
    assert "FAILED: anthropic:claude-haiku-4-5-20251001" in err and "served model 'claude-haiku-4-5-20251101'" in err
    assert len(server.requests()) <= 4  # the first reply halts the model (a few may be in flight across units)
