"""A hosted model's call of the right tool, through the real SDKs and the loopback server, scored per parameter
by the selection instrument's row scoring: an invented enum value, a missing required id and a hallucinated
parameter each counted where it belongs (the first two break the tool's schema: the row is 'invalid' for tool
accuracy, its arguments scored all the same)."""

from __future__ import annotations

import pytest

from schemas.expected_arguments import ExpectedArgument
from tasks.selection.plan_batch import PlannedRequest
from tasks.selection.row_scoring import score_row
from tasks.selectors.providers.chat_selector import ChatSelector
from tests.factories.catalogues import selection_input, support_tools
from tests.provider_server import tool_call
from tests.selectors.providers.conftest import MODELS, chat_options

TOOLS = support_tools("lookup_order", "track_shipment", "refund_order")
EXPECTED = {"order_id": ExpectedArgument.model_validate("NW-1234567"),
            "reason": ExpectedArgument.model_validate({"one_of": ["damaged", "faulty"]}),
            "note": ExpectedArgument.model_validate({"regex": "smashed", "may_be_omitted": True})}
RIGHT = {"order_id": "NW-1234567", "reason": "damaged"}


def planned() -> PlannedRequest:
    return PlannedRequest(
        request_id="r1", messages_json="[]", slice="existing", intent=None, label_status="adjudicated", tools=TOOLS,
        offered=frozenset(t.name for t in TOOLS), tool_set_id="s", expected="refund_order", label="refund_order",
        expected_position=3, cache_key="k", expected_arguments=EXPECTED)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("arguments, outcome, correct, wrong", [
    (RIGHT, "correct", True, {}),
    ({**RIGHT, "reason": "changed_my_mind"}, "invalid", False, {"reason": "wrong_value"}),
    ({"reason": "damaged"}, "invalid", False, {"order_id": "missing_required"}),
    ({**RIGHT, "refund_code": "X9"}, "correct", False, {"refund_code": "hallucinated"}),
    ({**RIGHT, "amount": 12.5}, "correct", True, {"amount": "extra_allowed"}),
])
def test_each_argument_fault_is_counted_where_it_belongs(serve, kind, arguments, outcome, correct, wrong):
    server = serve(lambda seen: tool_call("refund_order", arguments))
    selector = ChatSelector(kind, MODELS[kind], chat_options(server, kind))
    [selection] = selector.select([selection_input("my parcel NW-1234567 arrived smashed, refund please", TOOLS)])
    row = score_row(planned(), selection)
    assert (row["outcome"], row["arguments_correct"]) == (outcome, correct), (row["detail"], row["argument_outcomes"])
    found = {o["parameter"]: o["outcome"] for o in row["argument_outcomes"]}
    assert {p: o for p, o in found.items() if o != "right"} == wrong
