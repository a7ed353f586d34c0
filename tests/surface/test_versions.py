"""Every arm against every task-set version in use: a new version is its own instrument, reported apart and
calibrated by running the baseline arm through it (a comparison whose only change is the version)."""

from __future__ import annotations

import json
import textwrap

from tasks.surface.load_tasks import freeze_task_version
from tests.surface.plain_run import run_plain
from tests.surface.tiny_desk import DEFAULT_TASKS, desk_task, write_desk


def test_a_new_version_is_calibrated_by_the_baseline_arm(tmp_path):
    folder = write_desk(tmp_path, experiment=textwrap.dedent("""\
        name: calibrate
        taskset: ..
        version: t1
        seeds: [1, 2, 3]
        defaults: {agent: baseline, prompt: default}
        arms:
          - {name: A-t1, surface: plain}
          - {name: C-t1, surface: prefixed}
          - {name: A-t2, surface: plain, version: t2}
          - {name: C-t2, surface: prefixed, version: t2}
        comparisons:
          - {from: A-t1, to: A-t2}
          - {from: A-t1, to: C-t1}
          - {from: A-t2, to: C-t2}
        """))
    harder = DEFAULT_TASKS + [desk_task("close-3", "Close my oldest ticket please.",
                                        {"state": [{"path": "tickets.T-1001.status", "equals": "closed"}]})]
    (folder / "t2.jsonl").write_text("".join(json.dumps(t) + "\n" for t in harder))
    freeze_task_version(folder, "t2", ["tickets", "questions"], parent="t1")
    published = run_plain(folder / "experiments" / "four.yaml", tmp_path / "wh")
    figures = published.report.figures
    versions = {(r["arm"], r["taskset_version"], r["slice"]): r["n_tasks"] for r in figures.success}
    assert versions[("A-t1", "t1", "tickets")] == 3 and versions[("A-t2", "t2", "tickets")] == 4
    calibration = [c for c in figures.comparisons if (c.baseline, c.arm) == ("A-t1", "A-t2")]
    assert calibration and all(c.calibration and c.changed == ["version"] for c in calibration)
    assert {c.paired.n_requests for c in calibration if c.slice == "tickets"} == {3}  # paired on shared tasks
    table = next(t for t in published.report.tables if t.title.startswith("Paired comparisons"))
    assert any(row[1] == "version (instrument)" for row in table.rows)
    # surface x version forms a 2x2 too: does the surface's effect hold on the new instrument (shared tasks)
    assert {(i.factorial.first_respect, i.factorial.second_respect, i.table.n_requests)
            for i in figures.interactions if i.slice == "tickets"} == {("surface_hash", "taskset_version", 3)}
