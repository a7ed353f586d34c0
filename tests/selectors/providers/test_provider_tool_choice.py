"""An arm's tool_choice (auto / required / none) and token-limit field, as sent through the real SDKs, and the
checks made on them before any call."""

from __future__ import annotations

import pytest

from tasks.selectors.providers.chat_options import check_hosted_arm
from tasks.selectors.providers.chat_selector import ChatSelector
from tests.factories.catalogues import selection_input, support_tools
from tests.provider_server import first_tool, text_reply
from tests.selectors.providers.conftest import FAKE_KEY, MODELS, chat_options

TOOLS = support_tools("lookup_order", "track_shipment", "refund_order")
WIRE = {
    "openai": {"auto": "auto", "required": "required", "none": "none"},
    "anthropic": {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}},
}


def sent_body(serve, kind, script=first_tool, **options):
    server = serve(script)
    [answer] = ChatSelector(kind, MODELS[kind], chat_options(server, kind, **options)).select(
        [selection_input("where is my order NW-1234567?", TOOLS)])
    [seen] = server.requests()
    return seen.body, answer


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("choice", ["auto", "required", "none"])
def test_the_arm_tool_choice_is_sent_as_each_api_spells_it(serve, kind, choice):
    body, _ = sent_body(serve, kind, tool_choice=choice)
    assert body["tool_choice"] == WIRE[kind][choice]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_without_a_tool_choice_none_is_sent(serve, kind):
    body, _ = sent_body(serve, kind)
    assert "tool_choice" not in body


def test_a_forced_route_overrides_the_arm_tool_choice(serve):
    body, answer = sent_body(serve, "openai", tool_choice="auto", route="forced", router="lexical")
    assert body["tool_choice"]["type"] == "function" and answer.decided_by == "router"


def test_a_narrowed_route_sends_the_arm_tool_choice_with_the_narrowed_tools(serve):
    body, _ = sent_body(serve, "openai", tool_choice="required", route="narrowed", router="lexical", narrow_k=2)
    assert body["tool_choice"] == "required" and len(body["tools"]) == 2


def test_legacy_max_tokens_sends_the_limit_as_max_tokens(serve):
    body, _ = sent_body(serve, "openai", script=lambda s: text_reply(), legacy_max_tokens=True, max_tokens=64)
    assert body["max_tokens"] == 64 and "max_completion_tokens" not in body
    body, _ = sent_body(serve, "openai", script=lambda s: text_reply(), max_tokens=64)
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body


ENV = {"OPENAI_API_KEY": FAKE_KEY, "ANTHROPIC_API_KEY": FAKE_KEY}


@pytest.mark.parametrize("kind,options,words", [
    ("openai", {"tool_choice": "any"}, "tool_choice 'any' is not one of auto, required, none"),
    ("openai", {"tool_choice": "refund_order"}, "route: forced"),
    ("openai", {"legacy_max_tokens": "yes"}, "legacy_max_tokens must be true or false"),
    ("anthropic", {"legacy_max_tokens": True}, "OpenAI-compatible"),
])
def test_bad_tool_choice_and_token_field_are_refused_before_any_call(kind, options, words):
    _, problems = check_hosted_arm(kind, MODELS[kind], options, environ=ENV)
    assert any(rule == "option-value" and words in message for rule, message in problems), problems


@pytest.mark.parametrize("choice", ["auto", "required", "none"])
def test_each_tool_choice_is_accepted(choice):
    filled, problems = check_hosted_arm("openai", MODELS["openai"], {"tool_choice": choice}, environ=ENV)
    assert problems == [] and filled["tool_choice"] == choice
