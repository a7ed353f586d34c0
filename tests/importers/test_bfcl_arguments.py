"""BFCL v4 multiple (shared/bench) imported with its possible answers, scored by the selection instrument's row
scoring: each record's first acceptable answer is right on every parameter, and each call mutated one parameter
at a time lands in the category an independent reading of BFCL's checker (``bfcl_verdict`` below, written from
bfcl_eval/eval_checker/ast_eval/ast_checker.py's simple_function_checker) gives it."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from schemas.selection.rows import Selection
from tasks.importers.bfcl import import_bfcl
from tasks.selection.arms import SelectionArm
from tasks.selection.plan_batch import plan_arm_seed, plan_batch
from tasks.selection.row_scoring import score_row
from tasks.taskset.load_taskset import load_version

BENCH = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "bfcl"
QUESTIONS = BENCH / "BFCL_v4_multiple.json"
ANSWERS = BENCH / "possible_answer" / "BFCL_v4_multiple.json"

pytestmark = pytest.mark.skipif(not QUESTIONS.is_file(), reason=f"public bench data not found at {BENCH}")

PY_TYPES = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list, "tuple": list,
            "dict": dict}
BFCL_TO_OURS = {"valid": "right", "missing_required": "missing_required", "unexpected_param": "hallucinated",
                "type_error": "wrong_type", "value_error": "wrong_value",
                "missing_optional": "missing_expected_optional"}


def standard(text: str) -> str:
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


def bfcl_value_ok(value: Any, acceptable: list, kind: str) -> bool:
    """BFCL's value rules for one parameter: strings and strings in lists standardised, dicts key by key."""
    if kind == "dict":
        for answer in acceptable:
            if answer == "":
                continue
            if all(k in answer and (standard(v) if isinstance(v, str) else v)
                   in [standard(a) if isinstance(a, str) else a for a in answer[k]] for k, v in value.items()) \
                    and all(k in value or "" in vs for k, vs in answer.items()):
                return True
        return False
    if kind in ("array", "tuple") and value and isinstance(value[0], dict):
        return any(len(value) == len(answer) and all(bfcl_value_ok(v, [a], "dict") for v, a in zip(value, answer))
                   for answer in acceptable if answer != "")
    if kind == "string":
        return standard(value) in [standard(a) for a in acceptable if isinstance(a, str)]
    if kind in ("array", "tuple"):
        lower = [standard(v) if isinstance(v, str) else v for v in value]
        return lower in [[standard(v) if isinstance(v, str) else v for v in a] for a in acceptable if a != ""]
    return value in acceptable


def bfcl_verdict(function: dict, answer: dict, call: dict) -> str:
    """simple_function_checker's first error type (Python): 'valid' or the kind of error."""
    properties, required = function["parameters"]["properties"], function["parameters"].get("required", [])
    if any(name not in call for name in required):
        return "missing_required"
    for name, value in call.items():
        if name not in properties or name not in answer:
            return "unexpected_param"
        kind = properties[name]["type"]
        if kind == "float" and type(value) is int:
            value = float(value)
        if type(value) is not PY_TYPES.get(kind, str):
            return "type_error"
        if not bfcl_value_ok(value, answer[name], kind):
            return "value_error"
    if any(name not in call and "" not in values for name, values in answer.items()):
        return "missing_optional"
    return "valid"


def first_value(acceptable: list, kind: str) -> Any:
    """The first acceptable value, written out (a dict's keys each take their first value)."""
    value = next((v for v in acceptable if v != ""), None)
    if kind == "dict" and isinstance(value, dict):
        return {k: next(v for v in vs if v != "") for k, vs in value.items() if any(v != "" for v in vs)}
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [first_value([item], "dict") for item in value]
    return value


def first_answer(answer: dict, properties: dict) -> dict:
    call = {}
    for name, acceptable in answer.items():
        value = first_value(acceptable, properties[name]["type"])
        if value is not None:
            call[name] = value
    return call


def wrong_value(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1000
    if isinstance(value, str):
        return value + " elsewhere"
    if isinstance(value, list):
        return [*value, value[0]] if value else ["surplus"]
    if isinstance(value, dict):
        key = next(iter(value))
        return {**value, key: wrong_value(value[key])}
    raise AssertionError(value)


def mutations(function: dict, answer: dict, call: dict) -> list[tuple[str, dict]]:
    """(what was done, the mutated call): one parameter changed in each."""
    properties, required = function["parameters"]["properties"], function["parameters"].get("required", [])
    found = []
    for name, value in call.items():
        found.append((f"{name}: another value", {**call, name: wrong_value(value)}))
        wrong = 12345 if properties[name]["type"] == "string" else "12345"
        found.append((f"{name}: another type", {**call, name: wrong}))
        rest = {k: v for k, v in call.items() if k != name}
        if name in required or "" not in answer[name]:
            found.append((f"{name}: left out", rest))
    found.append(("invented parameter", {**call, "invented_flag": True}))
    return found


def planned_requests(folder: Path) -> list:
    """BFCL multiple imported into ``folder`` and planned as one unit of an arm offering each request's own
    functions (seed 0)."""
    out = folder / "multiple"
    import_bfcl(QUESTIONS, ANSWERS, out)
    version = load_version(out, "v1")
    arm = SelectionArm(name="a", rung=1, catalogue_name="per_request", catalogue=None, prompt_name="default",
                       prompt_text="Pick a tool.", model_id="bm25-okapi", selector="lexical", version="v1",
                       options={})
    (unit,) = plan_arm_seed(arm, 0, version.table, "bfcl", batch_size=1000)
    return list(plan_batch(unit))


def raw_records() -> dict[str, tuple[dict, dict]]:
    """Record id -> (the expected function as BFCL describes it, its answer's acceptable values)."""
    raw = {}
    for question, answer in zip(QUESTIONS.open(), ANSWERS.open()):
        q, a = json.loads(question), json.loads(answer)
        name, arguments = next(iter(a["ground_truth"][0].items()))
        raw[q["id"]] = (next(f for f in q["function"] if f["name"] == name), arguments)
    return raw


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """Each record's raw function and answer, and a scorer of a call through the instrument's row scoring."""
    planned = {p.request_id: p for p in planned_requests(tmp_path_factory.mktemp("bfcl"))}
    raw = raw_records()

    def score(request_id: str, call: dict) -> dict:
        p = planned[request_id]
        selection = Selection(request_id=request_id, chosen=p.expected, latency_ms=1.0, arguments=json.dumps(call))
        return score_row(p, selection)

    return raw, score


def test_first_acceptable_answer_is_right_on_every_parameter(scored):
    raw, score = scored
    assert len(raw) == 200
    for request_id, (function, answer) in raw.items():
        call = first_answer(answer, function["parameters"]["properties"])
        assert bfcl_verdict(function, answer, call) == "valid", request_id
        row = score(request_id, call)
        assert row["correct"] and row["arguments_correct"] is True, (request_id, row["argument_outcomes"])
        assert {o["outcome"] for o in row["argument_outcomes"]} <= {"right"}
        assert [o["parameter"] for o in row["argument_outcomes"]] == list(call)


def test_each_mutation_lands_in_its_bfcl_category(scored):
    raw, score = scored
    landed: Counter[str] = Counter()
    for request_id, (function, answer) in raw.items():
        call = first_answer(answer, function["parameters"]["properties"])
        for what, mutated in mutations(function, answer, call):
            verdict = bfcl_verdict(function, answer, mutated)
            row = score(request_id, mutated)
            outcomes = [o["outcome"] for o in row["argument_outcomes"]]
            wrong = [o for o in outcomes if o != "right"]
            if verdict == "valid":  # another acceptable value (both booleans, a "" beside the values)
                assert row["arguments_correct"] is True and not wrong, (request_id, what, outcomes)
                landed["still right"] += 1
                continue
            assert row["arguments_correct"] is False, (request_id, what, outcomes)
            assert wrong == [BFCL_TO_OURS[verdict]], (request_id, what, mutated, outcomes)
            landed[wrong[0]] += 1
    categories = {"wrong_value", "wrong_type", "missing_required", "missing_expected_optional", "hallucinated"}
    assert set(landed) - {"still right"} == categories, landed
    assert landed["hallucinated"] == 200 and landed["still right"] < 20, landed


def test_not_scored_when_the_tool_is_wrong_or_no_arguments_came(scored):
    raw, score = scored
    request_id, (function, answer) = next(iter(raw.items()))
    row = score(request_id, first_answer(answer, function["parameters"]["properties"]))
    assert row["arguments_correct"] is True
    from tasks.selection.row_scoring import argument_columns

    unscored = {"arguments_correct": None, "argument_outcomes": None}
    assert argument_columns(None, None, {"outcome": "wrong_tool", "chosen": "other", "correct": False}) == unscored


def test_an_answer_naming_a_parameter_its_function_lacks_keeps_its_tool_label_unscored(tmp_path):
    """BFCL's live data has such answers (live_multiple_862-181-3 answers journey_start_time to a function
    without it): the import goes on, the request keeps its label, its arguments are not scored, and it says so."""
    lines = [json.loads(line) for line in QUESTIONS.open()][:3]
    answers = [json.loads(line) for line in ANSWERS.open()][:3]
    name, arguments = next(iter(answers[1]["ground_truth"][0].items()))
    answers[1]["ground_truth"][0][name] = {**arguments, "no_such_parameter": ["x"]}
    questions, answer_file = tmp_path / "BFCL_v4_multiple.json", tmp_path / "answers.json"
    questions.write_text("".join(json.dumps(r) + "\n" for r in lines))
    answer_file.write_text("".join(json.dumps(r) + "\n" for r in answers))
    summary = import_bfcl(questions, answer_file, tmp_path / "set")
    assert any("1 answer(s) name arguments their function cannot take" in n for n in summary.notices)
    requests = {r.id: r for r in load_version(tmp_path / "set", "v1").requests}
    assert len(requests) == 3 and requests[lines[1]["id"]].expected == name
    assert requests[lines[1]["id"]].expected_arguments is None
    assert requests[lines[0]["id"]].expected_arguments is not None
