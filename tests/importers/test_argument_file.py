"""A file of expected arguments (tasks/importers/argument_file.py): each bad line named by file, line and rule
before anything is written; ``tooleval import mcp --expected-arguments`` against the real memory server writes
the catalogue and the set's next version of requests carrying them, and nothing when run again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flows.cli import main
from tasks.files.input_errors import InputError
from tasks.importers.argument_file import argument_version, read_argument_file
from tasks.taskset.load_taskset import load_catalogue, load_version
from tests.factories import SUPPORT
from tests.importers.test_mcp_import import MEMORY, memory_command, memory_requests_v1


def lines_file(path: Path, *records: object) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def test_a_good_file_gives_each_request_its_expected_arguments(tmp_path):
    file = lines_file(tmp_path / "args.jsonl",
                      {"id": "sup-e-002", "expected_arguments": {"reason": {"one_of": ["missing_item"]}}},
                      {"id": "sup-r-001", "expected_arguments": {"reason": "not_recognised"}})
    found = read_argument_file(file, load_version(SUPPORT, "v1"), [load_catalogue(SUPPORT, "giftcards")])
    assert found["sup-e-002"]["reason"].matcher.kind == "one_of"
    assert found["sup-r-001"]["reason"].matcher.value == "not_recognised"  # open_dispute's reason, not refund's


def test_every_bad_line_is_named_by_file_line_and_rule(tmp_path):
    file = lines_file(
        tmp_path / "args.jsonl",
        {"id": "sup-e-002", "expected_arguments": {"order_id": {"regex": "^NW-"}}},   # right
        {"id": "sup-x-999", "expected_arguments": {"order_id": "NW-1234567"}},        # no such request
        {"id": "sup-e-002", "expected_arguments": {"reason": "damaged"}},             # the id again
        {"id": "sup-e-003", "expected_arguments": {"refund_note": "x"}},              # create_ticket has none
        {"id": "sup-e-004", "expected_arguments": {"reason": {"one_of": []}}},        # a bad matcher
        {"id": "sup-e-005", "arguments": {}},                                         # the wrong field
        "not json",
        {"id": next(r.id for r in load_version(SUPPORT, "v1").requests if r.expected == "none"),
         "expected_arguments": {"x": 1}})                                            # a 'none' label
    with pytest.raises(InputError) as raised:
        read_argument_file(file, load_version(SUPPORT, "v1"), [load_catalogue(SUPPORT, "giftcards")])
    found = [(p.file, p.where.split(" ")[1], p.rule) for p in raised.value.problems]
    assert sorted(found, key=lambda f: int(f[1])) == [
        (str(file), "2", "request-id"), (str(file), "3", "id-once"), (str(file), "4", "argument-parameter"),
        (str(file), "5", "matcher"), (str(file), "6", "argument-line"), (str(file), "7", "json-lines"),
        (str(file), "8", "argument-tool")]
    by_rule = {p.rule: str(p) for p in raised.value.problems}
    assert "refund_note" in by_rule["argument-parameter"] and "create_ticket" in by_rule["argument-parameter"]
    assert "support v1" in by_rule["request-id"] and "one_of" in by_rule["matcher"]


def test_a_tool_the_arguments_are_not_checked_against_is_named(tmp_path):
    file = lines_file(tmp_path / "args.jsonl",
                      {"id": "sup-r-001", "expected_arguments": {"reason": "not_recognised"}})
    with pytest.raises(InputError) as raised:  # open_dispute is not a tool of the base catalogue
        read_argument_file(file, load_version(SUPPORT, "v1"), [load_catalogue(SUPPORT, "base")])
    [problem] = raised.value.problems
    assert problem.rule == "argument-tool" and "open_dispute" in str(problem)


def test_the_version_keeps_the_base_and_changes_only_the_named_requests(support_copy, tmp_path):
    file = lines_file(tmp_path / "args.jsonl",
                      {"id": "sup-e-002", "expected_arguments": {"reason": {"one_of": ["missing_item", "other"]}}})
    prepared = argument_version(support_copy, file, [load_catalogue(support_copy, "giftcards")], "notes")
    base, draft = load_version(support_copy, prepared.base.version), prepared.draft
    assert base.version == sorted(p.name.split(".")[0] for p in support_copy.glob("v*.manifest.json"))[-1]
    assert draft.parent == prepared.base.version and draft.adjudications == prepared.base.adjudications
    changed = [(old.id, new.expected_arguments) for old, new in zip(prepared.base.requests, draft.requests)
               if old != new]
    assert [id_ for id_, _ in changed] == ["sup-e-002"] and len(draft.requests) == len(base.requests)
    assert changed[0][1]["reason"].matcher.value == ["missing_item", "other"]


# -- through the MCP import ------------------------------------------------------------------------------

needs_node = pytest.mark.skipif(shutil.which("node") is None or not (MEMORY / "dist" / "index.js").is_file(),
                                reason="node and the reference MCP servers (make install) are needed")


@needs_node
def test_import_mcp_writes_the_catalogue_and_the_version_with_expected_arguments(tmp_path, capsys):
    taskset = tmp_path / "office"
    taskset.mkdir()
    memory_requests_v1(taskset)
    argv = ["import", "mcp", "memory", "--taskset", str(taskset), "--env", "MEMORY_FILE_PATH={state_dir}/m.jsonl",
            "--expected-arguments", str(tmp_path / "args.jsonl"), "--", *memory_command()]
    lines_file(tmp_path / "args.jsonl", {"id": "m-1", "expected_arguments": {"entityNames": {"contains": "Bob"}}},
               {"id": "m-2", "expected_arguments": {"entity": "Alice"}})
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'args.jsonl'}:line 2 (id m-2)" in err and "[argument-parameter]" in err
    assert "add_observations" in err and not (taskset / "catalogues").exists() and not (taskset / "v2.jsonl").exists()

    lines_file(tmp_path / "args.jsonl", {"id": "m-1", "expected_arguments": {"entityNames": {"contains": "Bob"}}})
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "expected arguments: wrote v2 (parent v1): 1 request given them, 1 of 3 carry some" in out
    v2 = load_version(taskset, "v2")
    assert v2.manifest.parent == "v1" and v2.actual_hash == v2.manifest.content_hash
    assert [r.id for r in v2.requests if r.expected_arguments] == ["m-1"]
    assert (taskset / "catalogues" / "memory-v1.json").is_file()

    assert main(argv) == 0  # the same server and file again: nothing new
    out = capsys.readouterr().out
    assert out.startswith("unchanged: catalogues/memory-v1.json") and "v2 holds them already" in out
    assert not (taskset / "v3.jsonl").exists()


def test_import_mcp_without_a_version_of_requests_is_refused_before_a_server_starts(tmp_path, capsys):
    file = lines_file(tmp_path / "args.jsonl", {"id": "m-1", "expected_arguments": {}})
    code = main(["import", "mcp", "memory", "--taskset", str(tmp_path), "--expected-arguments", str(file),
                 "--", "no-such-command-here"])
    err = capsys.readouterr().err
    assert code == 2 and "[requests-version]" in err and "command not found" not in err


# -- tooleval import arguments, and the bundled support set's v2 ------------------------------------------

def test_import_arguments_writes_the_next_version_once(support_copy, tmp_path, capsys):
    base = sorted(p.name.split(".")[0] for p in support_copy.glob("v*.manifest.json"))[-1]
    following = f"v{int(base[1:]) + 1}"
    file = lines_file(tmp_path / "args.jsonl", {"id": "sup-e-004", "expected_arguments": {"order_id": "NW-5502917",
                                                                                          "reason": "faulty"}},
                      {"id": "sup-e-007", "expected_arguments": {"reason": {"one_of": ["missing_item"]},
                                                                 "refund_reason": "x"}})
    argv = ["import", "arguments", str(file), "--taskset", str(support_copy), "--catalogue", "giftcards"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{file}:line 2 (id sup-e-007): [argument-parameter]" in err and "refund_reason" in err
    assert not (support_copy / f"{following}.jsonl").exists()

    lines_file(file, {"id": "sup-e-004", "expected_arguments": {"order_id": "NW-5502917", "reason": "faulty"}})
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith(f"expected arguments: wrote {following} (parent {base}): 1 request given")
    written = load_version(support_copy, following)
    assert written.manifest.parent == base and len(written.requests) == len(load_version(support_copy, base).requests)
    given = next(r for r in written.requests if r.id == "sup-e-004").expected_arguments
    assert given["reason"].matcher.value == "faulty"
    assert main(argv) == 0  # the newest version holds them already
    assert f"{following} holds them already" in capsys.readouterr().out
    assert not (support_copy / f"v{int(base[1:]) + 2}.jsonl").exists()


def test_the_bundled_v2_is_v1_with_expected_arguments_the_catalogue_accepts():
    """Same requests, labels and adjudications as v1; expected arguments on a realistic share of them, each
    value allowed by its parameter's schema (an enum's values, an id's pattern)."""
    from jsonschema import Draft202012Validator

    v1, v2 = load_version(SUPPORT, "v1"), load_version(SUPPORT, "v2")
    assert v2.manifest.parent == "v1" and v2.actual_hash == v2.manifest.content_hash
    assert v2.adjudications == v1.adjudications
    assert [r.model_copy(update={"expected_arguments": None}) for r in v2.requests] == list(v1.requests)
    catalogue = load_catalogue(SUPPORT, "giftcards")
    scored = [r for r in v2.requests if r.expected_arguments]
    assert 0.4 < len(scored) / len(v2.requests) < 0.8
    kinds = set()
    for request in scored:
        properties = catalogue.tool(request.expected).parameters["properties"]
        for name, expected in request.expected_arguments.items():
            values = expected.matcher.value if expected.matcher.kind == "one_of" else [expected.matcher.value]
            if expected.matcher.kind in ("equals", "one_of"):
                for value in values:
                    assert Draft202012Validator(properties[name]).is_valid(value), (request.id, name, value)
            kinds.add((request.expected, name, expected.matcher.kind))
    assert {("refund_order", "order_id", "equals"), ("refund_order", "reason", "one_of"),
            ("cancel_subscription", "subscription", "equals"), ("get_account", "sections", "contains")} <= kinds
