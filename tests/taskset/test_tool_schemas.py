"""Every tool's ``parameters`` must be a JSON Schema of an object: a catalogue, a request's
own tools or a surface's tool that is not is refused when it is read, naming the file, the tool and the rule,
before any unit runs (it used to crash every unit in the lexical selector, or mark every call invalid)."""

from __future__ import annotations

import json

import pytest

from schemas.catalogue import PARAMETERS_RULE, parameters_problem
from tasks.files.input_errors import InputError
from tasks.surface.load_surface import load_surface
from tasks.taskset.load_taskset import load_catalogue
from tests.factories.catalogues import SHOP_TOOLS
from tests.factories.taskset import write_taskset
from tests.surface.tiny_desk import write_desk


@pytest.mark.parametrize("parameters, said", [
    ({"type": "objekt", "properties": 5}, "not a valid JSON Schema"),
    ({"type": "object", "properties": 5}, "not a valid JSON Schema at properties"),
    ({"type": "object", "properties": {"n": {"type": "integr"}}}, "not a valid JSON Schema"),
    ({"type": "array", "items": {"type": "string"}}, "top level must say 'type: object'"),
    ({"properties": {}}, "top level must say 'type: object'"),
])
def test_parameters_that_are_no_schema_of_an_object_are_named(parameters, said):
    assert said in (parameters_problem(parameters) or "")


def test_good_parameters_pass():
    assert parameters_problem({"type": "object", "properties": {"email": {"type": "string", "format": "email"}},
                               "required": ["email"], "additionalProperties": False}) is None


def test_a_catalogue_tool_with_a_broken_schema_is_refused_with_file_tool_and_rule(tmp_path):
    tools = [dict(t) for t in (t.model_dump() if hasattr(t, "model_dump") else t for t in SHOP_TOOLS)]
    tools[1] = {**tools[1], "parameters": {"type": "objekt", "properties": 5}}
    folder = write_taskset(tmp_path / "shop", tools=tools)
    with pytest.raises(InputError) as refused:
        load_catalogue(folder, "base")
    problem = refused.value.problems[0]
    assert problem.file == str(folder / "catalogues" / "base.json")
    assert problem.rule == PARAMETERS_RULE
    assert f"tool '{tools[1]['name']}'" in problem.message


def test_a_surface_tool_with_a_broken_schema_is_refused_with_file_tool_and_rule(tmp_path):
    folder = write_desk(tmp_path)
    backend = folder / "backend" / "desk.py"
    text = backend.read_text()
    bad_tool = ('    @tool\n    def weigh(self, grams: Annotated[int, Field(json_schema_extra={"type": "integr"})]) -> dict:\n'
                '        """Weigh a parcel."""\n        return {"grams": grams}\n\n')
    backend.write_text(text.replace("    @tool\n    def get_ticket", bad_tool + "    @tool\n    def get_ticket", 1))
    with pytest.raises(InputError) as refused:
        load_surface(folder, "plain")
    problem = refused.value.problems[0]
    assert problem.file == str(folder / "surfaces" / "plain.yaml")
    assert (problem.where, problem.rule) == ("tool weigh", PARAMETERS_RULE)
    assert "tool 'weigh'" in problem.message


def test_a_catalogue_that_passed_is_remembered_by_its_bytes_and_a_changed_one_is_checked_again(tmp_path, monkeypatch):
    """``tooleval validate`` of a remembered version reads a catalogue's tool names from a pass of the same bytes
    (tasks/taskset/catalogue_memo.py); one changed byte of the file, or of a file it extends, is checked again,
    and a failure is never kept."""
    from tasks.taskset.catalogue_memo import catalogue_tool_names

    monkeypatch.setenv("TOOLEVAL_CACHE_DIR", str(tmp_path / "cache"))
    folder = write_taskset(tmp_path / "shop")
    base = folder / "catalogues" / "base.json"
    (folder / "catalogues" / "more.json").write_text(json.dumps(
        {"name": "more", "extends": "base", "tools": [{"name": "gift_wrap", "description": "Wrap an order."}]}))
    names = [t["name"] for t in SHOP_TOOLS]
    assert catalogue_tool_names(folder, "more") == names + ["gift_wrap"]
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 1
    assert catalogue_tool_names(folder, "more") == names + ["gift_wrap"]  # remembered: no second file
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 1

    tools = [dict(t) for t in SHOP_TOOLS]
    tools[1] = {**tools[1], "parameters": {"type": "objekt", "properties": 5}}
    base.write_text(json.dumps({"name": "base", "tools": tools}))  # the extended file broken
    for _ in range(2):  # refused both times: the failure was not kept
        with pytest.raises(InputError) as refused:
            catalogue_tool_names(folder, "more")
        assert refused.value.problems[0].file == str(base) and refused.value.problems[0].rule == PARAMETERS_RULE
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 1

    base.write_text("{not json")
    with pytest.raises(InputError) as refused:
        catalogue_tool_names(folder, "base")
    assert refused.value.problems[0].file == str(base)


def test_a_remembered_catalogue_is_loaded_whole_without_checking_its_schemas_again(tmp_path, monkeypatch):
    """A run's arms and ``tooleval validate EXPERIMENT`` load catalogues through ``load_checked_catalogue``: the
    first load checks every tool's parameters and keeps the pass; a second load of the same bytes is the same
    catalogue with no parameters checked; a file changed since, even to a broken schema, is checked again."""
    import schemas.catalogue
    from tasks.taskset.catalogue_memo import load_checked_catalogue

    monkeypatch.setenv("TOOLEVAL_CACHE_DIR", str(tmp_path / "cache"))
    checked: list[dict] = []
    check = schemas.catalogue.parameters_problem
    monkeypatch.setattr(schemas.catalogue, "parameters_problem", lambda p: checked.append(p) or check(p))
    folder = write_taskset(tmp_path / "shop")
    first = load_checked_catalogue(folder, "base")
    assert len(checked) >= len(SHOP_TOOLS) and first == load_catalogue(folder, "base")
    checked.clear()
    assert load_checked_catalogue(folder, "base") == first
    assert checked == []

    tools = [dict(t) for t in SHOP_TOOLS]
    tools[1] = {**tools[1], "parameters": {"type": "objekt", "properties": 5}}
    (folder / "catalogues" / "base.json").write_text(json.dumps({"name": "base", "tools": tools}))
    for _ in range(2):  # refused both times: the failure was not kept
        with pytest.raises(InputError) as refused:
            load_checked_catalogue(folder, "base")
        assert refused.value.problems[0].rule == PARAMETERS_RULE


def test_a_surface_whose_tool_schemas_passed_is_loaded_without_checking_them_again(tmp_path, monkeypatch):
    """A surface's argument schemas (made by its backend's code) are remembered by their text: the second load
    checks none; a backend whose schemas changed, even to a broken one, is checked again and refused."""
    import schemas.catalogue

    monkeypatch.setenv("TOOLEVAL_CACHE_DIR", str(tmp_path / "cache"))
    checked: list[dict] = []
    check = schemas.catalogue.parameters_problem
    monkeypatch.setattr(schemas.catalogue, "parameters_problem", lambda p: checked.append(p) or check(p))
    folder = write_desk(tmp_path)
    first = load_surface(folder, "plain")
    assert checked
    checked.clear()
    again = load_surface(folder, "plain")
    assert checked == [] and [t.spec for t in again.tools] == [t.spec for t in first.tools]

    backend = folder / "backend" / "desk.py"
    bad_tool = ('    @tool\n    def weigh(self, grams: Annotated[int, Field(json_schema_extra={"type": "integr"})]) -> dict:\n'
                '        """Weigh a parcel."""\n        return {"grams": grams}\n\n')
    backend.write_text(backend.read_text().replace("    @tool\n    def get_ticket", bad_tool + "    @tool\n    def get_ticket", 1))
    with pytest.raises(InputError) as refused:
        load_surface(folder, "plain")
    assert refused.value.problems[0].rule == PARAMETERS_RULE
