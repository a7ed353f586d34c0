"""Expected arguments on a labelled request: the file form, what the model refuses, the label check naming a
parameter the expected tool does not have, and the request table carrying them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from schemas.expected_arguments import ExpectedArgument
from schemas.taskset import LabelledRequest
from tasks.files.input_errors import InputError
from tasks.taskset.load_taskset import load_version
from tasks.taskset.request_table import row_request
from tasks.taskset.validate_version import validate_version_file
from tests.factories.catalogues import SHOP_TOOLS
from tests.factories.taskset import REQUESTS, write_taskset

REFUND = {"type": "object", "required": ["order_id"],
          "properties": {"order_id": {"type": "string"}, "reason": {"type": "string", "enum": ["damaged", "late"]},
                         "amount": {"type": "number"}}}
TOOLS = [{**tool, "parameters": REFUND} if tool["name"] == "refund_order" else tool for tool in SHOP_TOOLS]
ARGUMENTS = {"order_id": "NW-0000001", "reason": {"one_of": ["damaged"], "may_be_omitted": True},
             "amount": {"equals": 12.5, "tolerance": 0.01}}


def with_arguments(arguments: dict) -> list[dict]:
    return [{**r, "expected_arguments": arguments} if r["id"] == "r1" else r for r in REQUESTS]


def test_the_file_form_reads_and_writes_back():
    request = LabelledRequest.model_validate({**REQUESTS[0], "expected_arguments": ARGUMENTS})
    parsed = request.expected_arguments
    assert parsed["order_id"].matcher.kind == "equals" and parsed["reason"].may_be_omitted
    assert parsed["amount"].tolerance == 0.01
    written = json.loads(request.model_dump_json())["expected_arguments"]
    assert written == {"order_id": {"equals": "NW-0000001"}, "reason": {"one_of": ["damaged"], "may_be_omitted": True},
                       "amount": {"equals": 12.5, "tolerance": 0.01}}
    assert LabelledRequest.model_validate_json(request.model_dump_json()) == request


@pytest.mark.parametrize("argument, message", [
    ({"regex": "x", "tolerance": 1}, "'tolerance' applies to an equals or one_of matcher"),
    ({"absent": True, "may_be_omitted": True}, "says nothing"),
    ({"startswith": "x"}, "unknown matcher 'startswith'"),
    ({"equals": 1, "tolerance": -1}, "greater than or equal to 0"),
])
def test_bad_expected_arguments_are_refused(argument, message):
    with pytest.raises(ValidationError, match=message):
        ExpectedArgument.model_validate(argument)


def test_no_expected_arguments_on_a_none_label():
    with pytest.raises(ValidationError, match="labelled 'none'"):
        LabelledRequest.model_validate({**REQUESTS[4], "expected_arguments": {"x": 1}})


def test_the_request_table_carries_them(tmp_path):
    root = write_taskset(tmp_path / "t", requests=with_arguments(ARGUMENTS), tools=TOOLS)
    version = load_version(root, "v1")
    column = version.table.get_column("expected_arguments").to_list()
    assert column[1:] == [None] * 4 and json.loads(column[0])["amount"] == {"equals": 12.5, "tolerance": 0.01}
    assert row_request(version.table.row(0, named=True)) == LabelledRequest.model_validate(with_arguments(ARGUMENTS)[0])


def test_a_parameter_the_tool_does_not_have_is_bad_input(tmp_path):
    root = write_taskset(tmp_path / "t", requests=with_arguments({**ARGUMENTS, "refund_note": "sorry"}), tools=TOOLS)
    with pytest.raises(InputError) as caught:
        validate_version_file(Path(root) / "v1.jsonl", weights_window="w1")
    (problem,) = caught.value.problems
    assert (problem.rule, problem.where) == ("argument-parameter", "line 1 (id r1)")
    assert problem.file.endswith("v1.jsonl") and "refund_note" in str(problem) and "order_id" in str(problem)


def test_expected_arguments_naming_the_tools_parameters_pass(tmp_path):
    root = write_taskset(tmp_path / "t", requests=with_arguments(ARGUMENTS), tools=TOOLS)
    assert validate_version_file(Path(root) / "v1.jsonl", weights_window="w1").startswith("OK")


def test_a_request_with_its_own_tools_is_checked_against_them(tmp_path):
    own = [{"name": "get_weather", "description": "Weather.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    request = {"id": "b1", "messages": [{"role": "user", "content": "weather in Paris?"}], "expected": "get_weather",
               "slice": "existing", "tools": own, "expected_arguments": {"city": "Paris", "units": "metric"}}
    root = write_taskset(tmp_path / "t", requests=[*REQUESTS, request], tools=TOOLS)
    with pytest.raises(InputError) as caught:
        validate_version_file(Path(root) / "v1.jsonl", weights_window="w1")
    (problem,) = caught.value.problems
    assert (problem.rule, problem.where) == ("argument-parameter", "line 6 (id b1)")
    assert "units" in str(problem) and "the request's own tools" in str(problem)
