"""The served-model evidence of each hosted arm, in words (tasks/report/served_evidence.py)."""

from __future__ import annotations

from tasks.selection.served_evidence import evidence_text, served_evidence_notice, served_evidence_table


def arm(name, selector="openai", reported=0, echoed=0, missing=0, models=None, rung=1):
    return {"arm": name, "rung": rung, "selector": selector, "model_id": "gpt-4.1-mini-2025-04-14",
            "served_reported": reported, "served_echoed": echoed, "served_not_reported": missing,
            "served_models": models}


def test_each_kind_of_evidence_is_said_and_only_weak_evidence_reaches_the_headline():
    official = arm("hosted", reported=36, models=["gpt-4.1-mini-2025-04-14"])
    local = arm("local", echoed=30, missing=6, rung=2)
    assert evidence_text(official) == "provider reported gpt-4.1-mini-2025-04-14 (36 replies)"
    text = evidence_text(local)
    assert text.startswith("server echoes the request (30 replies") and "not reported (6 replies" in text
    assert served_evidence_notice([official]) is None
    assert "2. local" in served_evidence_notice([official, local]) and "1. hosted" not in served_evidence_notice(
        [official, local])
    old = arm("before-evidence")  # rows landed before the column existed: nothing recorded, no alarm
    assert evidence_text(old).startswith("not recorded") and served_evidence_notice([old]) is None


def test_offline_arms_have_no_evidence_table():
    assert served_evidence_table([arm("bm25", selector="lexical")]) is None
    table = served_evidence_table([arm("bm25", selector="lexical"), arm("gpt", reported=3, models=["x"])])
    assert [row[0] for row in table.rows] == ["1. gpt"]
