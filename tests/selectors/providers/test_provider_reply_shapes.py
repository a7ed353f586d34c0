"""Reply shapes real servers send, each through the real openai / anthropic SDK against the loopback
server: tool calls written as text, calls with no name, the legacy function_call, content as parts, error
bodies and HTML pages in a 200, missing usage, Anthropic cache reads and writes, a tool_use input that is
not an object, a reply with no model id; and the HTTP attempts a row records, bounded by max_calls."""

from __future__ import annotations

import json

import pytest

from tasks.selection.score_selection import score_selection
from tasks.run.result_cache import ResultCache
from tasks.selection.select_batch import SELECTIONS
from tasks.selectors.providers.call_budget import BUDGET_REACHED, BatchScope, RunLedger, batch_scope
from tasks.selectors.providers.chat_selector import ChatSelector
from tasks.selectors.providers.pinned_models import served_evidence
from tasks.selectors.providers.pricing import price_for
from tasks.selectors.providers.text_tool_calls import TEXT_CALL_DETAIL
from tests.factories.catalogues import selection_input, support_tools
from tests.provider_server import Reply, Seen, status_reply, text_reply, tool_call
from tests.selectors.providers.conftest import MODELS, chat_options
from tests.selectors.providers.example_arguments import example_arguments

KINDS = ["openai", "anthropic"]
TOOLS = support_tools("lookup_order", "track_shipment", "refund_order")
VALID = {t.name: example_arguments(t.parameters) for t in TOOLS}


def select(serve, kind, script, expected="lookup_order", ledger=None, **options):
    server = serve(script)
    selector = ChatSelector(kind, MODELS[kind], chat_options(server, kind, **options))
    batch = [selection_input("where is my order NW-1234567?", TOOLS)]
    if ledger is None:
        [selection] = selector.select(batch)
    else:
        with batch_scope(BatchScope(ledger)):
            [selection] = selector.select(batch)
    return selection, score_selection(expected, selection, {t.name for t in TOOLS}), server


def reshape_message(update):
    """An OpenAI reply whose first choice's message is rewritten by ``update(message)``."""
    def reshape(payload):
        update(payload["choices"][0]["message"])
        return payload
    return reshape


# -- tool calls written as text ----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("text,named", [
    ("functions.refund_order:", "refund_order"),                                   # llama-cpp-python chatml
    ('<tool_call>\n{"name": "refund_order", "arguments": {"order_id": "NW-1"}}\n</tool_call>', "refund_order"),
    ('<function=track_shipment>{"order_id": "NW-1234567"}</function>', "track_shipment"),
    ('[TOOL_CALLS] [{"name": "lookup_order", "arguments": {}}]', "lookup_order"),
])
def test_a_tool_call_written_as_text_is_invalid_with_its_own_detail(serve, kind, text, named):
    selection, score, _ = select(serve, kind, lambda s: text_reply(text), expected="none")
    assert score.outcome == "invalid" and not score.correct  # never a correct 'none'
    assert selection.detail.startswith(TEXT_CALL_DETAIL) and named in selection.detail
    assert selection.chosen == named and selection.n_tool_calls == 0


@pytest.mark.parametrize("kind", KINDS)
def test_plain_text_mentioning_functions_stays_a_text_reply(serve, kind):
    selection, score, _ = select(serve, kind, lambda s: text_reply("I can look up orders; the functions are "
                                                                   "listed below."), expected="none")
    assert score.outcome == "correct" and selection.chosen == "none"


# -- malformed calls and older shapes ----------------------------------------------------------------------

def test_openai_tool_call_with_a_null_name_is_invalid(serve):
    def null_name(message):
        message["tool_calls"][0]["function"]["name"] = None
    selection, score, _ = select(serve, "openai", lambda s: tool_call("lookup_order", VALID["lookup_order"],
                                                                       reshape=reshape_message(null_name)))
    assert score.outcome == "invalid" and "without a tool name" in selection.detail and selection.n_tool_calls == 1


def test_anthropic_tool_use_with_no_name_is_invalid(serve):
    def no_name(payload):
        del payload["content"][0]["name"]
        return payload
    selection, score, _ = select(serve, "anthropic", lambda s: tool_call("lookup_order", VALID["lookup_order"],
                                                                          reshape=no_name))
    assert score.outcome == "invalid" and "without a tool name" in selection.detail


def test_openai_legacy_function_call_is_read(serve):
    def legacy(message):
        call = message.pop("tool_calls")[0]["function"]
        message["function_call"] = call
    selection, score, _ = select(serve, "openai", lambda s: tool_call("lookup_order", VALID["lookup_order"],
                                                                       reshape=reshape_message(legacy)))
    assert score.outcome == "correct" and json.loads(selection.arguments) == VALID["lookup_order"]


@pytest.mark.parametrize("parts,outcome", [
    ([{"type": "text", "text": "Could you give me "}, {"type": "text", "text": "the order number?"}], "no_tool"),
    ([{"type": "text", "text": "functions.lookup_order:"}], "invalid"),
    ([{"type": "image_url", "image_url": {"url": "x"}}], "empty"),
])
def test_openai_content_as_a_list_of_parts_is_read(serve, parts, outcome):
    def as_parts(message):
        message["content"] = parts
    selection, score, _ = select(serve, "openai", lambda s: text_reply("x", reshape=reshape_message(as_parts)))
    assert score.outcome == outcome and not (selection.detail or "").startswith("selector failed")


def test_anthropic_tool_use_input_as_a_string_is_invalid(serve):
    def input_as_text(payload):
        payload["content"][0]["input"] = json.dumps(VALID["lookup_order"])  # valid JSON, but a string
        return payload
    selection, score, _ = select(serve, "anthropic", lambda s: tool_call("lookup_order", VALID["lookup_order"],
                                                                          reshape=input_as_text))
    assert score.outcome == "invalid" and selection.chosen == "lookup_order"
    assert "not a JSON object but a string" in selection.detail


def test_anthropic_thinking_and_server_tool_blocks_before_the_tool_use_are_skipped(serve):
    def blocks_first(payload):
        payload["content"][:0] = [{"type": "thinking", "thinking": "hmm", "signature": "x"},
                                  {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}]
        return payload
    selection, score, _ = select(serve, "anthropic", lambda s: tool_call("lookup_order", VALID["lookup_order"],
                                                                          reshape=blocks_first))
    assert score.outcome == "correct" and selection.n_tool_calls == 1


# -- 200s that are no reply --------------------------------------------------------------------------------

ERROR_BODY = {
    "openai": {"error": {"message": "upstream overloaded", "type": "server_error", "code": 502}},
    "anthropic": {"type": "error", "error": {"type": "overloaded_error", "message": "upstream overloaded"}},
}


@pytest.mark.parametrize("kind", KINDS)
def test_an_error_body_in_a_200_is_an_error_row_retried_and_never_cached(serve, kind, tmp_path):
    selection, score, server = select(serve, kind, lambda s: Reply(reshape=lambda p: ERROR_BODY[kind]), max_retries=2)
    assert score.outcome == "error" and "HTTP 200 with an error body" in selection.detail
    assert "upstream overloaded" in selection.detail and "after 2 retries" in selection.detail
    assert len(server.requests()) == 3 and selection.cost_usd is None
    with ResultCache(tmp_path / "cache.sqlite", SELECTIONS) as cache:
        assert cache.put_many([("k", selection)]) == 0 and cache.get_many(["k"]) == {}


@pytest.mark.parametrize("kind", KINDS)
def test_an_error_body_that_blames_the_request_is_not_retried(serve, kind):
    body = ({"error": {"message": "bad tools", "type": "invalid_request_error"}} if kind == "openai" else
            {"type": "error", "error": {"type": "invalid_request_error", "message": "bad tools"}})
    selection, score, server = select(serve, kind, lambda s: Reply(reshape=lambda p: body))
    assert score.outcome == "error" and "bad tools" in selection.detail and len(server.requests()) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_an_html_page_in_a_200_is_retried_like_a_5xx(serve, kind):
    page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"

    def script(seen: Seen) -> Reply:
        if seen.attempt == 0:
            return Reply(raw=page, content_type="text/html")
        return tool_call("lookup_order", VALID["lookup_order"])
    selection, score, server = select(serve, kind, script)
    assert score.outcome == "correct" and selection.retries == 1 and selection.http_attempts == 2


@pytest.mark.parametrize("kind", KINDS)
def test_an_html_page_every_time_is_an_error_naming_it(serve, kind):
    selection, score, _ = select(serve, kind, lambda s: Reply(raw=b"<html>oops</html>", content_type="text/html"),
                                 max_retries=1)
    assert score.outcome == "error" and "not JSON (text/html)" in selection.detail


# -- usage, cost and cache tokens --------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_a_reply_without_usage_has_a_null_cost_and_the_cap_charges_its_estimate(serve, kind, tmp_path):
    def no_usage(payload):
        payload.pop("usage")
        return payload
    with RunLedger(tmp_path / "l.sqlite", "r", max_spend_usd=5.0) as ledger:
        selection, score, _ = select(serve, kind, lambda s: tool_call("lookup_order", VALID["lookup_order"],
                                                                       reshape=no_usage), ledger=ledger)
        summary = ledger.summary()
    assert score.outcome == "correct" and selection.cost_usd is None and selection.input_tokens is None
    assert summary.unknown_cost_calls == 1 and summary.spend_usd > 0  # an upper bound, not $0


def test_anthropic_cache_reads_and_writes_are_priced_at_their_rates(serve):
    def cached(payload):
        payload["usage"] = {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 2000,
                            "cache_creation_input_tokens": 1000}
        return payload
    selection, _, _ = select(serve, "anthropic", lambda s: tool_call("lookup_order", VALID["lookup_order"],
                                                                      reshape=cached))
    price = price_for(MODELS["anthropic"])  # haiku 4.5: input 1.00, cache read 0.10, output 5.00 per 1M
    expected = (100 * price.input + 2000 * price.cached_input + 1000 * 1.25 * price.input + 20 * price.output) / 1e6
    assert selection.cost_usd == pytest.approx(expected)
    assert selection.input_tokens == 3100 and selection.cached_input_tokens == 2000
    assert selection.cache_write_tokens == 1000


def test_anthropic_one_hour_cache_writes_bill_twice_the_input_rate(serve):
    def cached(payload):
        payload["usage"] = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
                            "cache_creation_input_tokens": 1000,
                            "cache_creation": {"ephemeral_5m_input_tokens": 400, "ephemeral_1h_input_tokens": 600}}
        return payload
    selection, _, _ = select(serve, "anthropic", lambda s: tool_call("lookup_order", VALID["lookup_order"],
                                                                      reshape=cached))
    price = price_for(MODELS["anthropic"])
    assert selection.cost_usd == pytest.approx((400 * 1.25 + 600 * 2.0) * price.input / 1e6)


def test_openai_cached_tokens_are_priced_at_the_cached_rate(serve):
    def cached(payload):
        payload["usage"] = {"prompt_tokens": 3000, "completion_tokens": 10,
                            "prompt_tokens_details": {"cached_tokens": 2048}}
        return payload
    selection, _, _ = select(serve, "openai", lambda s: tool_call("lookup_order", VALID["lookup_order"],
                                                                   reshape=cached))
    price = price_for(MODELS["openai"])
    assert selection.cached_input_tokens == 2048
    assert selection.cost_usd == pytest.approx((952 * price.input + 2048 * price.cached_input + 10 * price.output) / 1e6)


# -- served-model evidence ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_a_reply_without_a_model_id_is_recorded_as_not_reported(serve, kind):
    def no_model(payload):
        payload.pop("model")
        return payload
    selection, score, _ = select(serve, kind, lambda s: tool_call("lookup_order", VALID["lookup_order"],
                                                                   reshape=no_model))
    assert score.outcome == "correct" and selection.served_model_id is None
    assert selection.served_model_evidence == "not_reported"


@pytest.mark.parametrize("kind", KINDS)
def test_a_self_hosted_server_returning_the_requested_id_is_an_echo(serve, kind):
    selection, _, _ = select(serve, kind, lambda s: tool_call("lookup_order", VALID["lookup_order"]))
    assert selection.served_model_id == MODELS[kind] and selection.served_model_evidence == "echoes_request"


def test_a_declared_served_name_is_reported_evidence(serve):
    selection, _, _ = select(serve, "openai", lambda s: tool_call("lookup_order", VALID["lookup_order"],
                                                                   served_model="qwen2.5-0.5b"),
                             served_model="qwen2.5-0.5b")
    assert selection.served_model_evidence == "reported"


def test_evidence_rules():
    assert served_evidence("gpt-x", "gpt-x", custom_server=False) == "reported"
    assert served_evidence("gpt-x", "gpt-x", custom_server=True) == "echoes_request"
    assert served_evidence("gpt-x", None, custom_server=False) == "not_reported"
    assert served_evidence("gpt-x", "", custom_server=True) == "not_reported"


# -- HTTP attempts and the call cap ------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_http_attempts_count_every_request_including_retries(serve, kind):
    def script(seen: Seen) -> Reply:
        return status_reply(500) if seen.attempt < 2 else tool_call("lookup_order", VALID["lookup_order"])
    selection, score, server = select(serve, kind, script)
    assert score.outcome == "correct" and selection.retries == 2 and selection.http_attempts == 3
    assert len(server.requests()) == 3


@pytest.mark.parametrize("kind", KINDS)
def test_max_calls_bounds_retries_too(serve, kind, tmp_path):
    with RunLedger(tmp_path / "l.sqlite", "r", max_calls=2) as ledger:
        selection, score, server = select(serve, kind, lambda s: status_reply(503), ledger=ledger, max_retries=4)
        summary = ledger.summary()
    assert score.outcome == "error" and selection.detail == BUDGET_REACHED
    assert len(server.requests()) == 2 and summary.calls == 2 and selection.http_attempts == 2
