"""Which requests a trained decision model learned from (tasks/selectors/decision_models/trained.py, the run's check in
tasks/selection/versions.py): the same text, or the same request (id) of the same task set (name and content
hash) — never an id alone, since ids are unique only inside one task set (MetaTool's are CSV row numbers, so
two imports share them). Known rows on a hand-written model file: no MiniLM, the fast tier."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from schemas.decision_model import DecisionModelFile
from schemas.taskset import Message
from tasks.files.input_errors import InputError
from tasks.selection.versions import refuse_leakage
from tasks.selectors.base import SelectionInput
from tasks.selectors.decision_models.decision_features import text_hash
from tasks.selectors.decision_models.trained import LEAKED, TrainedSelector, leaked_requests
from tests.factories.decision_model import hand_written_model

LEARNED = {"mt-00001": "find me a cheap flight to Lisbon", "mt-00002": "what is the weather in Oslo tomorrow"}
"""The requests of half A (task set 'metatool-a') the model learned from."""


def model_file(tmp_path: Path, folds: int) -> Path:
    path = tmp_path / f"folds{folds}.json"
    path.write_text(hand_written_model(LEARNED, ["flights", "weather"], folds).model_dump_json())
    return path


def test_ids_shared_by_two_task_sets_do_not_match_the_same_request_does(tmp_path):
    model = DecisionModelFile.model_validate_json(model_file(tmp_path, 1).read_text())
    half_b = {"mt-00001": "translate this paragraph into German", "mt-00002": "Find me a cheap  flight to LISBON"}
    ids, texts = list(half_b), list(half_b.values())
    # half B: the same ids, one the same text (normalised): only that one
    assert leaked_requests(model, "metatool-b", "hash-b", ids, texts) == ["mt-00002"]
    # the same request of half A (same name and hash) matches by id
    assert leaked_requests(model, "metatool-a", "hash-a", ids, ["edited text", "another"]) == ["mt-00001", "mt-00002"]
    # the same name at another content hash is another set: by text only
    assert leaked_requests(model, "metatool-a", "hash-a2", ids, ["edited text", "another"]) == []


def item(request_id: str, text: str) -> SelectionInput:
    return SelectionInput(request_id, (Message(role="user", content=text),), (), "")


@pytest.mark.parametrize("folds", [5, 1])
def test_a_shared_id_with_other_text_is_scored_by_the_full_model(tmp_path, folds):
    selector = TrainedSelector(options={"model_file": str(model_file(tmp_path, folds))})
    other = item("mt-00001", "translate this paragraph into German")  # half B's row 1
    assert selector._which(other, text_hash(other.text)) is None
    same = item("mt-09999", LEARNED["mt-00002"])  # half A's text under another id
    assert selector._which(same, text_hash(same.text)) == (1 if folds > 1 else LEAKED)


def experiment_with(tmp_path: Path, taskset: str) -> SimpleNamespace:
    arm = SimpleNamespace(name="trained", version="v1", decision_model_hash="sha-of-file",
                          selector_options={"model_file": str(model_file(tmp_path, 1))})
    return SimpleNamespace(arms=[arm], path=tmp_path / "experiment.yaml", taskset_dir=tmp_path / taskset)


def version_of(rows: dict[str, str], content_hash: str) -> SimpleNamespace:
    columns = {"id": list(rows), "text": list(rows.values())}
    return SimpleNamespace(column=columns.__getitem__, manifest=SimpleNamespace(content_hash=content_hash))


def test_a_run_on_another_task_set_with_the_same_ids_is_not_refused(tmp_path):
    half_b = {"mt-00001": "translate this paragraph into German", "mt-00002": "book a table for two tonight"}
    refuse_leakage(experiment_with(tmp_path, "metatool-b"), {"v1": version_of(half_b, "hash-b")})
    half_b["mt-00003"] = LEARNED["mt-00001"]  # the same request, under another id
    with pytest.raises(InputError) as caught:
        refuse_leakage(experiment_with(tmp_path, "metatool-b"), {"v1": version_of(half_b, "hash-b")})
    (problem,) = caught.value.problems
    assert problem.rule == "decision-model-leakage" and problem.where == "arm trained"
    assert "learned from 1 request(s) of v1" in problem.message and "mt-00003" in problem.message
    # its own task set: by id too
    with pytest.raises(InputError):
        refuse_leakage(experiment_with(tmp_path, "metatool-a"), {"v1": version_of({"mt-00001": "edited"}, "hash-a")})
