"""Retry policy, provider gate, tool-name mapping, and the selection cache key of hosted arms."""

from __future__ import annotations

import random
import threading
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from schemas.catalogue import Catalogue
from schemas.taskset import LabelledRequest, Message
from tasks.selection.arms import SelectionArm
from tasks.selection.plan_batch import plan_batch, plan_arm_seed, selector_fingerprint
from tasks.selectors.providers.call_budget import RunLedger
from tasks.selectors.providers.chat_types import ChatReply, ChatRequest
from tasks.selectors.providers.provider_calls import ProviderCaller, scrub
from tasks.selectors.providers.retry_policy import Failure, ProviderGate, RetryPolicy, classify, parse_retry_after
from tasks.selectors.providers.tool_names import ToolNameMap, wire_name
from tasks.selectors.providers.wire_tools import wire_schema
from tests.factories.catalogues import support_tools
from tests.selectors.providers.conftest import FAKE_KEY, MODELS, InFlight
from tests.selectors.providers.conftest import base_url


# -- retry policy -----------------------------------------------------------------------------------------

def test_retry_after_in_seconds_milliseconds_and_http_date():
    assert parse_retry_after({"Retry-After": "3"}) == 3
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
    date = format_datetime(now + timedelta(seconds=20), usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now.timestamp()) == pytest.approx(20)
    assert parse_retry_after({}) is None and parse_retry_after({"Retry-After": "soon"}) is None


def test_backoff_is_exponential_with_full_jitter_and_capped():
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=4.0)
    rng = random.Random(1)
    for retry, ceiling in enumerate([0.5, 1.0, 2.0, 4.0, 4.0]):
        waits = [policy.backoff_s(retry, rng) for _ in range(200)]
        assert 0 <= min(waits) and max(waits) <= ceiling and max(waits) > ceiling * 0.8


def test_what_is_retried_and_for_how_long():
    policy = RetryPolicy(max_retries=2, max_retry_after_s=60)
    rng = random.Random(0)
    assert policy.wait_s(Failure(True, "HTTP 500"), 0, rng) is not None
    assert policy.wait_s(Failure(True, "HTTP 500"), 2, rng) is None                   # retries spent
    assert policy.wait_s(Failure(False, "HTTP 400"), 0, rng) is None                  # not retryable
    assert 30 <= policy.wait_s(Failure(True, "429", retry_after_s=30), 0, rng) <= 33.1  # Retry-After honoured
    assert policy.wait_s(Failure(True, "429", retry_after_s=600), 0, rng) is None     # past the cap: give up


def test_classify_sdk_errors():
    import httpx2
    import openai

    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")

    def status_error(cls, status, headers=None):
        response = httpx2.Response(status, headers=headers or {}, request=request)
        return cls("x", response=response, body=None)

    assert classify(status_error(openai.RateLimitError, 429, {"retry-after": "2"})) == \
        Failure(True, "HTTP 429 (RateLimitError)", 2.0, 429)
    assert classify(status_error(openai.InternalServerError, 502)).retryable
    assert not classify(status_error(openai.BadRequestError, 400)).retryable
    assert not classify(status_error(openai.AuthenticationError, 401)).retryable
    assert classify(openai.APITimeoutError(request=request)) == Failure(True, "timed out")
    assert classify(openai.APIConnectionError(request=request)).retryable


def test_a_429_pauses_every_caller_of_the_endpoint_for_its_retry_after(monkeypatch):
    class Flaky:
        provider, endpoint = "openai", "http://loopback.invalid/v1"
        calls = 0

        def complete(self, request, timeout_s):
            import httpx2
            import openai

            Flaky.calls += 1
            if Flaky.calls == 1:
                response = httpx2.Response(429, headers={"retry-after": "7"},
                                           request=httpx2.Request("POST", self.endpoint))
                raise openai.RateLimitError("slow down", response=response, body=None)
            return ChatReply(served_model=MODELS["openai"], tool_name=None, text="ok", input_tokens=10,
                             output_tokens=2)

    slept: list[float] = []
    caller = ProviderCaller("openai", MODELS["openai"], {"base_url": "http://loopback.invalid/v1"}, sleep=slept.append)
    caller._provider = Flaky()
    paused: list[float] = []
    monkeypatch.setattr(caller.gate, "pause", paused.append)
    with RunLedger(None, "r") as ledger:
        result = caller.call(ChatRequest(model=MODELS["openai"], system="", messages=(("user", "hi"),)), ledger)
    assert result.ok and result.retries == 1
    assert len(slept) == 1 and 7 <= slept[0] <= 7.8 and paused == slept
    assert result.cost_usd == pytest.approx((10 * 0.40 + 2 * 1.60) / 1e6)


def test_the_gate_bounds_calls_in_flight():
    gate, in_flight = ProviderGate(2), InFlight(meet=2)  # two at a time wait for each other inside the gate

    def work():
        with gate, in_flight:
            pass

    threads = [threading.Thread(target=work) for _ in range(8)]
    [t.start() for t in threads]
    [t.join(timeout=60) for t in threads]
    assert in_flight.peak == 2 and in_flight.entered == 8


def test_scrub_removes_keys_and_key_shaped_strings():
    text = f"Incorrect API key provided: {FAKE_KEY}; also sk-proj-abcdef123456 and ...{FAKE_KEY[-8:]}"
    cleaned = scrub(text, (FAKE_KEY,))
    assert FAKE_KEY not in cleaned and FAKE_KEY[-8:] not in cleaned and "sk-proj-abcdef123456" not in cleaned


# -- tool names ---------------------------------------------------------------------------------------------

def test_allowed_names_pass_unchanged_and_forbidden_ones_map_back():
    names = ["lookup_order", "math.hypot", "math_hypot", "weather/get current", "x" * 80, "y" * 64]
    mapping = ToolNameMap.for_names(names)
    assert mapping.wire("lookup_order") == "lookup_order" and mapping.wire("y" * 64) == "y" * 64
    wires = [mapping.wire(n) for n in names]
    assert len(set(wires)) == len(names)
    assert all(len(w) <= 64 and all(c.isalnum() or c in "_-" for c in w) for w in wires)
    assert all(mapping.original(mapping.wire(n)) == n for n in names)
    assert mapping.original("never_offered") is None and mapping.wire("math.hypot") != "math.hypot"


def test_wire_names_are_stable():
    assert wire_name("math.hypot") == "math_hypot" == wire_name("math.hypot")
    assert wire_name("a" * 100) == wire_name("a" * 100) != wire_name("a" * 99 + "b")


# -- the cache key ------------------------------------------------------------------------------------------

TOOLS = support_tools("lookup_order", "track_shipment", "refund_order")
REQUEST = LabelledRequest(id="r1", messages=(Message(role="user", content="where is NW-1234567"),),
                          expected="lookup_order", slice="existing")
BASE_OPTIONS = {"base_url": "https://api.openai.com/v1", "temperature": 0.0, "provider_seed": 0, "max_tokens": 1024}


def arm(**changes) -> SelectionArm:
    fields = dict(name="a", rung=1, catalogue_name="base", catalogue=Catalogue(name="base", tools=TOOLS),
                  prompt_name="default", prompt_text="You are the agent.", model_id=MODELS["openai"],
                  selector="openai", version="v1", options=dict(BASE_OPTIONS))
    fields.update(changes)
    return SelectionArm(**fields)


def key(resolved: SelectionArm, seed: int = 1, request: LabelledRequest = REQUEST) -> str:
    [unit] = plan_arm_seed(resolved, seed, (request,), "shop", batch_size=10)
    return plan_batch(unit)[0].cache_key


@pytest.mark.parametrize("change", [
    {"model_id": "gpt-4.1-2025-04-14"},
    {"selector": "anthropic"},
    {"prompt_text": "You are a terse agent."},
    {"options": {**BASE_OPTIONS, "temperature": 0.7}},
    {"options": {**BASE_OPTIONS, "provider_seed": 1}},
    {"options": {**BASE_OPTIONS, "max_tokens": 64}},
    {"options": {**BASE_OPTIONS, "base_url": "http://127.0.0.1:8000/v1"}},
    {"options": {**BASE_OPTIONS, "route": "gated", "router": "lexical", "threshold": 0.5}},
    {"options": {**BASE_OPTIONS, "judge": {"model": "gpt-4.1-2025-04-14"}}},
    {"catalogue": Catalogue(name="base", tools=TOOLS[:2])},
])
def test_everything_that_changes_an_answer_changes_the_key(change):
    assert key(arm(**change)) != key(arm())


def test_the_tool_order_and_the_messages_are_in_the_key():
    orders = {tuple(t.name for t in plan_batch(plan_arm_seed(arm(), s, (REQUEST,), "shop", 10)[0])[0].tools): key(arm(), s)
              for s in range(1, 8)}
    assert len(set(orders.values())) == len(orders) > 1  # each distinct order has its own key
    other = REQUEST.model_copy(update={"messages": (Message(role="user", content="where is NW-7654321"),)})
    assert key(arm(), request=other) != key(arm())


@pytest.mark.parametrize("change", [
    {"concurrency": 32}, {"timeout_s": 5}, {"max_retries": 9}, {"api_key_env": "TEAM_OPENAI_KEY"},
    {"api_key_file": "/run/secrets/openai"}, {"prices": {"input": 0, "output": 0}}, {"retry_base_delay_s": 2},
])
def test_how_calls_are_made_or_costed_is_not_in_the_key(change):
    assert key(arm(options={**BASE_OPTIONS, **change})) == key(arm())
    assert selector_fingerprint(arm(options={**BASE_OPTIONS, **change})) == selector_fingerprint(arm())


def test_secret_looking_options_never_enter_the_key_but_max_tokens_does():
    leaked = arm(options={**BASE_OPTIONS, "api_key": FAKE_KEY})
    assert selector_fingerprint(leaked) == selector_fingerprint(arm())
    assert selector_fingerprint(arm(options={**BASE_OPTIONS, "max_tokens": 10})) != selector_fingerprint(arm())


# -- tool schemas as the providers accept them ----------------------------------------------------------------

def test_a_root_any_of_becomes_words_in_the_description():
    [lookup] = support_tools("lookup_order")
    sent, note = wire_schema(lookup.parameters)
    assert "anyOf" not in sent and sent["type"] == "object" and set(sent["properties"]) == set(lookup.parameters["properties"])
    assert note == "Give at least one of: order_id, customer_email."
    assert lookup.parameters["anyOf"]  # the tool's own schema (used to check arguments) is untouched


def test_all_of_merges_and_one_of_with_properties_joins_them():
    schema = {"type": "object", "properties": {"a": {"type": "string"}},
              "allOf": [{"properties": {"b": {"type": "integer"}}, "required": ["b"]}],
              "oneOf": [{"properties": {"c": {"type": "string"}}, "required": ["c"]},
                        {"properties": {"d": {"type": "string"}}, "required": ["d"]}]}
    sent, note = wire_schema(schema)
    assert set(sent["properties"]) == {"a", "b", "c", "d"} and sent["required"] == ["b"]
    assert not {"allOf", "oneOf"} & set(sent) and note == "Give exactly one of: c, d."
    plain = {"type": "object", "properties": {"x": {"type": "string"}}}
    assert wire_schema(plain) == (plain, "")


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_the_loopback_server_refuses_a_root_combinator_like_the_real_services(serve, kind):
    import anthropic
    import openai


    server = serve()
    [lookup] = support_tools("lookup_order")
    if kind == "openai":
        client = openai.OpenAI(api_key=FAKE_KEY, base_url=base_url(server, kind), max_retries=0)
        call = lambda: client.chat.completions.create(  # noqa: E731
            model=MODELS[kind], messages=[{"role": "user", "content": "hi"}],
            tools=[{"type": "function", "function": {"name": lookup.name, "parameters": lookup.parameters}}])
        error = openai.BadRequestError
    else:
        client = anthropic.Anthropic(api_key=FAKE_KEY, base_url=base_url(server, kind), max_retries=0)
        call = lambda: client.messages.create(  # noqa: E731
            model=MODELS[kind], max_tokens=10, messages=[{"role": "user", "content": "hi"}],
            tools=[{"name": lookup.name, "input_schema": lookup.parameters}])
        error = anthropic.BadRequestError
    with pytest.raises(error, match="top level"):
        call()
