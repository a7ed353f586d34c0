"""A call's arguments scored per parameter against expected arguments and the tool's schema, and the row's
argument columns through the instrument's row scoring (landed as Arrow)."""

from __future__ import annotations

import json

import pytest

from schemas.arrow import to_arrow_table
from schemas.catalogue import ToolSpec
from schemas.expected_arguments import ExpectedArgument
from schemas.selection.rows import Selection, SelectionRow
from tasks.selection.plan_batch import PlannedRequest
from tasks.selection.row_scoring import ROW_SCORERS, score_row
from tasks.selection.score_arguments import fits_type, score_arguments

SCHEMA = {"type": "object", "required": ["order_id"],
          "properties": {"order_id": {"type": "string"}, "reason": {"type": "string"}, "amount": {"type": "number"},
                         "notify": {"type": "boolean"}, "items": {"type": "array"}, "note": {"type": "string"},
                         "count": {"type": "integer"}, "city": {}}}
EXPECTED = {name: ExpectedArgument.model_validate(value) for name, value in {
    "order_id": {"regex": "^NW-[0-9]{7}$"},
    "reason": {"one_of": ["damaged", "late"], "may_be_omitted": True},
    "amount": {"equals": 12.5, "tolerance": 0.01},
    "items": {"contains": "A1"},
    "note": {"absent": True},
    "count": 3,
    "city": {"one_of": ["New York, NY"], "text": "standardised"},
}.items()}
RIGHT = {"order_id": "NW-0000001", "amount": 12.509, "items": ["A1", "B2"], "count": 3, "city": "new york ny"}


def outcomes(call: dict) -> dict:
    score = score_arguments(EXPECTED, SCHEMA, json.dumps(call))
    return dict(score.outcomes)


def test_a_right_call():
    score = score_arguments(EXPECTED, SCHEMA, json.dumps(RIGHT))
    assert score.correct is True and dict(score.outcomes) == dict.fromkeys(RIGHT, "right")


@pytest.mark.parametrize("change, parameter, outcome", [
    ({"amount": 12.6}, "amount", "wrong_value"),
    ({"reason": "lost"}, "reason", "wrong_value"),
    ({"note": "sorry"}, "note", "wrong_value"),
    ({"items": ["B2"]}, "items", "wrong_value"),
    ({"order_id": "12345"}, "order_id", "wrong_value"),
    ({"city": "Boston"}, "city", "wrong_value"),
    ({"count": True}, "count", "wrong_type"),
    ({"count": 3.0}, "count", "wrong_type"),
    ({"amount": "12.5"}, "amount", "wrong_type"),
    ({"order_id": None}, "order_id", "wrong_type"),
    ({"refund_code": "X9"}, "refund_code", "hallucinated"),
])
def test_one_changed_parameter_lands_in_its_category(change, parameter, outcome):
    found = outcomes({**RIGHT, **change})
    assert found[parameter] == outcome
    assert [p for p, o in found.items() if o != "right"] == [parameter]


def test_missing_parameters():
    found = outcomes({k: v for k, v in RIGHT.items() if k not in ("order_id", "amount")})
    assert found["order_id"] == "missing_required" and found["amount"] == "missing_expected_optional"
    assert "reason" not in found and "note" not in found  # may be omitted; expected absent


def test_an_allowed_extra_parameter_keeps_the_call_right():
    score = score_arguments(EXPECTED, SCHEMA, json.dumps({**RIGHT, "notify": True}))
    assert score.correct is True and dict(score.outcomes)["notify"] == "extra_allowed"


def test_not_scored_without_expected_arguments_or_readable_arguments():
    for expected, arguments in ((None, json.dumps(RIGHT)), (EXPECTED, None), (EXPECTED, "not json"), (EXPECTED, "[1]")):
        score = score_arguments(expected, SCHEMA, arguments)
        assert score.correct is None and score.outcomes is None


def test_types():
    assert fits_type(1, {"type": "number"}) and not fits_type(True, {"type": "integer"})
    assert fits_type(None, {"type": ["string", "null"]}) and fits_type({"a": 1}, {})


def planned(expected_arguments: dict | None) -> PlannedRequest:
    tool = ToolSpec(name="refund_order", description="Refund.", parameters=SCHEMA)
    other = ToolSpec(name="track_shipment", description="Track.")
    return PlannedRequest(
        request_id="r1", messages_json="[]", slice="existing", intent=None, label_status="adjudicated",
        tools=(other, tool), offered=frozenset({"refund_order", "track_shipment"}), tool_set_id="s",
        expected="refund_order", label="refund_order", expected_position=2, cache_key="k", expected_arguments=expected_arguments)


@pytest.mark.parametrize("chosen, arguments, expected, correct", [
    ("refund_order", RIGHT, EXPECTED, True),
    ("refund_order", {**RIGHT, "count": 4}, EXPECTED, False),
    ("track_shipment", RIGHT, EXPECTED, None),  # the tool was wrong
    ("refund_order", None, EXPECTED, None),  # the selector gives no arguments
    ("refund_order", RIGHT, None, None),  # the request has no expected arguments
])
def test_the_row_scoring_plug_in(chosen, arguments, expected, correct):
    selection = Selection(request_id="r1", chosen=chosen, latency_ms=1.0,
                          arguments=json.dumps(arguments) if arguments is not None else None)
    row = score_row(planned(expected), selection)
    assert row["correct"] is (chosen == "refund_order") and row["arguments_correct"] is correct
    assert (row["argument_outcomes"] is None) is (correct is None)
    table = to_arrow_table(SelectionRow, [{**base_row(), **row}])
    assert table.column("arguments_correct").to_pylist() == [correct]
    if correct is False:
        assert {"parameter": "count", "outcome": "wrong_value"} in table.column("argument_outcomes").to_pylist()[0]


def test_a_call_of_the_right_tool_breaking_its_schema_is_invalid_and_its_arguments_scored():
    selection = Selection(request_id="r1", chosen="refund_order", latency_ms=1.0, outcome_hint="invalid",
                          arguments=json.dumps({**RIGHT, "count": "3"}),
                          detail="arguments break the schema of refund_order at count: '3' is not of type 'integer'")
    row = score_row(planned(EXPECTED), selection)
    assert (row["outcome"], row["correct"], row["arguments_correct"]) == ("invalid", False, False)
    assert {"parameter": "count", "outcome": "wrong_type"} in row["argument_outcomes"]
    other = Selection(request_id="r1", chosen="track_shipment", latency_ms=1.0, outcome_hint="invalid",
                      arguments="{}", detail="arguments break the schema of track_shipment")
    assert score_row(planned(EXPECTED), other)["arguments_correct"] is None


def test_a_scorer_can_be_swapped():
    def always_unscored(planned, selection, scored):
        return {"arguments_correct": None, "argument_outcomes": None}

    selection = Selection(request_id="r1", chosen="refund_order", latency_ms=1.0, arguments=json.dumps(RIGHT))
    assert score_row(planned(EXPECTED), selection, (ROW_SCORERS[0], always_unscored))["arguments_correct"] is None


def base_row() -> dict:
    """The columns of a selection row other than the scored ones."""
    return {"run_id": "run", "experiment": "e", "arm": "a", "rung": 1, "seed": 0, "taskset": "t",
            "taskset_version": "v1", "request_id": "r1", "slice": "existing", "intent": None,
            "label_status": "adjudicated", "catalogue": "base", "tool_set_id": "s", "n_tools": 2,
            "expected": "refund_order", "expected_position": 2, "confidence": None, "probabilities": None,
            "input_tokens": None, "output_tokens": None, "cost_usd": None, "latency_ms": 1.0, "model_id": "m",
            "served_model_id": None, "selector": "lexical", "prompt": "default", "cache_hit": False, "retries": 0}
