"""``tooleval import mcp`` against the real reference MCP servers (memory, filesystem) installed under
tasksets/mcp_office/node_modules: catalogues with their annotations, versions, the diff, and bad input."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import mcp_types
import pytest

from flows import api
from flows.cli import build_parser, main
from schemas.catalogue import CatalogueFile, ToolSpec
from schemas.taskset import LabelledRequest, Message
from tasks.experiment.resolve_experiment import resolve_experiment
from tasks.files.content_hash import sha256_hex
from tasks.files.input_errors import InputError
from tasks.files.json_lines import write_jsonl
from tasks.importers.mcp_catalogue import import_mcp_catalogue, tools_of
from tasks.mcp.tool_listing import tools_hash
from tasks.taskset.load_taskset import freeze_version, load_catalogue, read_json_model
from tasks.taskset.validate_version import validate_version_file
from tests.factories import ROOT, SUPPORT

PACKAGES = ROOT / "tasksets" / "mcp_office" / "node_modules" / "@modelcontextprotocol"
MEMORY = PACKAGES / "server-memory"
FILESYSTEM = PACKAGES / "server-filesystem"
EDITED_FROM = "Read the entire knowledge graph"
EDITED_TO = "Read the whole knowledge graph: every entity, relation and observation"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (MEMORY / "dist" / "index.js").is_file(),
    reason="node and the reference MCP servers (make install: npm ci in tasksets/mcp_office) are needed")


def memory_command(package: Path = MEMORY) -> list[str]:
    return ["node", str(package / "dist" / "index.js")]


def memory_env(state: Path) -> dict[str, str]:
    return {"MEMORY_FILE_PATH": str(state / "memory.jsonl")}


def catalogue_file(taskset: Path, name: str) -> CatalogueFile:
    return read_json_model(taskset / "catalogues" / f"{name}.json", CatalogueFile)


def edited_memory_server(where: Path, old: str = f'"{EDITED_FROM}"', new: str = f'"{EDITED_TO}"') -> Path:
    """A copy of the memory server's package with one string of its code replaced (by default read_graph's
    description: a team editing its server); its imports resolve through a link to the installed node_modules."""
    package = Path(shutil.copytree(MEMORY, where / "server-memory"))
    (where / "node_modules").symlink_to(PACKAGES.parent, target_is_directory=True)
    script = package / "dist" / "index.js"
    text = script.read_text()
    assert text.count(old) == 1
    script.write_text(text.replace(old, new))
    return package


def only_memory_v1(taskset: Path, target: Path) -> Path:
    """A task set holding a copy of ``taskset``'s memory-v1 alone."""
    (target / "catalogues").mkdir(parents=True)
    shutil.copy(taskset / "catalogues" / "memory-v1.json", target / "catalogues")
    return target


def memory_requests_v1(taskset: Path) -> None:
    """A frozen v1 of three requests for the memory server's tools (ids m-0, m-1, m-2), slice 'memory'."""
    requests = [LabelledRequest(id=f"m-{n}", messages=(Message(role="user", content=text),), expected=label,
                                slice="memory")
                for n, (text, label) in enumerate([("What do you remember about me?", "read_graph"),
                                                   ("Forget everything about Bob.", "delete_entities"),
                                                   ("Note that Alice likes tea.", "add_observations")])]
    write_jsonl(taskset / "v1.jsonl", requests)
    freeze_version(taskset, "v1", ["memory"])


@pytest.fixture(scope="module")
def memory_versions(tmp_path_factory) -> tuple[Path, object, object, bytes]:
    """A task set with memory-v1 (the installed server) and memory-v2 (the edited copy): the folder, both
    summaries and v1's bytes right after it was written."""
    root = tmp_path_factory.mktemp("memory-versions")
    taskset = root / "office"
    taskset.mkdir()
    first = import_mcp_catalogue("memory", taskset, command=memory_command(), env=memory_env(root))
    v1_bytes = (taskset / "catalogues" / "memory-v1.json").read_bytes()
    edited = edited_memory_server(root)
    second = import_mcp_catalogue("memory", taskset, command=memory_command(edited), env=memory_env(root))
    return taskset, first, second, v1_bytes


# -- the catalogues ---------------------------------------------------------------------------------------

def test_memory_server_catalogue_with_its_annotations(memory_versions):
    taskset, first, _, _ = memory_versions
    assert first.written and first.version == "memory-v1"
    file = catalogue_file(taskset, "memory-v1")
    assert file.name == "memory-v1"
    assert [tool.name for tool in file.tools] == [
        "create_entities", "create_relations", "add_observations", "delete_entities", "delete_observations",
        "delete_relations", "read_graph", "search_nodes", "open_nodes"]
    marks = file.annotations
    assert marks["delete_entities"].destructive is True and marks["delete_entities"].read_only is False
    assert marks["read_graph"].read_only is True and marks["read_graph"].destructive is False
    assert marks["create_entities"].title == "Create Entities"  # Tool.title (annotations.title is not given)
    assert file.tools[0].parameters["required"] == ["entities"]  # the inputSchema as the server gave it
    source = file.source
    assert (source.server_name, source.server_version, source.protocol_version) == ("memory-server", "0.6.3",
                                                                                    "2025-11-25")
    assert source.server == " ".join(memory_command()) and source.previous is None
    assert source.content_hash == tools_hash(file.tools, file.annotations)
    assert source.imported_at.endswith("Z")
    assert load_catalogue(taskset, "memory-v1").names == tuple(tool.name for tool in file.tools)
    assert first.lines()[0] == (f"wrote: catalogues/memory-v1.json in {taskset} (9 tools, "
                                f"hash {source.content_hash[:12]})")
    assert "  annotations: 9 of 9 tools (3 read-only, 3 destructive)" in first.lines()


def test_filesystem_server_catalogue_of_14_tools(tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    started = time.perf_counter()
    summary = import_mcp_catalogue("files", tmp_path, command=["node", str(FILESYSTEM / "dist" / "index.js"),
                                                                 str(allowed)])
    assert time.perf_counter() - started < 10
    file = catalogue_file(tmp_path, "files-v1")
    assert len(file.tools) == summary.n_tools == 14
    assert {"read_text_file", "write_file", "edit_file", "move_file", "list_allowed_directories"} <= {
        tool.name for tool in file.tools}
    assert file.annotations["write_file"].destructive is True
    assert file.annotations["read_text_file"].read_only is True
    assert file.annotations["read_text_file"].destructive is None  # not given by the server: not invented
    assert file.source.server_name == "secure-filesystem-server"


# -- versions ---------------------------------------------------------------------------------------------

def test_reimporting_an_unchanged_server_writes_nothing(memory_versions, tmp_path):
    taskset, first, _, _ = memory_versions
    again = only_memory_v1(taskset, tmp_path / "office")
    summary = import_mcp_catalogue("memory", again, command=memory_command(), env=memory_env(tmp_path))
    assert not summary.written and summary.version == "memory-v1"
    assert sorted(p.name for p in (again / "catalogues").iterdir()) == ["memory-v1.json"]
    assert summary.lines() == [(f"unchanged: catalogues/memory-v1.json (hash {first.source.content_hash[:12]}): "
                                "the server lists the same 9 tools; nothing written")]


def test_a_new_server_version_with_the_same_tools_writes_nothing_and_says_so(memory_versions, tmp_path):
    taskset = only_memory_v1(memory_versions[0], tmp_path / "office")
    bumped = edited_memory_server(tmp_path, 'version: "0.6.3"', 'version: "0.6.4"')
    summary = import_mcp_catalogue("memory", taskset, command=memory_command(bumped), env=memory_env(tmp_path))
    assert not summary.written and summary.version == "memory-v1"
    assert summary.lines()[1] == "  server version moved: 0.6.3 -> 0.6.4 (its tools are the same)"
    assert sorted(p.name for p in (taskset / "catalogues").iterdir()) == ["memory-v1.json"]


def test_an_edited_description_is_a_new_version_naming_the_tool(memory_versions):
    taskset, first, second, v1_bytes = memory_versions
    assert second.written and second.version == "memory-v2"
    v2 = catalogue_file(taskset, "memory-v2")
    assert v2.source.previous == "memory-v1"
    assert v2.source.content_hash != first.source.content_hash
    assert load_catalogue(taskset, "memory-v2").tool("read_graph").description == EDITED_TO
    assert second.changes == ("descriptions edited: read_graph",)
    assert "  descriptions edited: read_graph" in second.lines()
    assert second.lines()[0].endswith("replacing memory-v1")
    assert (taskset / "catalogues" / "memory-v1.json").read_bytes() == v1_bytes  # never overwritten


def test_versions_serve_as_selection_catalogues_and_pass_the_label_checks(memory_versions, tmp_path):
    """An experiment's arms can name memory-v1 and memory-v2; the label checks read both files."""
    taskset = Path(shutil.copytree(memory_versions[0], tmp_path / "office"))
    memory_requests_v1(taskset)
    (taskset / "prompts").mkdir()
    (taskset / "prompts" / "default.md").write_text("Call the one tool that fits.\n")
    (taskset / "experiments").mkdir()
    experiment = taskset / "experiments" / "edit.yaml"
    experiment.write_text(
        "name: memory-edit\ntaskset: ..\nversion: v1\nseeds: [1, 2, 3]\n"
        "defaults: {prompt: default, selector: lexical, model: bm25-okapi}\n"
        "arms:\n  - {name: before, catalogue: memory-v1}\n  - {name: after, catalogue: memory-v2}\n"
        "comparisons:\n  - {from: before, to: after}\n")
    arms = resolve_experiment(experiment).arms
    assert [arm.catalogue_name for arm in arms] == ["memory-v1", "memory-v2"]
    assert arms[0].catalogue_hash != arms[1].catalogue_hash
    assert "catalogues: memory-v1, memory-v2" in validate_version_file(taskset / "v1.jsonl")


# -- what the new fields leave alone ----------------------------------------------------------------------

SUPPORT_CATALOGUE_HASHES = {
    "base": "f629a4feb0506e15c79d04a0ace6c6dce2ec3369de4a876f672395405c51a7ae",
    "disputes": "25ca89b9bd35f0a0115b006d4de622aaa48a2e13ef30b318dcf48a0b7abfd72a",
    "giftcards": "210c048ca5350353aa7fd299590dda7e18a3ca3524def9e26899b280d612bbd0",
    "subscriptions": "1e718048176783154b074529b509fc42ad0e334cd98f939c844ffaec969fcf9c",
}
"""sha256 of each bundled catalogue's resolved ``Catalogue.model_dump_json()`` before CatalogueFile had
``source``, ``annotations`` and ``offered_as``: ``content_json()`` (what an arm's catalogue hash and the result
cache key are taken on) must still give them, so a catalogue without those fields keeps its cached results."""


@pytest.mark.parametrize("name", sorted(SUPPORT_CATALOGUE_HASHES))
def test_existing_catalogues_hash_as_before(name):
    assert sha256_hex(load_catalogue(SUPPORT, name).content_json()) == SUPPORT_CATALOGUE_HASHES[name]


def test_annotations_must_name_tools_of_the_file():
    with pytest.raises(ValueError, match="annotations name tools that are not in the file: ghost"):
        CatalogueFile(name="x", tools=[ToolSpec(name="a", description="")], annotations={"ghost": {}})


# -- bad input --------------------------------------------------------------------------------------------

def listed(*names: str) -> list[mcp_types.Tool]:
    return [mcp_types.Tool(name=name, input_schema={"type": "object"}) for name in names]


@pytest.mark.parametrize("names, rule", [((), "server-has-tools"), (("a", "b", "a"), "tool-names-unique"),
                                         (("none",), "tool-name")])
def test_tools_a_catalogue_cannot_hold_are_refused(names, rule):
    with pytest.raises(InputError) as refused:
        tools_of(listed(*names), "node server.js")
    assert refused.value.problems[0].rule == rule


@pytest.mark.parametrize("name, options, rule", [
    ("memory", {}, "command-or-url"),
    ("memory", {"command": ["node", "x.js"], "url": "http://127.0.0.1:1/mcp"}, "command-or-url"),
    ("mem.ory", {"command": ["node", "x.js"]}, "plain-name"),
    ("memory-v2", {"command": ["node", "x.js"]}, "plain-name"),
    ("memory", {"url": "ftp://example"}, "url-http"),
    ("memory", {"url": "http://127.0.0.1:1/mcp", "env": {"A": "1"}}, "url-alone"),
    ("memory", {"command": ["node", "x.js"], "env": {"TOKEN": "$TOOLEVAL_TEST_UNSET_VARIABLE"}}, "env-set"),
])
def test_bad_options_are_refused_before_any_server_starts(tmp_path, name, options, rule):
    with pytest.raises(InputError) as refused:
        import_mcp_catalogue(name, tmp_path, **options)
    assert refused.value.problems[0].rule == rule
    assert list(tmp_path.iterdir()) == []


def test_a_missing_task_set_folder_is_refused(tmp_path):
    with pytest.raises(InputError, match=r"\[taskset-exists\]"):
        import_mcp_catalogue("memory", tmp_path / "nowhere", command=memory_command())


@pytest.mark.parametrize("pairs, rule", [(["s3cr3t-value"], "env-pair"), (["1X=s3cr3t-value"], "env-pair"),
                                         (["A=1", "A=s3cr3t-value"], "env-once")])
def test_a_malformed_env_option_is_refused_without_echoing_values(pairs, rule, capsys):
    code = main(["import", "mcp", "memory", "--taskset", ".", *[w for p in pairs for w in ("--env", p)],
                 "--", "node", "x.js"])
    assert code == 2
    said = capsys.readouterr().err
    assert f"[{rule}]" in said and "s3cr3t-value" not in said


def test_a_command_that_does_not_exist_is_named_and_nothing_is_written(tmp_path):
    with pytest.raises(InputError) as refused:
        import_mcp_catalogue("memory", tmp_path, command=["tooleval-no-such-server", "--stdio"])
    problem = refused.value.problems[0]
    assert problem.rule == "server-starts"
    assert "command not found: tooleval-no-such-server" in problem.message
    assert list(tmp_path.iterdir()) == []


def test_a_server_that_exits_quotes_what_it_said(tmp_path):
    with pytest.raises(InputError) as refused:
        import_mcp_catalogue("files", tmp_path, command=["node", str(FILESYSTEM / "dist" / "index.js"),
                                                          str(tmp_path / "missing")])
    assert refused.value.problems[0].rule == "server-starts"
    assert "None of the specified directories are accessible" in refused.value.problems[0].message
    assert list(tmp_path.iterdir()) == []


def test_a_server_that_never_answers_the_handshake_is_stopped(tmp_path):
    started = time.perf_counter()
    with pytest.raises(InputError, match="did not answer the MCP handshake within 0.5 s"):
        import_mcp_catalogue("quiet", tmp_path, command=["sleep", "30"], start_timeout_s=0.5)
    assert time.perf_counter() - started < 8  # stopped by the SDK's shutdown, not left to a 10 s close wait
    assert list(tmp_path.iterdir()) == []


def test_env_values_are_never_written(tmp_path):
    summary = api.import_mcp("memory", tmp_path, command=memory_command(),
                             env={**memory_env(tmp_path), "SECRET": "abc123"})
    assert "abc123" not in summary.path.read_text()
    assert "abc123" not in "\n".join(summary.lines())


# -- the command ------------------------------------------------------------------------------------------

def test_the_command_end_to_end(tmp_path, capsys):
    argv = ["import", "mcp", "memory", "--taskset", str(tmp_path), "--env", "MEMORY_FILE_PATH={state_dir}/m.jsonl",
            "--", *memory_command()]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"wrote: catalogues/memory-v1.json in {tmp_path} (9 tools, hash ")
    assert lines[1].startswith(f"  server: memory-server 0.6.3, MCP 2025-11-25: {' '.join(memory_command())} (")
    assert lines[-1] == f"next: `catalogue: memory-v1` in an experiment of {tmp_path}"
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("unchanged: catalogues/memory-v1.json (hash ")
    assert main(["import", "mcp", "memory", "--taskset", str(tmp_path)]) == 2
    assert "[command-or-url]" in capsys.readouterr().err


def test_every_word_after_the_dashes_is_the_server_command_wherever_the_options_stand():
    args = build_parser().parse_args(["import", "mcp", "--taskset", "d", "files", "--env", "A=1", "--",
                                      "node", "server.js", "--root", "-v", "--", "x"])
    assert (args.name, args.taskset, args.env) == ("files", "d", ["A=1"])
    assert args.server_command == ["node", "server.js", "--root", "-v", "--", "x"]
    assert build_parser().parse_args(["import", "mcp", "m", "--taskset", "d", "--url", "http://h/mcp"]
                                     ).server_command == []


def test_a_listed_tool_whose_input_schema_is_not_a_json_schema_is_refused():
    bad = [mcp_types.Tool(name="ok", input_schema={"type": "object"}),
           mcp_types.Tool(name="broken", input_schema={"type": "objekt", "properties": 5})]
    with pytest.raises(InputError) as refused:
        tools_of(bad, "node server.js")
    problem = refused.value.problems[0]
    assert (problem.where, problem.rule) == ("tool 'broken'", "tool-parameters-schema")
    assert "tool 'broken'" in problem.message
