"""A hosted arm (openai SDK, loopback server) runs an experiment on the support set's v2 through the Prefect
flow; its calls carry an invented enum value, a missing required id and a hallucinated parameter, and the
warehouse counts each where it belongs (argument_outcome_counts), beside right calls and a request with no
expected arguments (not scored, never right)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from tasks.taskset.load_taskset import freeze_version, load_version
from tests.provider_server import ProviderServer, text_reply, tool_call
from tests.selectors.providers.conftest import FAKE_KEY

pytestmark = pytest.mark.slow  # a whole run through the session's Prefect server

SCRIPTED = {  # request id -> the call the model makes
    "sup-e-004": ("refund_order", {"order_id": "NW-5502917", "reason": "hose_leaking"}),  # invented enum value
    "sup-e-011": ("refund_order", {"reason": "not_received"}),                           # no order_id (required)
    "sup-n-015": ("check_gift_card_balance", {"code": "GC-7KQ2-99XD", "pin": "0000"}),   # hallucinated pin
    "sup-e-006": ("get_ticket_status", {"ticket_id": "CS-558201"}),                      # right
    "sup-e-027": ("search_kb", {"query": "oak table care"}),                              # no expected arguments
}


def trimmed_v2(support_copy: Path) -> dict[str, tuple[str, dict]]:
    """The copy's v2 cut to the scripted requests (frozen again, parent v1); user text -> scripted call."""
    lines = [json.loads(line) for line in (support_copy / "v2.jsonl").read_text().splitlines()]
    kept = [r for r in lines if r["id"] in SCRIPTED]
    assert len(kept) == len(SCRIPTED) and all(len(r["messages"]) == 1 for r in kept)
    assert [r["id"] for r in kept if "expected_arguments" not in r] == ["sup-e-027"]
    (support_copy / "v2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    (support_copy / "v2.adjudications.jsonl").unlink()
    (support_copy / "v2.manifest.json").unlink()
    freeze_version(support_copy, "v2", ["existing", "new_tools"], parent="v1")
    return {r["messages"][0]["content"].strip(): SCRIPTED[r["id"]] for r in kept}


def test_each_argument_fault_on_support_v2_is_counted_where_it_belongs(prefect_harness, support_copy,
                                                                      warehouse_dir, monkeypatch):
    from flows.evaluate import evaluate

    calls = trimmed_v2(support_copy)
    assert load_version(support_copy, "v2").manifest.parent == "v1"
    script = (lambda seen: tool_call(*calls[seen.user_text.strip()]) if seen.user_text.strip() in calls
              else text_reply())
    experiment = support_copy / "experiments" / "arguments.yaml"
    experiment.write_text("name: support-arguments\ntaskset: ..\nversion: v2\nseeds: [1, 2, 3]\n"
                          "defaults: {catalogue: giftcards, prompt: default}\n"
                          "arms:\n  - {name: gpt, selector: openai, model: gpt-4.1-mini-2025-04-14}\n")
    with ProviderServer(script, api_key=FAKE_KEY) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        summary = evaluate(experiment_path=str(experiment), warehouse_dir=str(warehouse_dir))
        assert summary.n_rows == 3 * len(SCRIPTED) and len(server.requests()) == 3 * len(SCRIPTED)

    con = duckdb.connect(str(Path(summary.warehouse) / "tooleval.duckdb"), read_only=True)
    try:
        counts = {(tool, parameter, outcome): (rows, n_requests, share) for tool, parameter, outcome, rows, n_requests,
                  share in con.execute("""
            select tool, parameter, outcome, rows, n_requests, share from argument_outcome_counts
            where run_id = ?""", [summary.run_id]).fetchall()}
        rows = {request: (outcome, correct, arguments_correct) for request, outcome, correct, arguments_correct in
                con.execute("""
            select request_id, any_value(outcome), bool_and(correct), bool_and(arguments_correct)
            from selection_rows where run_id = ? group by request_id""", [summary.run_id]).fetchall()}
    finally:
        con.close()
    assert counts == {
        ("refund_order", "order_id", "right"): (3, 1, 0.5),
        ("refund_order", "reason", "wrong_value"): (3, 1, 0.5),             # the invented enum value
        ("refund_order", "order_id", "missing_required"): (3, 1, 0.5),      # the missing required id
        ("refund_order", "reason", "right"): (3, 1, 0.5),
        ("check_gift_card_balance", "code", "right"): (3, 1, 1.0),
        ("check_gift_card_balance", "pin", "hallucinated"): (3, 1, 1.0),    # the parameter the schema lacks
        ("get_ticket_status", "ticket_id", "right"): (3, 1, 1.0),
    }
    # the first two break refund_order's schema (an enum, a required id): invalid for tool accuracy too; the
    # hallucinated pin leaves the tool right and the arguments wrong; search_kb's arguments are not scored
    assert rows == {"sup-e-004": ("invalid", False, False), "sup-e-011": ("invalid", False, False),
                    "sup-n-015": ("correct", True, False), "sup-e-006": ("correct", True, True),
                    "sup-e-027": ("correct", True, None)}
