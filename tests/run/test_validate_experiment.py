"""`tooleval validate EXPERIMENT_FILE`: the checks a run makes before its first model call, with nothing run or
written (tasks/run/validate_experiment.py); what the README's step 4 tells a user to do with a new experiment."""

from __future__ import annotations

import yaml

from flows.cli import main
from tests.factories import ROOT

SUPPORT = ROOT / "tasksets" / "support"


def test_an_experiment_passes_with_its_arms_checks_and_criteria_and_nothing_is_written(tmp_path, monkeypatch,
                                                                                          capsys):
    monkeypatch.setenv("TOOLEVAL_WAREHOUSE", str(tmp_path / "warehouse"))
    assert main(["validate", str(SUPPORT / "experiments" / "ladder.yaml")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"OK {SUPPORT / 'experiments' / 'ladder.yaml'}"
    body = "\n".join(out[1:])
    for words in ("experiment support-ladder, task set support", "4 arm(s) x 3 seed(s): 6,480 rows planned",
                  "arm giftcards-30: version v1", "v1: 540 requests, 30 weights: 12 label expectations passed",
                  "comparisons: 3", "criteria: 7 gate(s) from criteria.yaml (support-catalogue-growth)",
                  "nothing was run or written"):
        assert words in body, words
    assert max(len(line) for line in out[1:]) <= 80
    assert not (tmp_path / "warehouse").exists()


def test_a_task_experiment_passes_with_its_task_checks(capsys):
    assert main(["validate", str(ROOT / "tasksets" / "support_tasks" / "experiments" / "four_arms.yaml")]) == 0
    out = capsys.readouterr().out
    assert "5 arm(s) x 3 seed(s): 3,750 rows planned" in out and "t1: 250 tasks: 11 rules passed on 3 surface(s)" in out


def test_an_arm_a_run_would_refuse_is_named_with_its_rule(tmp_path, capsys):
    spec = yaml.safe_load((SUPPORT / "experiments" / "routers.yaml").read_text())
    spec["taskset"] = str(SUPPORT)
    spec["arms"][2]["options"] = {"model_file": str(SUPPORT / "models" / "hybrid.json"),
                                  "abstain_cutoff": "cutoffs/not-fitted-yet.json"}
    experiment = tmp_path / "routers.yaml"
    experiment.write_text(yaml.safe_dump(spec))
    assert main(["validate", str(experiment)]) == 2
    err = capsys.readouterr().err
    assert f"{experiment}:arm trained-30: [router-files]" in err and "not-fitted-yet.json" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["routers.yaml"]


def test_catalogue_or_weights_options_with_an_experiment_are_bad_input(capsys):
    assert main(["validate", str(SUPPORT / "experiments" / "ladder.yaml"), "--weights", "2026-W36-W47"]) == 2
    assert "[validate-options]" in capsys.readouterr().err


def test_an_arm_name_outside_the_rule_names_the_characters_and_the_rule(tmp_path, capsys):
    spec = yaml.safe_load((SUPPORT / "experiments" / "production.yaml").read_text())
    spec["taskset"] = str(SUPPORT)
    spec.pop("criteria", None)
    spec.pop("comparisons", None)
    spec["arms"] = spec["arms"][:1]
    spec["arms"][0]["name"] = "größe 30"
    experiment = tmp_path / "production.yaml"
    experiment.write_text(yaml.safe_dump(spec, allow_unicode=True))
    assert main(["validate", str(experiment)]) == 2
    err = capsys.readouterr().err
    assert f"{experiment}:arm größe 30: [arm-name-chars]" in err
    assert "' ', 'ß', 'ö' cannot be in an arm name" in err and "ASCII letters (a-z, A-Z)" in err
