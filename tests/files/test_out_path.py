"""Every command's ``--out`` is checked before its work: under a file or in a folder that takes no new file is
bad input (exit 2, the path, ``--out`` and the rule), not a raw ``[Errno ...]`` after the work."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.cli import EXIT_BAD_INPUT, EXIT_OK
from tests.factories import ROOT
from tests.factories.cli import run_cli

SURFACE = ROOT / "tasksets" / "support_tasks" / "surfaces" / "legacy_namespaced.yaml"
ROUTERS = ROOT / "tasksets" / "support" / "experiments" / "routers.yaml"


@pytest.mark.parametrize("command", [
    ("tasks", "catalogue", str(SURFACE)),
    ("fit", str(ROUTERS), "--arm", "lexical-30"),
    ("train", str(ROOT / "tasksets" / "support" / "v1.jsonl")),
])
@pytest.mark.parametrize("where", ["under a file", "a pseudo file system"])
def test_an_out_that_cannot_be_written_is_refused_before_the_work(tmp_path, capsys, command, where):
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "sub" / "out.json" if where == "under a file" else Path("/proc/tooleval/out.json")
    code, _, err = run_cli(capsys, *command, "--out", str(out))
    assert code == EXIT_BAD_INPUT, err
    assert f"{out}:--out: [out-writable]" in err and "Errno" not in err and "Traceback" not in err


def test_an_out_whose_folders_do_not_exist_yet_is_written(tmp_path, capsys):
    out = tmp_path / "new" / "deeper" / "catalogue.json"
    code, stdout, err = run_cli(capsys, "tasks", "catalogue", str(SURFACE), "--out", str(out))
    assert code == EXIT_OK, err
    assert out.is_file()
