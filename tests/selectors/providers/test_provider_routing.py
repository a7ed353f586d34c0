"""Routing designs (default / forced / gated / narrowed) with offline and LLM decision models."""

from __future__ import annotations

import math

import pytest

from schemas.selection.rows import SelectionRow
from tasks.selection.score_selection import score_selection
from tasks.selectors.providers.chat_selector import ChatSelector
from tasks.selectors.providers.routed import RouterResult, decide, probabilities_from_logprobs
from tests.factories.catalogues import selection_input, support_tools
from tests.provider_server import Reply, Seen, oracle, text_reply, tool_call
from tests.provider_server import status_reply
from tests.selectors.providers.conftest import MODELS, chat_options
from tests.selectors.providers.example_arguments import example_arguments

TOOLS = support_tools("lookup_order", "track_shipment", "refund_order", "reset_password")
VALID = {t.name: example_arguments(t.parameters) for t in TOOLS}
TRACK = "where is my parcel? when will the delivery arrive"
TRACK_SHIPMENT = "please track my shipment with the tracking number"
EXPECTED = {TRACK: "track_shipment", TRACK_SHIPMENT: "track_shipment",
            "please send me a password reset link": "reset_password"}


def router(pick, confidence, probabilities=None, ok=True):
    return RouterResult(pick if ok else None, confidence, probabilities)


# -- the decision, without any call ----------------------------------------------------------------------

def test_default_lets_the_chat_model_choose_among_all_tools():
    decision = decide("default", router("track_shipment", 0.99), TOOLS)
    assert decision.tools == TOOLS and decision.tool_choice is None and decision.decided_by == "chat"


def test_forced_constrains_the_chat_model_to_the_pick():
    decision = decide("forced", router("track_shipment", 0.2), TOOLS)
    assert decision.tool_choice == "track_shipment" and decision.decided_by == "router" and not decision.fallback
    assert decide("forced", router("none", 0.9), TOOLS).tool_choice == "none"


def test_gated_uses_the_pick_at_or_above_the_threshold_and_falls_back_below():
    above = decide("gated", router("track_shipment", 0.6), TOOLS, threshold=0.6)
    below = decide("gated", router("track_shipment", 0.59), TOOLS, threshold=0.6)
    assert above.tool_choice == "track_shipment" and above.decided_by == "router" and not above.fallback
    assert below.tool_choice is None and below.decided_by == "chat" and below.fallback and below.tools == TOOLS


def test_narrowed_offers_only_the_top_tools():
    probabilities = {"track_shipment": 0.5, "lookup_order": 0.3, "none": 0.15, "refund_order": 0.05}
    one = decide("narrowed", router("track_shipment", 0.5, probabilities), TOOLS)
    two = decide("narrowed", router("track_shipment", 0.5, probabilities), TOOLS, narrow_k=3)
    assert [t.name for t in one.tools] == ["track_shipment"] and one.tool_choice is None
    assert [t.name for t in two.tools] == ["lookup_order", "track_shipment"]  # 'none' takes a place, order kept
    assert decide("narrowed", router("none", 0.8, {"none": 0.8}), TOOLS).tools == ()


def test_a_failed_router_falls_back_to_the_chat_model_in_every_design():
    for route in ("forced", "gated", "narrowed"):
        decision = decide(route, router(None, None, ok=False), TOOLS, threshold=0.5)
        assert decision.tools == TOOLS and decision.tool_choice is None and decision.fallback


def test_option_probabilities_come_from_the_index_tokens_normalised_over_offered_options():
    labels = ["a", "b", "c", "none"]
    top = [("2", math.log(0.6)), (" 2", math.log(0.1)), ("1", math.log(0.1)), ("9", math.log(0.1)),
           ("The", math.log(0.05))]
    probabilities = probabilities_from_logprobs(top, labels)
    assert probabilities["b"] == pytest.approx(0.7 / 0.8) and probabilities["a"] == pytest.approx(0.1 / 0.8)
    assert probabilities["c"] == 0 and probabilities["none"] == 0 and sum(probabilities.values()) == pytest.approx(1)
    assert probabilities_from_logprobs([("Sure", -0.1)], labels) is None


# -- through the SDK ---------------------------------------------------------------------------------------

def routed_selector(server, kind="openai", **routing):
    options = chat_options(server, kind, **routing)
    if routing.get("router") == "llm":
        options["router_model"] = MODELS["openai"]
        options["router_options"] = {"base_url": server.openai_url, "retry_base_delay_s": 0.01}
    return ChatSelector(kind, MODELS[kind], options)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_llm_router_gated_above_threshold_forces_the_chat_models_tool_choice(serve, kind):
    server = serve(oracle(EXPECTED, VALID, router_confidence=0.9))
    selector = routed_selector(server, kind, route="gated", router="llm", threshold=0.8)
    [answer] = selector.select([selection_input(TRACK, TOOLS)])
    assert answer.chosen == "track_shipment" and answer.outcome_hint == "ok"
    assert answer.route == "gated" and answer.decided_by == "router" and answer.fallback is False
    assert answer.router == f"llm:{MODELS['openai']}" and answer.router_pick == "track_shipment"
    assert answer.router_confidence == pytest.approx(0.9)
    assert set(answer.router_probabilities) == {t.name for t in TOOLS} | {"none"}
    assert answer.router_cost_usd > 0 and answer.cost_usd > answer.router_cost_usd
    [routed] = server.requests(router=True)
    assert routed.top_logprobs == 5 and routed.max_tokens == 1 and routed.temperature == 0
    [chat] = server.requests(api=kind, router=False)
    assert chat.tool_choice == "track_shipment" and chat.tools == tuple(t.name for t in TOOLS)


def test_llm_router_below_threshold_falls_back_and_the_row_says_so(serve):
    server = serve(oracle(EXPECTED, VALID, router_confidence=0.55))
    selector = routed_selector(server, route="gated", router="llm", threshold=0.8)
    [answer] = selector.select([selection_input(TRACK, TOOLS)])
    assert answer.decided_by == "chat" and answer.fallback is True and answer.chosen == "track_shipment"
    [chat] = server.requests(router=False)
    assert chat.tool_choice is None


def test_llm_router_without_an_index_token_falls_back(serve):
    def script(seen: Seen) -> Reply:
        if seen.is_router:
            return Reply(logprobs=(("Track", 0.9), ("The", 0.1)))
        return tool_call("track_shipment", VALID["track_shipment"])

    server = serve(script)
    [answer] = routed_selector(server, route="forced", router="llm").select([selection_input(TRACK, TOOLS)])
    assert answer.fallback is True and answer.router_pick is None and "no option index" in answer.detail
    assert answer.outcome_hint == "ok" and answer.chosen == "track_shipment"


def test_llm_router_that_errors_falls_back_and_counts_its_retries(serve):
    def script(seen: Seen) -> Reply:
        if seen.is_router:
            return status_reply(500)
        return tool_call("track_shipment", VALID["track_shipment"])

    server = serve(script)
    selector = routed_selector(server, route="gated", router="llm", threshold=0.5)
    selector.router.caller.policy = type(selector.router.caller.policy)(max_retries=1, base_delay_s=0.01)
    [answer] = selector.select([selection_input(TRACK, TOOLS)])
    assert answer.fallback is True and answer.retries == 1 and "router: HTTP 500" in answer.detail
    assert answer.chosen == "track_shipment"


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_forced_with_a_none_pick_sends_tool_choice_none(serve, kind):
    server = serve(oracle(EXPECTED, VALID))
    [answer] = routed_selector(server, kind, route="forced", router="llm").select([selection_input("tell me a joke", TOOLS)])
    assert answer.router_pick == "none" and answer.chosen == "none" and answer.decided_by == "router"
    [chat] = server.requests(api=kind, router=False)
    assert chat.tool_choice == "none"


def test_a_forced_chat_model_that_disobeys_is_scored_on_what_it_called(serve):
    def script(seen: Seen) -> Reply:
        if seen.is_router:
            return oracle(EXPECTED)(seen)
        return tool_call("refund_order", VALID["refund_order"])

    server = serve(script)
    [answer] = routed_selector(server, route="forced", router="llm").select([selection_input(TRACK, TOOLS)])
    assert answer.router_pick == "track_shipment" and answer.chosen == "refund_order"
    assert score_selection("track_shipment", answer, {t.name for t in TOOLS}).outcome == "wrong_tool"


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_narrowed_sends_only_the_routers_tool(serve, kind):
    server = serve(oracle(EXPECTED, VALID))
    [answer] = routed_selector(server, kind, route="narrowed", router="llm").select([selection_input(TRACK, TOOLS)])
    [chat] = server.requests(api=kind, router=False)
    assert chat.tools == ("track_shipment",) and chat.tool_choice is None
    assert answer.chosen == "track_shipment" and answer.decided_by == "chat" and answer.fallback is False


def test_narrowed_to_none_sends_no_tools(serve):
    server = serve(lambda seen: oracle(EXPECTED)(seen) if seen.is_router else text_reply("Here's a joke..."))
    [answer] = routed_selector(server, route="narrowed", router="llm").select([selection_input("tell me a joke", TOOLS)])
    [chat] = server.requests(router=False)
    assert chat.tools == () and answer.chosen == "none"


def test_offline_lexical_router_in_a_gated_arm(serve):
    server = serve(oracle(EXPECTED, VALID))
    selector = routed_selector(server, route="gated", router="lexical", threshold=0.0)
    answers = selector.select([selection_input(TRACK_SHIPMENT, TOOLS, "a"),
                               selection_input("please send me a password reset link", TOOLS, "b")])
    assert [a.router_pick for a in answers] == ["track_shipment", "reset_password"]
    assert all(a.router.startswith("lexical:") and a.decided_by == "router" and a.router_cost_usd is None
               for a in answers)
    assert all(a.router_probabilities and a.router_confidence > 0 for a in answers)
    assert [a.chosen for a in answers] == ["track_shipment", "reset_password"]
    assert sorted(s.tool_choice for s in server.requests()) == ["reset_password", "track_shipment"]


def test_default_route_with_a_router_records_it_but_lets_the_chat_model_choose(serve):
    server = serve(oracle(EXPECTED, VALID))
    [answer] = routed_selector(server, route="default", router="lexical").select([selection_input(TRACK_SHIPMENT, TOOLS)])
    assert answer.route == "default" and answer.decided_by == "chat" and answer.router_pick == "track_shipment"
    assert server.requests()[0].tool_choice is None


# -- the trained decision model as a routed arm's router (MiniLM: slow) ------------------------------------

@pytest.fixture(scope="module")
def trained_router_file(tmp_path_factory):
    from tests.factories.decision_model import small_support_set, trained_model

    return trained_model(small_support_set(tmp_path_factory.mktemp("trained") / "support-small"))


@pytest.mark.slow
@pytest.mark.parametrize("route", ["forced", "gated", "narrowed"])
def test_the_trained_model_routes_forced_gated_and_narrowed_arms(serve, trained_router_file, route):
    server = serve(oracle(EXPECTED, VALID))
    routing = {"route": route, "router": "trained", "router_model": "tooleval-hybrid",
               "router_options": {"model_file": str(trained_router_file)}}
    if route == "gated":
        routing["threshold"] = 0.0  # always the router's pick: the chat model is constrained to it
    selector = routed_selector(server, **routing)
    [answer] = selector.select([selection_input(TRACK_SHIPMENT, TOOLS, request_id="never-seen")])
    assert answer.router == "trained:tooleval-hybrid" and answer.router_pick == "track_shipment"
    assert set(answer.router_probabilities) == {t.name for t in TOOLS} | {"none"}
    assert sum(answer.router_probabilities.values()) == pytest.approx(1.0)
    assert answer.router_confidence == pytest.approx(max(answer.router_probabilities.values()))
    [chat] = server.requests(router=False)
    if route == "narrowed":
        assert chat.tools == ("track_shipment",) and answer.decided_by == "chat"
    else:
        assert chat.tool_choice == "track_shipment" and answer.decided_by == "router"
    assert answer.chosen == "track_shipment" and answer.outcome_hint == "ok"


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_narrowed_row_records_the_tools_sent_to_the_chat_model(serve, kind):
    """n_tools stays the request's offered set (4, what expected_position counts in); chat_n_tools is what the
    chat model was sent: the router's one tool on a narrowed arm, all 4 on a default one."""
    server = serve(oracle(EXPECTED, VALID))
    [narrowed] = routed_selector(server, kind, route="narrowed", router="llm").select([selection_input(TRACK, TOOLS)])
    [default] = routed_selector(server, kind, route="default", router="llm").select([selection_input(TRACK, TOOLS)])
    assert narrowed.chat_n_tools == 1 and default.chat_n_tools == len(TOOLS) == 4
    assert "chat_n_tools" in SelectionRow.model_fields and "fewer: chat_n_tools" in \
        SelectionRow.model_fields["n_tools"].description
