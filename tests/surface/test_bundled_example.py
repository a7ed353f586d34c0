"""The bundled support-desk example: its files are what its generator writes, it passes every check on its
three surfaces, and the surfaces differ as described (and only so)."""

from __future__ import annotations

import importlib.util

from tasks.surface.load_surface import load_surface
from tasks.surface.load_tasks import frozen_differs, load_task_version
from tasks.run.prepare_run import prepare_run
from tasks.surface.task_checks import check_tasks
from tests.factories import ROOT

FOLDER = ROOT / "tasksets" / "support_tasks"


def test_the_files_are_what_the_generator_writes():
    spec = importlib.util.spec_from_file_location("generate_support_tasks", FOLDER / "generate_tasks.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    for relative, text in generator.build().items():
        assert (FOLDER / relative).read_text() == text, f"{relative}: run tasksets/support_tasks/generate_tasks.py"
    assert frozen_differs(FOLDER, "t1", generator.build(), ["kb", "customers"]) is None


def test_two_hundred_and_more_tasks_in_slices_pass_every_check():
    version = load_task_version(FOLDER, "t1")
    surfaces = [load_surface(FOLDER, name) for name in ("legacy", "redesigned", "legacy_namespaced")]
    assert check_tasks(version, surfaces).n_tasks >= 200
    assert version.manifest.counts_by_slice == {"answers": 100, "multi_step": 60, "tickets": 90}
    assert {t.intent for t in version.tasks} >= {"find_article", "ticket_status", "close_ticket", "escalate_ticket"}


def test_the_surfaces_are_seed_001s_and_a_smaller_redesign():
    legacy, redesigned, namespaced = (load_surface(FOLDER, n) for n in ("legacy", "redesigned", "legacy_namespaced"))
    assert [t.spec.name for t in legacy.tools] == ["search_kb", "lookup_article", "get_article", "create_ticket",
                                                   "escalate_ticket", "close_ticket", "list_open_tickets", "get_ticket"]
    assert len(redesigned.tools) == 5 < len(legacy.tools)
    assert {t.backend.name for t in legacy.tools if t.backend.marks.irreversible} == {"escalate_ticket"}
    assert [t.backend.name for t in namespaced.tools] == [t.backend.name for t in legacy.tools]
    assert {t.spec.name.split(".")[0] for t in namespaced.tools} == {"kb", "support"}


def test_the_four_arm_experiment_resolves_with_one_change_per_comparison():
    prepared = prepare_run(FOLDER / "experiments" / "four_arms.yaml")
    changed = {(c.baseline, c.arm): c.changed for c in prepared.experiment.comparisons}
    assert changed[("A-legacy", "B-prompt")] == ("prompt",) and changed[("A-legacy", "C-surface")] == ("surface",)
    assert changed[("A-legacy", "D-both")] == ("surface", "prompt")
    assert changed[("A-legacy", "E-namespaced")] == ("surface",)
    assert prepared.criteria is not None and len(prepared.criteria[1].gates) == 6
