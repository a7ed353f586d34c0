"""Resampling the bundled production log into v2: an immutable provisional version, the window's weights,
the labelling queue, masked personal data, no duplicates of v1 — and nothing else touched."""

from __future__ import annotations

import json
import re
from fnmatch import fnmatch

import pytest

from schemas.labelling import QueueItem
from schemas.taskset import ProductionWeights
from schemas.traffic import ResampleSummary
from tasks.files.input_errors import InputError
from tasks.taskset.load_taskset import content_hash, load_version, read_jsonl_models
from tasks.taskset.validate_version import validate_version_file
from tasks.traffic.mask_personal_data import Masker
from tasks.traffic.near_duplicates import NearDuplicateIndex, conversation_text
from tasks.traffic.read_turns import TrafficSource, read_turns
from tasks.traffic.resample_version import load_traffic_config
from tasks.traffic.resample_version import resample_version
from tasks.traffic.window import parse_window
from tests.factories import NOW
from tests.factories import SUPPORT
from tests.factories.traffic import LATER_VERSIONS, SMALL_SAMPLING

PERSONAL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+|NW-\d{7}|07700 ?900\d{3}|\+44 7700|4111 1111|5555 5555|"
                      r"\(555\) 01|\b\d+ (\w+ ){1,2}(Lane|Road|Street|Close|Avenue|Way|Drive|Crescent|Gardens|"
                      r"Terrace|Court)\b|\b[A-Z]{1,2}\d{1,2} \d[A-Z]{2}\b", re.IGNORECASE)
"""What the generator puts in the log: e-mails, NW- order ids, drama-range and 555 phones, test cards,
street addresses, UK postcodes."""


def test_v2_is_frozen_with_parent_window_seed_counts_and_hash(resampled_base):
    root, summary = resampled_base
    assert (summary.version, summary.parent, summary.window.id, summary.reused) == ("v2", "v1", "2026-W44-W47", False)
    v2 = load_version(root, "v2")
    manifest = v2.manifest
    assert manifest.parent == "v1" and manifest.window == "2026-W44-W47"
    assert manifest.sampling_seed == summary.plan.seed and manifest.content_hash == content_hash(root, "v2")
    assert manifest.counts_by_label == {t.tool: t.sampled for t in summary.per_tool if t.sampled}
    assert manifest.n_requests == len(v2.requests) == sum(t.sampled for t in summary.per_tool) >= 200
    assert all(r.label_status == "provisional" for r in v2.requests)
    assert manifest.slices == ["existing", "new_tools"]
    # the label checks (Great Expectations) pass on the written version with the window's weights
    assert validate_version_file(root / "v2.jsonl", weights_window="2026-W44-W47").startswith("OK")


def test_the_sample_keeps_floors_and_oversamples_the_busiest_tools(resampled_base):
    _, summary = resampled_base
    per_tool = {t.tool: t for t in summary.per_tool}
    assert per_tool["none"].sampled >= SMALL_SAMPLING["floor_none"]
    assert all(t.sampled >= SMALL_SAMPLING["floor_per_tool"] for t in summary.per_tool if t.tool != "none")
    busiest = max(summary.per_tool, key=lambda t: t.turns)
    assert busiest.tool == "refund_order" and busiest.sampled == max(t.sampled for t in summary.per_tool)
    assert per_tool["refund_order"].sampled > per_tool["track_shipment"].sampled > per_tool["withdraw_dispute"].sampled
    assert summary.n_earlier_duplicates_removed > 0 and summary.n_turns > 20_000


def test_weights_of_the_window_are_written_beside_the_old_ones(resampled_base):
    root, summary = resampled_base
    weights = ProductionWeights.model_validate_json((root / summary.weights_file).read_bytes())
    assert weights.window == "2026-W44-W47" and abs(sum(weights.weights.values()) - 1) < 1e-6
    assert "none" not in weights.weights and len(weights.weights) == 30
    per_tool = {t.tool: t for t in summary.per_tool}
    tool_turns = sum(t.turns for t in summary.per_tool if t.tool != "none")
    assert weights.weights["refund_order"] == pytest.approx(per_tool["refund_order"].turns / tool_turns, abs=1e-5)
    assert (root / "weights" / "2026-W36-W47.json").read_bytes() == (SUPPORT / "weights" / "2026-W36-W47.json").read_bytes()


def test_the_queue_holds_every_request_with_its_hint_and_signals(resampled_base):
    root, summary = resampled_base
    items = read_jsonl_models(root / summary.queue_file, QueueItem)
    v2 = load_version(root, "v2")
    assert sorted(i.request_id for i in items) == sorted(r.id for r in v2.requests)
    by_id = {r.id: r for r in v2.requests}
    assert all(i.hint == by_id[i.request_id].expected and i.label is None for i in items)
    assert all(i.turn_id and i.occurrences >= 1 and sum(i.hint_counts.values()) == i.occurrences for i in items)
    flags = [i.review_first for i in items]
    assert any(flags) and flags == sorted(flags, reverse=True)  # doubtful hints first
    assert ResampleSummary.model_validate_json((root / "resamples" / "v2.json").read_bytes()).version == "v2"


def test_no_personal_data_reaches_any_written_file(resampled_base):
    root, summary = resampled_base
    assert sum(summary.masked.values()) > 1000 and {"email", "phone", "card", "address", "order_id"} <= set(summary.masked)
    for path in [root / "v2.jsonl", root / summary.queue_file, root / "resamples" / "v2.json", root / summary.weights_file]:
        text = path.read_text()
        assert not PERSONAL.search(text), (path.name, PERSONAL.search(text))
    written = (root / "v2.jsonl").read_text()
    assert "[ORDER_ID]" in written and "[EMAIL]" in written


def test_no_request_duplicates_or_near_duplicates_an_earlier_version(resampled_base):
    root, summary = resampled_base
    masker = Masker(summary.masking)
    v1 = [conversation_text(masker.mask_messages(r.messages)) for r in load_version(root, "v1").requests]
    index = NearDuplicateIndex(summary.plan.near_duplicate_threshold, v1)
    v2 = [conversation_text(r.messages) for r in load_version(root, "v2").requests]
    assert not [text for text in v2 if index.similar(text)]
    assert len({t.lower() for t in v2}) == len(v2)


def test_v1_and_every_other_existing_file_are_untouched(resampled_base):
    root, _ = resampled_base
    for path in SUPPORT.rglob("*"):
        if path.is_file() and path.name != "traffic.yaml" and not fnmatch(path.name, LATER_VERSIONS):
            assert (root / path.relative_to(SUPPORT)).read_bytes() == path.read_bytes(), path


def test_resampling_the_same_window_again_reuses_v2(resampled):
    before = sorted(p.name for p in resampled.iterdir())
    summary = resample_version(resampled, now=NOW)
    assert summary.version == "v2" and summary.reused
    assert sorted(p.name for p in resampled.iterdir()) == before


def test_another_window_makes_v3_free_of_v2s_requests(resampled):
    summary = resample_version(resampled, window="2026-W40-W43", now=NOW)
    assert (summary.version, summary.parent, summary.reused) == ("v3", "v1", False)
    v2_ids = {r.id for r in load_version(resampled, "v2").requests}
    v3 = load_version(resampled, "v3")
    assert not v2_ids & {r.id for r in v3.requests}
    assert (resampled / "weights" / "2026-W40-W43.json").is_file() and (resampled / "queue" / "v3.queue.jsonl").is_file()


def test_a_different_weights_file_for_the_window_stops_the_resample_before_writing(resampled):
    path = resampled / "weights" / "2026-W40-W43.json"
    path.write_text(json.dumps({"window": "2026-W40-W43", "source": "someone else", "weights": {"refund_order": 1.0}}))
    before = sorted(str(p) for p in resampled.rglob("*"))
    with pytest.raises(InputError) as caught:
        resample_version(resampled, window="2026-W40-W43", now=NOW)
    assert caught.value.problems[0].rule == "weights-immutable" and caught.value.problems[0].file == str(path)
    assert sorted(str(p) for p in resampled.rglob("*")) == before


def test_a_window_without_traffic_is_refused(resampled):
    with pytest.raises(InputError) as caught:
        resample_version(resampled, window="2025-W10-W12", now=NOW)
    assert caught.value.problems[0].rule == "window-has-traffic"


@pytest.mark.slow  # reads every turn of a window of the bundled production log
def test_masking_leaves_no_personal_data_in_any_turn_of_the_window():
    masker = Masker(load_traffic_config(SUPPORT).masking)
    turns = read_turns(TrafficSource(SUPPORT / "production" / "support_turns.parquet"), parse_window("2026-W44-W47"))
    leaks = [text for turn in turns
             for text in [masker.mask(turn.user_message)] + [masker.mask(m.content) for m in turn.earlier_turns]
             if PERSONAL.search(text)]
    assert leaks == []


def test_a_run_interrupted_after_publishing_completes_the_same_version(resampled):
    for leftover in ("resamples/v2.json", "queue/v2.queue.jsonl", "weights/2026-W44-W47.json"):
        (resampled / leftover).unlink()
    summary = resample_version(resampled, now=NOW)
    assert (summary.version, summary.reused) == ("v2", True)
    assert not (resampled / "v3.jsonl").exists()
    for leftover in ("resamples/v2.json", "queue/v2.queue.jsonl", "weights/2026-W44-W47.json"):
        assert (resampled / leftover).is_file()
