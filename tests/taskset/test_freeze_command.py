"""`tooleval freeze VERSION_JSONL`: a task-set version of either instrument frozen from the command line —
checked as a run would check it before anything is written, its manifest holding the hash of its files,
never rewritten once frozen; and `validate` / `tasks validate` of a version not frozen yet say to run it."""

from __future__ import annotations

import json
import shutil

import pytest

from flows.cli import main
from schemas.surface.task import TaskSetManifest
from schemas.taskset import VersionManifest
from tasks.surface.load_tasks import content_hash as tasks_hash
from tasks.taskset.load_taskset import content_hash
from tests.surface.mcp_office import DEFAULT_TASKS, write_office

pytestmark = pytest.mark.slow  # the CLI end to end: Great Expectations' label checks, real MCP servers


def run(capsys, *args: str) -> tuple[int, str]:
    code = main([*args])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_a_selection_version_is_frozen_checked_and_never_rewritten(support_copy, capsys):
    v3 = support_copy / "v3.jsonl"  # the bundled set holds v1 and v2 already
    shutil.copy(support_copy / "v1.jsonl", v3)
    shutil.copy(support_copy / "v1.adjudications.jsonl", support_copy / "v3.adjudications.jsonl")
    manifest = support_copy / "v3.manifest.json"

    code, out = run(capsys, "validate", str(v3))
    assert code == 2 and "[file-exists]" in out and f"not frozen yet" in out and f"tooleval freeze {v3}" in out

    code, out = run(capsys, "freeze", str(v3), "--parent", "v1", "--notes", "v1 again")
    assert code == 0, out
    frozen = VersionManifest.model_validate_json(manifest.read_text())
    assert frozen.content_hash == content_hash(support_copy, "v3") and frozen.parent == "v1"
    assert frozen.n_requests == sum(1 for line in v3.read_text().splitlines() if line.strip())
    assert frozen.slices == ["existing", "new_tools"] and frozen.notes == "v1 again"  # as the lines name them
    assert f"wrote {manifest}" in out and "label expectations passed" in out
    code, out = run(capsys, "validate", str(v3))
    assert code == 0 and " ".join(out.split()).startswith(f"OK {v3}: {frozen.n_requests} requests")

    written = manifest.read_bytes()
    code, out = run(capsys, "freeze", str(v3))  # the same files: nothing to do
    assert code == 0 and "already frozen" in out and manifest.read_bytes() == written
    code, out = run(capsys, "freeze", str(v3), "--slice", "existing")  # another manifest for the same files
    assert code == 2 and "[version-immutable]" in out and "slices ['existing']" in out
    with v3.open("a") as handle:
        handle.write(json.dumps({"id": "late-1", "messages": [{"role": "user", "content": "hello"}],
                                 "expected": "none", "slice": "existing"}) + "\n")
    code, out = run(capsys, "freeze", str(v3))  # changed files under a frozen version
    assert code == 2 and "[version-immutable]" in out and "write a new version" in out
    assert manifest.read_bytes() == written


def test_a_selection_version_that_fails_its_checks_is_not_frozen(support_copy, capsys):
    v4 = support_copy / "v4.jsonl"
    lines = (support_copy / "v1.jsonl").read_text().splitlines()[:6]
    bad = json.loads(lines[2])
    bad["expected"] = "no_such_tool"
    lines[2] = json.dumps(bad)
    v4.write_text("\n".join(lines) + "\n")
    code, out = run(capsys, "freeze", str(v4))
    assert code == 2 and f"{v4}:line 3 (id {bad['id']}): [label-offered]" in out
    assert not (support_copy / "v4.manifest.json").exists()
    code, out = run(capsys, "freeze", str(v4), "--parent", "v9")
    assert code == 2 and "[parent-frozen]" in out and not (support_copy / "v4.manifest.json").exists()
    v4.write_text(lines[0] + "\n{not json\n")
    code, out = run(capsys, "freeze", str(v4))
    assert code == 2 and f"{v4}:line 2" in out and not (support_copy / "v4.manifest.json").exists()


def test_a_task_version_on_mcp_servers_is_frozen_and_checked_against_its_surfaces(tmp_path, capsys):
    folder = write_office(tmp_path)  # the bundled npm memory and filesystem servers; t1 frozen by the factory
    t2 = folder / "t2.jsonl"
    t2.write_text("".join(json.dumps(t) + "\n" for t in reversed(DEFAULT_TASKS)))
    code, out = run(capsys, "tasks", "validate", str(t2))
    assert code == 2 and "[file-exists]" in out and "tooleval freeze" in out and "t2.jsonl" in out

    code, out = run(capsys, "freeze", str(t2), "--parent", "t1")  # checked against every surface: 'memory' has no files
    assert code == 2 and "t2.jsonl:line 1 (id o-2): [assert-probe-known]" in out and "surface memory" in out
    assert not (folder / "t2.manifest.json").exists()
    code, out = run(capsys, "freeze", str(t2), "--parent", "t1", "--surface", "both")
    assert code == 0, out
    frozen = TaskSetManifest.model_validate_json((folder / "t2.manifest.json").read_text())
    assert frozen.slices == ["files", "crm"] and frozen.n_tasks == 2 and frozen.parent == "t1"
    assert frozen.content_hash == tasks_hash(folder, "t2", [])
    assert "2 tasks against 1 surface(s) (both)" in out
    code, out = run(capsys, "tasks", "validate", str(t2), "--surface", "both")
    assert code == 0 and "matches the manifest" in " ".join(out.split())  # folded to the terminal's width

    t3 = folder / "t3.jsonl"
    t3.write_text(json.dumps({**DEFAULT_TASKS[0], "assert": {"tool": "git_status"}}) + "\n")
    code, out = run(capsys, "freeze", str(t3), "--catalogue", "memory-v1")
    assert code == 2 and "[freeze-options] --catalogue does not apply" in out
    code, out = run(capsys, "freeze", str(t3), "--surface", "both")
    assert code == 2 and f"t3.jsonl:line 1 (id {DEFAULT_TASKS[0]['id']}): [assert-tool-known]" in out
    assert not (folder / "t3.manifest.json").exists()
