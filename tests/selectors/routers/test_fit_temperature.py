"""``tooleval fit`` fits a softmax temperature beside the cut-off on one hash half, confirms both on the other,
writes both in the file, and an arm that names the file runs with both (tasks/selection/fit_router_cutoff.py,
tasks/selectors/routers/router_setup.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from flows.cli import main
from tasks.experiment.resolve_experiment import resolve_experiment
from tasks.importers.bfcl import BfclSource, import_bfcl_slices
from tasks.selectors.base import SelectionInput
from tasks.selectors.offline import TemperedSelector, offline_selector
from tasks.selectors.routers.lexical import LexicalSelector
from tasks.taskset.load_taskset import load_version
from tests.selectors.routers.test_router_setup import ANSWERS, IRRELEVANCE, QUESTIONS, plain_routers


@pytest.fixture
def experiment(tmp_path) -> Path:
    import_bfcl_slices([BfclSource("a", QUESTIONS, ANSWERS), BfclSource("i", IRRELEVANCE, label_none=True)],
                       tmp_path / "s")
    return plain_routers(tmp_path / "s")


def test_fit_writes_a_temperature_and_its_ece_on_both_halves(support_copy, capsys):
    experiment = support_copy / "experiments" / "routers.yaml"
    assert main(["fit", str(experiment), "--arm", "lexical-30"]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines() if not line.startswith(("wrote ", "use it")))
    written = json.loads((experiment.parent / "cutoffs" / "lexical-30-v1.json").read_text())
    fit = written["temperature_fit"]
    assert fit["before"] == LexicalSelector().temperature and fit["fitted"]  # from the router's own (default)
    assert written["temperature"] != fit["before"] and "temperature" not in written["router_options"]
    # fitted on one half, it makes the confidence truer on the other
    assert fit["confirm_ece_after"] < fit["confirm_ece_before"] and fit["fit_ece_after"] < fit["fit_ece_before"]
    assert 0.0 < fit["confirm_ece_if_calibrated"] < 0.2
    confirm = f"{fit['confirm_ece_before']:.3f} -> {fit['confirm_ece_after']:.3f}"
    assert "ECE on the confirm half" in out and confirm in out and "noise floor <" in out
    assert f"temperature: {fit['before']:.4g} -> {written['temperature']:.4g}" in out


def test_a_few_requests_keep_the_routers_own_temperature(experiment, capsys):
    assert main(["fit", str(experiment), "--arm", "lexical"]) == 0
    written = json.loads((experiment.parent / "cutoffs" / "lexical-v1.json").read_text())
    assert not written["temperature_fit"]["fitted"] and written["temperature"] == LexicalSelector().temperature
    assert "(kept: under 30 requests in the fit half)" in capsys.readouterr().out


def test_an_arm_naming_the_file_runs_with_its_temperature_over_a_written_one(experiment, capsys):
    spec = yaml.safe_load(experiment.read_text())
    spec["arms"][0]["options"] = {"temperature": 2.0}
    experiment.write_text(yaml.safe_dump(spec))
    assert main(["fit", str(experiment), "--arm", "lexical"]) == 0
    path = experiment.parent / "cutoffs" / "lexical-v1.json"
    written = json.loads(path.read_text())
    assert written["temperature_fit"]["before"] == 2.0  # fitted from the arm's own temperature
    written["temperature"] = 0.33  # as a fit on more requests would have written
    path.write_text(json.dumps(written))
    spec["arms"][0]["options"] = {"temperature": 2.0, "abstain_cutoff": "cutoffs/lexical-v1.json"}
    experiment.write_text(yaml.safe_dump(spec))
    lexical = resolve_experiment(experiment).arms[0]
    assert lexical.selector_options["temperature"] == 0.33 and "temperature 0.33" in lexical.abstain_rule
    manifest = load_version(experiment.parent.parent, "v1").manifest
    assert f"fitted on s v1, hash {manifest.content_hash[:12]}" in lexical.abstain_rule  # the report compares it
    assert offline_selector("lexical", lexical.model_id, lexical.selector_options).temperature == 0.33


def test_a_tempered_selector_is_a_warmer_softmax_and_keeps_its_picks(experiment):
    version = load_version(experiment.parent.parent, "v1")
    batch = [SelectionInput(r.id, r.messages, r.tools, "") for r in version.requests]
    plain = LexicalSelector()
    tempered = TemperedSelector(plain, 3.0)
    sharp = LexicalSelector(options={"temperature": plain.temperature * 3.0})
    for a, b in zip(tempered.select(batch), sharp.select(batch)):  # the same as a softmax 3x as warm
        assert a.chosen == b.chosen and a.confidence == pytest.approx(b.confidence)
    with pytest.raises(ValueError, match="temperature"):
        TemperedSelector(plain, 0)


def test_a_version_without_none_labels_gets_its_temperature_and_never_abstains(tmp_path, capsys):
    from tasks.importers.metatool import import_metatool

    metatool = Path(__file__).parents[2] / "importers" / "fixtures" / "metatool"
    import_metatool(metatool / "plugin_des.json", metatool / "queries.csv", tmp_path / "m")
    experiment = plain_routers(tmp_path / "m")
    assert main(["fit", str(experiment), "--arm", "lexical"]) == 0
    out = capsys.readouterr().out
    assert "no request expects 'none': the router never abstains on this version" in out
    written = json.loads((experiment.parent / "cutoffs" / "lexical-v1.json").read_text())
    assert written["threshold"] is None and written["temperature_fit"] is not None
    assert written["fit"]["abstained"] == written["confirm"]["abstained"] == 0
    spec = yaml.safe_load(experiment.read_text())
    spec["arms"][0]["options"] = {"abstain_cutoff": "cutoffs/lexical-v1.json"}
    experiment.write_text(yaml.safe_dump(spec))
    lexical = resolve_experiment(experiment).arms[0]
    assert lexical.selector_options["abstain_threshold"] == "never"
    assert lexical.selector_options["temperature"] == written["temperature"]
