"""Offline routers read the conversation, not only its last user turn (tasks/selectors/routers/conversation.py):
a dialogue whose last turn is "yes, that's right" is routed from the turns before it by the lexical, embedding
and trained routers; ``context_turns`` is checked where the experiment names it; a trained model scores with
the turns it learned from (its file's ``context_turns``); the BFCL importer says when it keeps conversations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from flows.cli import main
from schemas.taskset import Message
from tasks.experiment.resolve_experiment import resolve_experiment
from tasks.files.input_errors import InputError
from tasks.importers.bfcl import import_bfcl
from tasks.selectors.base import SelectionInput
from tasks.selectors.routers.conversation import conversation_text, is_conversation
from tasks.selectors.routers.lexical import LexicalSelector
from tests.factories.catalogues import SUPPORT_TOOLS
from tests.factories.decision_model import hand_written_model, small_support_set
from tests.selectors.conftest import EMBEDDING_EXTRA

BFCL = Path(__file__).parents[2] / "importers" / "fixtures" / "bfcl"
QUESTIONS, ANSWERS = BFCL / "BFCL_v4_multiple.json", BFCL / "possible_answer" / "BFCL_v4_multiple.json"

CONFIRMED = (
    Message(role="user", content="my parcel was meant to arrive on Saturday and it still is not here, where is it?"),
    Message(role="assistant", content="Just to check before I go ahead: is that what you need?"),
    Message(role="user", content="yes, that's right"),
)
"""A dialogue whose last turn names no tool: the parcel's whereabouts are asked two turns earlier."""


def confirmed(tools=SUPPORT_TOOLS) -> SelectionInput:
    return SelectionInput("q-confirmed", CONFIRMED, tuple(tools), "")


def test_the_text_read_is_the_last_user_turn_after_the_turns_asked_for():
    assert conversation_text(CONFIRMED, 0) == "yes, that's right"
    assert conversation_text(CONFIRMED, 1) == f"{CONFIRMED[1].content}\nyes, that's right"
    assert conversation_text(CONFIRMED, 2) == conversation_text(CONFIRMED, 9) == "\n".join(m.content for m in CONFIRMED)
    with_system = (Message(role="system", content="Be brief."), *CONFIRMED)  # a system message is not a turn
    assert conversation_text(with_system, 5) == conversation_text(CONFIRMED, 5)
    assert conversation_text((Message(role="assistant", content="hello"),), 2) == ""  # the user never spoke
    assert is_conversation(CONFIRMED) and not is_conversation(CONFIRMED[2:])


def test_the_lexical_router_routes_a_confirmation_from_the_earlier_turns():
    (picked,) = LexicalSelector().select([confirmed()])
    assert picked.chosen == "track_shipment"
    (last_turn_only,) = LexicalSelector(options={"context_turns": 0}).select([confirmed()])
    assert last_turn_only.chosen == "none"  # "yes, that's right" shares no word with any tool


@pytest.mark.skipif(not EMBEDDING_EXTRA, reason="the 'embedding' extra is not installed")
def test_the_embedding_router_routes_a_confirmation_from_the_earlier_turns(embedding_selector):
    (picked,) = embedding_selector.select([confirmed()])
    assert picked.chosen == "track_shipment"


@pytest.mark.skipif(not EMBEDDING_EXTRA, reason="the 'embedding' extra is not installed")
def test_the_embedding_router_reads_a_last_turn_that_names_its_tool_alone(embedding_selector):
    changed_subject = SelectionInput("q-changed", (
        Message(role="user", content="I need to reset my password, I forgot it"),
        Message(role="assistant", content="Done. Anything else?"),
        Message(role="user", content="yes, where is my parcel? it has not been delivered yet")), SUPPORT_TOOLS, "")
    (picked,) = embedding_selector.select([changed_subject])
    assert picked.chosen == "track_shipment"
    from tasks.selectors.routers.embedding import EmbeddingSelector

    always = EmbeddingSelector(options={"context_below": None})
    assert always.scores([changed_subject])[0].tolist() != embedding_selector.scores([changed_subject])[0].tolist()
    with pytest.raises(ValueError, match="context_below"):
        EmbeddingSelector(options={"context_below": "high"})


@pytest.mark.parametrize("value", [-1, 1.5, "2", True])
def test_a_context_that_is_not_a_whole_number_of_turns_is_refused_with_its_file_arm_and_rule(tmp_path, value):
    import_bfcl(QUESTIONS, ANSWERS, tmp_path / "s")
    path = tmp_path / "s" / "experiments" / "offline.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["arms"][0]["options"] = {"context_turns": value}
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(InputError) as caught:
        resolve_experiment(path)
    (problem,) = caught.value.problems
    assert (problem.file, problem.where, problem.rule) == (str(path), "arm lexical", "context-turns")
    assert "whole number >= 0" in problem.message and "lexical router" in problem.message


def test_a_trained_arm_is_refused_other_turns_than_its_model_learned_from(tmp_path):
    import_bfcl(QUESTIONS, ANSWERS, tmp_path / "s")
    model = hand_written_model({"a": "one text", "b": "another"}, ["x", "y"], folds=1)
    model_path = tmp_path / "s" / "models" / "hybrid.json"
    model_path.parent.mkdir()
    model_path.write_text(model.model_copy(update={"context_turns": 2}).model_dump_json())
    path = tmp_path / "s" / "experiments" / "offline-trained.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["arms"] = [arm for arm in spec["arms"] if arm["selector"] == "trained"]
    spec["comparisons"] = []
    spec["arms"][0]["options"]["context_turns"] = 1
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(InputError) as caught:
        resolve_experiment(path)
    (problem,) = caught.value.problems
    assert (problem.where, problem.rule) == ("arm trained", "context-turns")
    assert "--context-turns 1" in problem.message
    spec["arms"][0]["options"]["context_turns"] = 2  # the model's own: accepted, and left to the file
    path.write_text(yaml.safe_dump(spec))
    (arm,) = resolve_experiment(path).arms
    assert "context_turns" not in arm.selector_options


def test_the_bfcl_importer_says_it_keeps_conversations(tmp_path):
    records = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    records[0]["question"][0] = [{"role": "user", "content": records[0]["question"][0][0]["content"]},
                                 {"role": "assistant", "content": "Shall I go ahead?"},
                                 {"role": "user", "content": "yes, that's right"}]
    questions = tmp_path / "BFCL_v4_multiple.json"
    questions.write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = import_bfcl(questions, ANSWERS, tmp_path / "s")
    assert any(n.startswith("1 request(s) are whole conversations") for n in summary.notices)
    assert any("whole conversations" in line for line in summary.lines())
    description = yaml.safe_load((tmp_path / "s" / "experiments" / "offline.yaml").read_text())["description"]
    assert "1 request(s) are whole conversations, kept as they are" in description
    single = import_bfcl(QUESTIONS, ANSWERS, tmp_path / "t")
    assert not any("conversations" in n or "later turns" in n for n in single.notices)
    records[1]["question"].append([{"role": "user", "content": "and the next one?"}])  # a multi-turn task
    questions.write_text("".join(json.dumps(r) + "\n" for r in records))
    later = import_bfcl(questions, ANSWERS, tmp_path / "u")
    assert "1 record(s) hold later turns in 'question' (a multi-turn task): each was imported as its first " \
           "turn, the later turns left out" in later.notices
    assert not any("(later turns)" in n for n in later.notices)  # not listed as a schema keyword


@pytest.mark.slow
def test_a_trained_model_learns_and_scores_with_the_turns_its_file_records(tmp_path, capsys):
    root = small_support_set(tmp_path / "support-small")
    path = root / "models" / "context2.json"
    assert main(["train", str(root / "v1.jsonl"), "--out", str(path), "--context-turns", "2"]) == 0
    assert "context: the last user turn after 2 earlier turn(s)" in capsys.readouterr().out
    written = json.loads(path.read_text())
    assert written["context_turns"] == 2
    multi_turn = [text for text in written["example_texts"] if "\n" in text]
    assert multi_turn  # the small set's dialogues are learned from as whole conversations

    from schemas.catalogue import CatalogueFile
    from tasks.selectors.decision_models.trained import TrainedSelector

    tools = CatalogueFile.model_validate_json((root / "catalogues" / "base.json").read_text()).tools
    (picked,) = TrainedSelector(options={"model_file": str(path)}).select([confirmed(tools)])
    assert picked.chosen == "track_shipment"
    # the same weights told to read the last turn alone: the recorded context is what scoring reads
    last_turn = path.with_name("context0.json")
    last_turn.write_text(json.dumps({**written, "context_turns": 0}))
    (alone,) = TrainedSelector(options={"model_file": str(last_turn)}).select([confirmed(tools)])
    assert alone.probabilities["track_shipment"] < picked.probabilities["track_shipment"]
    assert alone.chosen != "track_shipment"


def test_a_model_reading_earlier_turns_sees_the_last_turn_alone_beside_them():
    import numpy as np

    from tasks.selectors.decision_models.decision_features import (
        LAST_TURN_TOOL_FEATURES,
        TOOL_FEATURES,
        Examples,
        RequestScores,
        feature_arrays,
    )

    whole_text = (np.array([0.9, 0.2]), np.array([3.0, 0.0]))  # cosine and BM25 of the text read, per tool
    with_last = RequestScores(("a", "b"), *whole_text, last_turn=(np.array([0.1, 0.4]), np.array([0.0, 2.0])))
    query = np.eye(2, dtype=np.float32)
    examples = Examples(query.copy(), np.array(["a", "b"], dtype=object), np.array(["x", "y"], dtype=object),
                        np.array([0, 1]))
    tool_x, _, _ = feature_arrays([with_last, RequestScores(("a", "b"), *whole_text)], query, ["h1", "h2"],
                                  examples, None)
    columns = [TOOL_FEATURES.index(f) for f in LAST_TURN_TOOL_FEATURES]
    assert tool_x[0][:, columns].round(6).tolist() == [[0.1, -0.3, 0.0], [0.4, 0.0, 1.0]]
    assert not tool_x[1][:, columns].any()  # a model that reads the last turn alone: no second reading
