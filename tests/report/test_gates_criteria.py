"""The criteria file: checked like any input (file, line, rule), registered before the run, and a change
after registration is caught."""

from __future__ import annotations

from schemas.selection.criteria import SelectionCriteria

import json
from datetime import datetime, timezone

import pytest

from tasks.experiment.criteria import (
    changed_since_registration,
    check_against_experiment,
    load_criteria,
    read_registration,
    register_criteria,
    registered_criteria,
)
from tasks.files.content_hash import sha256_hex
from tasks.files.input_errors import InputError
from tests.factories import SUPPORT
from tests.factories.criteria import criteria_text, gate

GOOD = criteria_text("test-gates",
                     gate("busy-tools-hold", "tool_drop", min_volume_share=0.03, max_drop_points=10),
                     gate("floors", "slice_floor", floors={"existing": 0.7}))


def test_the_bundled_criteria_file_is_valid_and_names_real_slices():
    criteria = load_criteria(SUPPORT / "experiments" / "criteria.yaml", SelectionCriteria)
    kinds = {g.kind for g in criteria.gates}
    assert {"tool_drop", "confused_pair_share", "weighted_floor", "slice_floor", "confidence_gap"} <= kinds
    check_against_experiment(criteria, SUPPORT / "experiments" / "criteria.yaml",
                             ["base-18", "disputes-22", "subscriptions-26", "giftcards-30"], {"existing", "new_tools"})


def test_a_bad_gate_is_named_with_its_file_line_and_rule(tmp_path):
    path = tmp_path / "criteria.yaml"
    path.write_text(GOOD.replace("max_drop_points: 10", "max_drop_points: -5"))
    with pytest.raises(InputError) as error:
        load_criteria(path, SelectionCriteria)
    (problem,) = error.value.problems
    assert problem.file == str(path) and problem.rule == "criteria-schema"
    assert "gates.0" in problem.where and "line 6" in problem.where


def test_an_unknown_gate_kind_and_a_repeated_name_are_refused(tmp_path):
    path = tmp_path / "criteria.yaml"
    path.write_text(GOOD.replace("kind: tool_drop", "kind: vibes"))
    with pytest.raises(InputError, match="criteria-schema"):
        load_criteria(path, SelectionCriteria)
    path.write_text(GOOD.replace("name: floors", "name: busy-tools-hold"))
    with pytest.raises(InputError, match="gate-names-unique"):
        load_criteria(path, SelectionCriteria)


def test_gates_may_only_name_arms_and_slices_the_experiment_has(tmp_path):
    path = tmp_path / "criteria.yaml"
    path.write_text(GOOD + "    arms: [nope]\n")
    criteria = load_criteria(path, SelectionCriteria)
    with pytest.raises(InputError) as error:
        check_against_experiment(criteria, path, ["a", "b"], {"new_tools"})
    rules = {p.rule for p in error.value.problems}
    assert rules == {"gate-arms", "gate-slices"}


def test_registration_keeps_the_bytes_hash_and_utc_time(tmp_path):
    path = tmp_path / "criteria.yaml"
    path.write_text(GOOD)
    when = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
    registration = register_criteria(path, SelectionCriteria, tmp_path / "registrations", "run-1", now=when)
    assert registration.sha256 == sha256_hex(GOOD.encode())
    assert registration.copy.read_text() == GOOD
    meta = json.loads((tmp_path / "registrations" / "run-1" / "registration.json").read_text())
    assert meta["sha256"] == registration.sha256 and meta["registered_at"] == "2026-11-30T10:00:00+00:00"
    assert read_registration(tmp_path / "registrations", "run-1") == registration
    assert changed_since_registration(registration) is None
    assert registered_criteria(registration, SelectionCriteria).name == "test-gates"


def test_a_criteria_file_changed_after_registration_is_caught(tmp_path):
    path = tmp_path / "criteria.yaml"
    path.write_text(GOOD)
    registration = register_criteria(path, SelectionCriteria, tmp_path / "registrations", "run-1")
    path.write_text(GOOD.replace("max_drop_points: 10", "max_drop_points: 25"))  # moved after the fact
    reason = changed_since_registration(registration)
    assert reason and "changed after it was registered" in reason
    # the registered copy still says what was registered
    assert registered_criteria(registration, SelectionCriteria).gates[0].max_drop_points == 10
    # and the same run id cannot register other criteria
    with pytest.raises(InputError, match="criteria-registered-once"):
        register_criteria(path, SelectionCriteria, tmp_path / "registrations", "run-1")


def test_a_tampered_registered_copy_is_refused(tmp_path):
    path = tmp_path / "criteria.yaml"
    path.write_text(GOOD)
    registration = register_criteria(path, SelectionCriteria, tmp_path / "registrations", "run-1")
    registration.copy.write_text(GOOD.replace("0.03", "0.5"))
    with pytest.raises(ValueError, match="does not match"):
        registered_criteria(registration, SelectionCriteria)
