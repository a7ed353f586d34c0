"""The 'none' cut-off an offline router runs with in an arm (tasks/selectors/routers/router_setup.py), and
``tooleval fit`` writing one an experiment uses (tasks/selection/fit_router_cutoff.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from flows.cli import main
from schemas.taskset import Message
from tasks.experiment.resolve_experiment import resolve_experiment
from tasks.files.input_errors import InputError
from tasks.importers.bfcl import BfclSource, import_bfcl, import_bfcl_slices
from tasks.selectors.base import SelectionInput
from tasks.selectors.routers.lexical import LexicalSelector
from tasks.selectors.routers.router_setup import router_setup
from tasks.taskset.load_taskset import load_version

BFCL = Path(__file__).parents[2] / "importers" / "fixtures" / "bfcl"
QUESTIONS, ANSWERS = BFCL / "BFCL_v4_multiple.json", BFCL / "possible_answer" / "BFCL_v4_multiple.json"
IRRELEVANCE = BFCL / "BFCL_v4_live_irrelevance.json"


def plain_routers(root: Path) -> Path:
    """The imported set's experiment with its two plain routers (as the importer writes offline.yaml)."""
    path = root / "experiments" / "offline.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["arms"] = [arm for arm in spec["arms"] if arm["selector"] != "trained"]
    spec["comparisons"] = spec["comparisons"][:1]
    path.write_text(yaml.safe_dump(spec))
    return path


def with_arm_options(experiment: Path, **options) -> Path:
    spec = yaml.safe_load(experiment.read_text())
    for arm in spec["arms"]:
        arm["options"] = options
    experiment.write_text(yaml.safe_dump(spec))
    return experiment


def test_no_cutoff_on_a_version_without_none_labels_never_abstains(tmp_path):
    import_bfcl(QUESTIONS, ANSWERS, tmp_path / "s")
    experiment = resolve_experiment(plain_routers(tmp_path / "s"))
    for arm in experiment.arms:
        assert arm.selector_options["abstain_threshold"] == "never"
        assert arm.abstain_rule.startswith("never") and arm.options == {}
    # a request no tool word matches still gets a tool
    selector = LexicalSelector(options=experiment.arms[0].selector_options)
    request = load_version(tmp_path / "s", "v1").requests[0]
    (picked,) = selector.select([SelectionInput("x", (Message(role="user", content="qqq zzz"),), request.tools, "")])
    assert picked.chosen != "none" and picked.probabilities["none"] == 0.0


def test_a_version_with_none_labels_keeps_the_default_and_written_cutoffs_win(tmp_path):
    import_bfcl_slices([BfclSource("a", QUESTIONS, ANSWERS), BfclSource("i", IRRELEVANCE, label_none=True)],
                       tmp_path / "s")
    path = plain_routers(tmp_path / "s")
    assert {a.abstain_rule for a in resolve_experiment(path).arms} == {"default"}
    with_arm_options(path, abstain_threshold=0.3)
    assert {a.abstain_rule for a in resolve_experiment(path).arms} == {"option: 0.3"}


def test_fit_writes_a_cutoff_the_experiment_uses_and_refuses_another_router(tmp_path, capsys):
    import_bfcl_slices([BfclSource("a", QUESTIONS, ANSWERS), BfclSource("i", IRRELEVANCE, label_none=True)],
                       tmp_path / "s")
    path = plain_routers(tmp_path / "s")
    assert main(["fit", str(path), "--arm", "lexical"]) == 0
    out = capsys.readouterr().out
    assert "use it: options: {abstain_cutoff: cutoffs/lexical-v1.json}" in out and "confirm" in out
    written = json.loads((path.parent / "cutoffs" / "lexical-v1.json").read_text())
    assert written["fit"]["n_requests"] + written["confirm"]["n_requests"] == 5
    assert written["scale"] == "score"  # a plain router: its best tool's own score
    spec = yaml.safe_load(path.read_text())
    spec["arms"][0]["options"] = {"abstain_cutoff": "cutoffs/lexical-v1.json"}
    spec["arms"][1]["options"] = {"abstain_cutoff": "cutoffs/lexical-v1.json"}  # fitted for another router
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(InputError) as caught:
        resolve_experiment(path)
    (problem,) = caught.value.problems
    assert problem.rule == "router-files" and problem.where == "arm embedding" and "fitted for lexical" in problem.message
    spec["arms"][1]["options"] = {}
    path.write_text(yaml.safe_dump(spec))
    del written["scale"]  # a file written before the field: the score scale
    (path.parent / "cutoffs" / "lexical-v1.json").write_text(json.dumps(written))
    lexical = resolve_experiment(path).arms[0]
    assert lexical.abstain_rule.startswith("fitted cutoffs/lexical-v1.json (sha256 ")
    threshold = written["threshold"]
    assert lexical.selector_options["abstain_threshold"] == (threshold if threshold is not None else "never")


def test_fit_checks_its_own_arm_only_so_an_arm_may_name_the_file_before_it_is_fitted(tmp_path, capsys):
    import_bfcl_slices([BfclSource("a", QUESTIONS, ANSWERS), BfclSource("i", IRRELEVANCE, label_none=True)],
                       tmp_path / "s")
    path = plain_routers(tmp_path / "s")
    spec = yaml.safe_load(path.read_text())
    spec["arms"].append({**spec["arms"][0], "name": "lexical-fitted",
                         "options": {"abstain_cutoff": "cutoffs/lexical-v1.json"}})
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(InputError) as caught:  # a run (or validate) checks every arm: the file is not there yet
        resolve_experiment(path)
    assert [(p.rule, p.where) for p in caught.value.problems] == [("router-files", "arm lexical-fitted")]
    assert main(["fit", str(path), "--arm", "lexical-fitted"]) == 2  # the fitted arm's own problem still stops it
    assert "[router-files]" in capsys.readouterr().err and not (path.parent / "cutoffs").exists()
    assert main(["fit", str(path), "--arm", "lexical"]) == 0
    assert "wrote " in capsys.readouterr().out
    fitted = {arm.name: arm for arm in resolve_experiment(path).arms}["lexical-fitted"]
    assert fitted.abstain_rule.startswith("fitted cutoffs/lexical-v1.json (sha256 ")


def test_fit_needs_a_known_arm(tmp_path, capsys):
    import_bfcl(QUESTIONS, ANSWERS, tmp_path / "s")  # no 'none' label: fit fits the temperature alone
    path = plain_routers(tmp_path / "s")
    assert main(["fit", str(path), "--arm", "nope"]) == 2
    assert "[fit-arm]" in capsys.readouterr().err
    assert not (path.parent / "cutoffs").exists()


def test_router_setup_refuses_both_forms_and_a_missing_file(tmp_path):
    with pytest.raises(ValueError, match="not both"):
        router_setup("lexical", None, {"abstain_threshold": 1, "abstain_cutoff": "x.json"}, has_none_labels=True,
                     base_dir=tmp_path)
    with pytest.raises(ValueError, match="not found"):
        router_setup("lexical", None, {"abstain_cutoff": "x.json"}, has_none_labels=True, base_dir=tmp_path)
