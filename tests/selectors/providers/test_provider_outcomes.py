"""Every outcome category and failure mode, through the real openai and anthropic SDKs over HTTP."""

from __future__ import annotations

import json

import pytest

from schemas.catalogue import ToolSpec
from tasks.selection.score_selection import score_selection
from tasks.selectors.providers.chat_selector import ChatSelector
from tasks.selectors.providers.pricing import current_price_file
from tests.factories.catalogues import selection_input, support_tools
from tests.provider_server import Reply, Seen, status_reply, text_reply, tool_call
from tests.selectors.providers.conftest import FAKE_KEY, MODELS, InFlight, chat_options
from tests.selectors.providers.example_arguments import example_arguments

KINDS = ["openai", "anthropic"]
TOOLS = support_tools("lookup_order", "track_shipment", "refund_order")
OFFERED = {t.name for t in TOOLS}
VALID = {t.name: example_arguments(t.parameters) for t in TOOLS}


def select(serve, kind: str, script, expected: str = "lookup_order", tools: tuple[ToolSpec, ...] = TOOLS,
           text: str = "where is my order NW-1234567?", **options):
    server = serve(script)
    selector = ChatSelector(kind, MODELS[kind], chat_options(server, kind, **options))
    [selection] = selector.select([selection_input(text, tools)])
    return selection, score_selection(expected, selection, {t.name for t in tools}), server


@pytest.mark.parametrize("kind", KINDS)
def test_right_tool_with_valid_arguments_is_correct(serve, kind):
    selection, score, server = select(serve, kind, lambda s: tool_call("lookup_order", VALID["lookup_order"]))
    assert score.outcome == "correct" and score.correct
    assert json.loads(selection.arguments) == VALID["lookup_order"]
    assert selection.served_model_id == MODELS[kind]
    assert selection.input_tokens > 0 and selection.output_tokens == 12
    assert selection.cost_usd > 0 and selection.price_version == current_price_file().effective
    assert selection.latency_ms > 0 and selection.retries == 0
    assert selection.stop_reason in ("tool_calls", "tool_use")
    [seen] = server.requests()
    assert seen.authorized and seen.model == MODELS[kind]


@pytest.mark.parametrize("kind", KINDS)
def test_another_offered_tool_is_a_wrong_tool_with_its_pair(serve, kind):
    _, score, _ = select(serve, kind, lambda s: tool_call("track_shipment", VALID["track_shipment"]))
    assert score.outcome == "wrong_tool" and score.pair == "lookup_order -> track_shipment"


@pytest.mark.parametrize("kind", KINDS)
def test_a_text_reply_when_a_tool_was_expected_is_no_tool(serve, kind):
    selection, score, _ = select(serve, kind, lambda s: text_reply("Could you give me your order number?"))
    assert selection.chosen == "none" and score.outcome == "no_tool" and score.pair == "lookup_order -> none"


@pytest.mark.parametrize("kind", KINDS)
def test_a_text_reply_when_none_was_expected_is_correct(serve, kind):
    _, score, _ = select(serve, kind, lambda s: text_reply("You're welcome!"), expected="none", text="thanks!")
    assert score.outcome == "correct"


@pytest.mark.parametrize("kind", KINDS)
def test_an_empty_reply_is_empty_never_a_correct_none(serve, kind):
    selection, score, _ = select(serve, kind, lambda s: Reply(empty=True), expected="none", text="thanks!")
    assert selection.chosen is None and score.outcome == "empty" and not score.correct
    assert "empty reply" in selection.detail


@pytest.mark.parametrize("kind,finish", [("openai", "length"), ("openai", "content_filter"),
                                         ("anthropic", "max_tokens"), ("anthropic", "refusal")])
def test_an_unfinished_reply_is_empty(serve, kind, finish):
    selection, score, _ = select(serve, kind, lambda s: Reply(text="I will look that up for y", finish=finish),
                                 expected="none", text="thanks!")
    assert score.outcome == "empty" and finish in selection.detail and selection.stop_reason == finish


def test_openai_reply_without_choices_is_empty(serve):
    selection, score, _ = select(serve, "openai", lambda s: Reply(no_choices=True), expected="none")
    assert score.outcome == "empty"


@pytest.mark.parametrize("kind", KINDS)
def test_arguments_that_are_not_json_are_invalid_and_keep_the_choice(serve, kind):
    selection, score, _ = select(serve, kind, lambda s: tool_call("lookup_order", '{"order_id": "NW-1234567"'))
    assert score.outcome == "invalid" and not score.correct
    assert selection.chosen == "lookup_order"
    assert "lookup_order" in selection.detail and ("not JSON" in selection.detail or "not a JSON" in selection.detail)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("arguments,where", [
    ({"order_id": "12345"}, "order_id"),                               # breaks the pattern
    ({}, "(top level)"),                                               # neither anyOf branch
    ({"customer_email": "maria at example"}, "customer_email"),        # not an email (format checked)
    ({"order_id": "NW-1234567", "include_items": "yes"}, "include_items"),  # wrong type
])
def test_arguments_that_break_the_schema_are_invalid(serve, kind, arguments, where):
    selection, score, _ = select(serve, kind, lambda s: tool_call("lookup_order", arguments))
    assert score.outcome == "invalid" and selection.chosen == "lookup_order"
    assert "breaks the schema of lookup_order" in selection.detail or "break the schema" in selection.detail
    assert where in selection.detail


@pytest.mark.parametrize("kind", KINDS)
def test_an_unknown_tool_name_is_invalid(serve, kind):
    selection, score, _ = select(serve, kind, lambda s: tool_call("lookup_orders", VALID["lookup_order"]))
    assert score.outcome == "invalid" and selection.chosen == "lookup_orders"
    assert "is not an offered tool" in selection.detail


@pytest.mark.parametrize("kind", KINDS)
def test_the_first_of_several_tool_calls_is_the_choice(serve, kind):
    selection, score, _ = select(serve, kind, lambda s: tool_call("lookup_order", VALID["lookup_order"],
                                                                  extra_tools=("refund_order",)))
    assert score.outcome == "correct"


@pytest.mark.parametrize("kind", KINDS)
def test_tools_go_in_the_seed_order_with_the_prompt_and_turns(serve, kind):
    order = support_tools("refund_order", "lookup_order", "track_shipment")
    server = serve(lambda s: text_reply())
    selector = ChatSelector(kind, MODELS[kind], chat_options(server, kind))
    selector.select([selection_input("and where is it now?", order, prompt="AGENT PROMPT",
                          earlier=(("user", "I ordered a lamp"), ("assistant", "Thanks, noted.")))])
    [seen] = server.requests()
    assert seen.tools == ("refund_order", "lookup_order", "track_shipment")
    assert seen.system.startswith("AGENT PROMPT")
    assert [r for r, _ in seen.messages] == ["user", "assistant", "user"]
    assert seen.tool_choice is None and seen.max_tokens == 1024


def test_openai_sends_temperature_zero_and_the_provider_seed(serve):
    server = serve(lambda s: text_reply())
    ChatSelector("openai", MODELS["openai"], chat_options(server, "openai", provider_seed=7)).select(
        [selection_input("hi", TOOLS)])
    [seen] = server.requests()
    assert seen.temperature == 0 and seen.seed == 7 and seen.body["max_completion_tokens"] == 1024


def test_anthropic_sends_no_sampling_parameter_under_the_sdk_api_version(serve):
    server = serve(lambda s: text_reply())
    ChatSelector("anthropic", MODELS["anthropic"], chat_options(server, "anthropic")).select([selection_input("hi", TOOLS)])
    [seen] = server.requests()
    assert seen.anthropic_version == "2026-10-21"
    assert "temperature" not in seen.body and "top_p" not in seen.body and "seed" not in seen.body


def test_anthropic_temperature_goes_in_the_body_under_the_older_api_version(serve):
    server = serve(lambda s: text_reply())
    options = chat_options(server, "anthropic", temperature=0.0, api_version="2023-06-01")
    ChatSelector("anthropic", MODELS["anthropic"], options).select([selection_input("hi", TOOLS)])
    [seen] = server.requests()
    assert seen.anthropic_version == "2023-06-01" and seen.temperature == 0


@pytest.mark.parametrize("kind", KINDS)
def test_names_a_provider_forbids_are_mapped_and_mapped_back(serve, kind):
    long_name = "billing." + "very_long_segment_" * 4 + "refund"
    tools = (ToolSpec(name="math.hypot", description="Hypotenuse of a right triangle."),
             ToolSpec(name="math_hypot", description="Another tool whose name collides once dots go."),
             ToolSpec(name=long_name, description="A name longer than 64 characters."))

    def script(seen: Seen) -> Reply:
        assert all(len(n) <= 64 and "." not in n for n in seen.tools)
        assert len(set(seen.tools)) == 3
        return tool_call(seen.tools[2 if "refund" in seen.user_text else 0])

    server = serve(script)
    selector = ChatSelector(kind, MODELS[kind], chat_options(server, kind))
    first, second = selector.select([selection_input("hypotenuse of 3 and 4", tools, "a"), selection_input("refund it", tools, "b")])
    assert first.chosen == "math.hypot" and first.outcome_hint == "ok"
    assert second.chosen == long_name and second.outcome_hint == "ok"
    assert server.requests()[0].tools[1] != server.requests()[0].tools[0]


@pytest.mark.parametrize("kind", KINDS)
def test_500s_are_retried_and_the_retries_counted_on_the_row(serve, kind):
    def script(seen: Seen) -> Reply:
        return status_reply(500) if seen.attempt < 2 else tool_call("lookup_order", VALID["lookup_order"])

    selection, score, server = select(serve, kind, script)
    assert score.outcome == "correct" and selection.retries == 2 and len(server.requests()) == 3


@pytest.mark.parametrize("kind", KINDS)
def test_a_429_with_retry_after_is_retried_after_the_wait(serve, kind):
    def script(seen: Seen) -> Reply:
        return status_reply(429, retry_after=0.2) if seen.attempt == 0 else tool_call("lookup_order", VALID["lookup_order"])

    selection, score, server = select(serve, kind, script)
    assert score.outcome == "correct" and selection.retries == 1
    assert selection.latency_ms >= 200  # the Retry-After wait is part of the turn's latency


@pytest.mark.parametrize("kind", KINDS)
def test_a_provider_that_keeps_failing_gives_an_error_row_after_the_retries(serve, kind):
    selection, score, server = select(serve, kind, lambda s: status_reply(503), max_retries=2)
    assert score.outcome == "error" and selection.retries == 2 and len(server.requests()) == 3
    assert "HTTP 503" in selection.detail and "after 2 retries" in selection.detail


@pytest.mark.parametrize("kind", KINDS)
def test_a_400_is_not_retried(serve, kind):
    selection, score, server = select(serve, kind, lambda s: status_reply(400, error_message="bad tool schema"))
    assert score.outcome == "error" and selection.retries == 0 and len(server.requests()) == 1
    assert "bad tool schema" in selection.detail


VALIDATION_500 = ("1 validation error for CreateChatCompletionRequest\nmessages.2.typed-dict.content\n"
                  "  Input should be a valid string [type=string_type, input_value=None, input_type=NoneType]")


@pytest.mark.parametrize("kind", KINDS)
def test_a_500_whose_body_is_a_validation_error_of_the_request_is_not_retried(serve, kind):
    """llama-cpp-python's answer to a request its schema refuses: HTTP 500, the pydantic error in the body.
    Sent again it fails the same way: one request, as for a 400 (the task agents share the policy)."""
    selection, score, server = select(serve, kind, lambda s: status_reply(500, error_message=VALIDATION_500))
    assert score.outcome == "error" and selection.retries == 0 and len(server.requests()) == 1
    assert "HTTP 500" in selection.detail and "messages.2.typed-dict.content" in selection.detail


@pytest.mark.parametrize("kind", KINDS)
def test_a_slow_reply_times_out_and_is_retried(serve, kind):
    def script(seen: Seen) -> Reply:  # the first attempt never answers in time; the retry answers at once
        return Reply(hold=True, text="late") if seen.attempt == 0 else tool_call("lookup_order", VALID["lookup_order"])

    selection, score, _ = select(serve, kind, script, timeout_s=1.0)
    assert score.outcome == "correct" and selection.retries == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_reply_that_always_times_out_is_an_error(serve, kind):
    selection, score, _ = select(serve, kind, lambda s: Reply(hold=True), timeout_s=0.2, max_retries=1)
    assert score.outcome == "error" and "timed out" in selection.detail and selection.retries == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_served_model_that_differs_is_an_error_and_halts_the_model(serve, kind):
    served = MODELS[kind] + "-rerouted"
    server = serve(lambda s: tool_call("lookup_order", VALID["lookup_order"], served_model=served))
    selector = ChatSelector(kind, MODELS[kind], chat_options(server, kind, concurrency=1))
    answers = selector.select([selection_input("where is NW-1234567", TOOLS, f"q{i}") for i in range(4)])
    assert answers[0].outcome_hint == "error" and answers[0].served_model_id == served
    assert "differs from the pinned" in answers[0].detail
    assert all(a.outcome_hint == "error" and a.detail.startswith("not sent") for a in answers[1:])
    assert len(server.requests()) == 1  # no money spent on a model that is not the one pinned


def test_a_declared_served_model_is_accepted(serve):
    server = serve(lambda s: tool_call("lookup_order", VALID["lookup_order"], served_model="my-finetune"))
    selector = ChatSelector("openai", MODELS["openai"], chat_options(server, "openai", served_model="my-finetune"))
    [answer] = selector.select([selection_input("where is NW-1234567", TOOLS)])
    assert answer.outcome_hint == "ok" and answer.served_model_id == "my-finetune"


@pytest.mark.parametrize("kind", KINDS)
def test_a_rejected_key_is_an_error_whose_detail_does_not_carry_the_key(serve, kind, monkeypatch):
    server = serve(lambda s: text_reply(), api_key="sk-the-right-one-000000")
    selector = ChatSelector(kind, MODELS[kind], chat_options(server, kind))
    [answer] = selector.select([selection_input("hi", TOOLS)])
    assert answer.outcome_hint == "error" and "HTTP 401" in answer.detail
    assert FAKE_KEY not in answer.detail and FAKE_KEY[-8:] not in answer.detail
    assert "[redacted]" in answer.detail


def test_a_batch_keeps_input_order_and_bounds_concurrency(serve):
    in_flight = InFlight(meet=3)  # the calls wait inside until three are there: 12 calls, 4 rounds

    def script(seen: Seen) -> Reply:
        with in_flight:
            return tool_call(seen.user_text.split()[-1], VALID.get(seen.user_text.split()[-1], {}))

    server = serve(script)
    selector = ChatSelector("openai", MODELS["openai"], chat_options(server, "openai", concurrency=3))
    names = ["lookup_order", "track_shipment", "refund_order"] * 4
    answers = selector.select([selection_input(f"please call {n}", TOOLS, f"q{i}") for i, n in enumerate(names)])
    assert [a.request_id for a in answers] == [f"q{i}" for i in range(12)]
    assert [a.chosen for a in answers] == names
    assert in_flight.peak == 3


@pytest.mark.parametrize("kind", KINDS)
def test_a_root_combinator_is_sent_as_words_and_still_checked(serve, kind):
    server = serve(lambda s: tool_call("lookup_order", {"include_items": True}))
    [answer] = ChatSelector(kind, MODELS[kind], chat_options(server, kind)).select([selection_input("my orders?", TOOLS)])
    [seen] = server.requests()
    sent = seen.body["tools"][0]
    description = sent["function"]["description"] if kind == "openai" else sent["description"]
    assert description.endswith("Give at least one of: order_id, customer_email.")
    assert answer.outcome_hint == "invalid" and "(top level)" in answer.detail  # the anyOf still applies
