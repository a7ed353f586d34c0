"""Masking, near-duplicates, allocation and draw, production weights, drift and label age — on known input."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest

from schemas.taskset import LabelledRequest, Message, ProductionWeights
from schemas.traffic import MaskingRules, ProductionTurn, SamplingPlan
from tasks.files.input_errors import InputError
from tasks.stats.planner import trials_for_half_width
from tasks.traffic.drift import compare, eval_set_drift, window_drift
from tasks.traffic.mask_personal_data import Masker, luhn_valid
from tasks.traffic.near_duplicates import NearDuplicateIndex
from tasks.traffic.production_weights import production_weights, weights_path, write_weights
from tasks.traffic.stratified_sample import allocate, distinct_candidates, draw
from tasks.traffic.version_age import label_age
from tasks.traffic.window import parse_window
from tests.factories.taskset import write_taskset

MASKER = Masker(MaskingRules(order_ids=[r"NW-\d{7}"]))


@pytest.mark.parametrize("text, masked, kinds", [
    ("email me at dana.reid@example.com please", "email me at [EMAIL] please", {"email": 1}),
    ("call 07700 900123 or +44 7700 900456", "call [PHONE] or [PHONE]", {"phone": 2}),
    ("US number (555) 010-4477, office 555-0123", "US number [PHONE], office [PHONE]", {"phone": 2}),
    ("card 4111 1111 1111 1111 expired", "card [CARD] expired", {"card": 1}),
    ("use 5555-5555-5555-4444 instead", "use [CARD] instead", {"card": 1}),
    ("mistyped 1234 5678 9012 3456 still", "mistyped [CARD] still", {"card": 1}),
    ("send it to 14 Elm Street, Leeds LS1 4AB", "send it to [ADDRESS]", {"address": 1}),
    ("forgot the flat: 221 harbour lane apt 12. thanks", "forgot the flat: [ADDRESS]. thanks", {"address": 1}),
    ("postcode is SW1A 1AA", "postcode is [ADDRESS]", {"address": 1}),
    ("order NW-5502917 came late", "order [ORDER_ID] came late", {"order_id": 1}),
    ("typed nw-5502917 in lower case", "typed [ORDER_ID] in lower case", {"order_id": 1}),
])
def test_personal_data_is_masked(text, masked, kinds):
    counts: Counter[str] = Counter()
    assert MASKER.mask(text, counts) == masked
    assert dict(counts) == kinds


@pytest.mark.parametrize("text", [
    "charged £1,299.00 on 2026-11-03 for 2 pairs of size 12 tights",
    "card ending 4417 please",
    "ticket CS-558201 and article KB-1042",
    "reference 12345678901234567 (17 digits, fails Luhn)",
    "it took 3 weeks and 14 days",
])
def test_ordinary_numbers_are_left_alone(text):
    assert MASKER.mask(text) == text


def test_order_ids_are_masked_only_where_configured():
    assert Masker(MaskingRules()).mask("order NW-5502917") == "order NW-5502917"
    assert Masker(MaskingRules(extra={"ticket": r"CS-\d{6}"})).mask("see CS-558201") == "see [TICKET]"
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    with pytest.raises(InputError) as caught:
        Masker(MaskingRules(order_ids=["NW-(\\d"]))
    assert caught.value.problems[0].rule == "masking-pattern"


@pytest.mark.parametrize("text, masked", [
    ("redeem GC-7ABC-12XY please", "redeem [GIFT_CARD] please"),
    ("balance of gc-3kmn-55pq and GC-9XYZ-10AB", "balance of [GIFT_CARD] and [GIFT_CARD]"),
    ("where is my parcel. Kind regards, Maria", "where is my parcel. Kind regards, [NAME]"),
    ("refund pls. Kind regards, Olu 🙏", "refund pls. Kind regards, [NAME] 🙏"),
    ("thanks - jo.", "thanks - [NAME]."),
    ("Cheers Anna Smith!", "Cheers [NAME]!"),
    ("Regards,\nPriya Patel", "Regards,\n[NAME]"),
    ("Thanks in advance.", "Thanks in advance."),
    ("ok thanks bye", "ok thanks bye"),
    ("help me reset my password thanks", "help me reset my password thanks"),
    ("cheers", "cheers"),
    ("refund pls. Kind regards, Ellen you can call me on 555-0142", "refund pls. Kind regards, [NAME] you can call me on [PHONE]"),
    ("reset it. Kind regards, Mateo I live at 12 Elm Street", "reset it. Kind regards, [NAME] I live at [ADDRESS]"),
    ("Cheers, Ellen Reid my email is e@example.com", "Cheers, [NAME] my email is [EMAIL]"),
    ("Thanks, I will wait for the parcel", "Thanks, I will wait for the parcel"),
    ("thanks - The parcel came today", "thanks - The parcel came today"),
])
def test_gift_card_codes_and_sign_off_names_are_masked(text, masked):
    counts: Counter[str] = Counter()
    assert Masker(MaskingRules(gift_cards=[r"GC-\w{4}-\w{4}"])).mask(text, counts) == masked
    assert sum(counts.values()) == masked.count("[")


def test_gift_cards_only_where_configured_and_sign_offs_can_be_turned_off():
    assert Masker(MaskingRules()).mask("redeem GC-7ABC-12XY") == "redeem GC-7ABC-12XY"
    assert Masker(MaskingRules(sign_offs=False)).mask("thanks, tom") == "thanks, tom"
    assert Masker(MaskingRules(sign_off_phrases=["love"])).mask("see you soon, love, Gran") == "see you soon, love, [NAME]"


def test_masking_a_turn_masks_every_message():
    turn = ProductionTurn(turn_id="t1", time=datetime(2026, 11, 2, tzinfo=timezone.utc),
                          user_message="it's dana@example.org", first_tool="get_account",
                          earlier_turns=(Message(role="assistant", content="Your order NW-1234567 shipped"),))
    masked = MASKER.mask_turn(turn)
    assert masked.user_message == "it's [EMAIL]" and masked.earlier_turns[0].content == "Your order [ORDER_ID] shipped"


def test_near_duplicates_are_typos_and_small_edits_not_other_requests():
    base = "my kettle arrived broken, I want a refund for [ORDER_ID]"
    index = NearDuplicateIndex(0.7, [base])
    assert index.best("hi, my kettle arived broken, I want a refund for [ORDER_ID] thanks") >= 0.7
    assert index.best(base.upper()) == 1.0
    assert index.best("where is my parcel, it has not arrived") < 0.3
    assert index.similar("My kettle arrived broken!! I want a refund for [ORDER_ID]")
    assert not index.similar("can I change the delivery address of my order")


def test_a_one_typo_pair_in_a_short_request_stays_near():
    """One swap in a short text moves enough 4-grams to fall under 0.7; the edit distance keeps it near,
    while a different word of the same length is still another request."""
    base = "skip next coffee box pls"
    index = NearDuplicateIndex(0.7, [base])
    assert index.best("skip next cfofee box pls") < 0.7
    assert index.similar("skip next cfofee box pls") and index.similar("skip nxt coffee box pls")
    assert not index.similar("skip next tea box pls") and not index.similar("skip the next coffee delivery")


def test_allocation_gives_floors_then_volume_and_never_more_than_available():
    volumes = {"refund_order": 600, "track_shipment": 300, "search_kb": 80, "rare": 15, "none": 5}
    available = {"refund_order": 500, "track_shipment": 20, "search_kb": 70, "rare": 3, "none": 5}
    plan = SamplingPlan(size=100, floor_per_tool=5, floor_none=8, seed=1)
    targets = allocate(volumes, available, plan)
    assert targets["rare"] == 5 and targets["none"] == 8  # floors stand even when short (reported as shortfall)
    drawable = {s: min(t, available[s]) for s, t in targets.items()}
    assert sum(drawable.values()) == 100
    assert targets["track_shipment"] == 20  # capped at what it has; the rest went to the others by volume
    assert targets["refund_order"] > targets["track_shipment"] > targets["search_kb"]
    planned = allocate(volumes, available, SamplingPlan(size=100, floor_per_tool=5, seed=1,
                                                        targets={"refund_order": 30, "search_kb": 2}))
    assert planned["refund_order"] == 30 and planned["search_kb"] == 5 and planned["track_shipment"] == 5


def test_allocation_from_the_sample_size_planner():
    volumes = {"refund_order": 600, "track_shipment": 300, "search_kb": 80, "rare": 15, "none": 5}
    plan = SamplingPlan(floor_per_tool=5, floor_none=8, seed=1, target_half_width=0.1, planner_min_share=0.05)
    targets = allocate(volumes, dict(volumes), plan)
    needed = trials_for_half_width(0.8, 0.1)  # one seed of a request = one trial
    assert 50 < needed < 80
    assert targets == {"refund_order": needed, "track_shipment": needed, "search_kb": needed, "rare": 5, "none": 8}


def _turn(n: int, text: str, tool: str) -> ProductionTurn:
    return ProductionTurn(turn_id=f"t{n}", time=datetime(2026, 11, 2, tzinfo=timezone.utc) + timedelta(minutes=n),
                          user_message=text, first_tool=tool)


def test_distinct_candidates_and_a_seeded_draw_without_near_duplicates():
    turns = [_turn(1, "Where is my parcel?", "track_shipment"), _turn(2, "where is my  parcel", "lookup_order"),
             _turn(3, "where is my parcel", "track_shipment"), _turn(4, "refund my broken kettle", "refund_order"),
             _turn(5, "refund my broken kettle please", "refund_order"), _turn(6, "cancel my order now", "cancel_order")]
    candidates = distinct_candidates(turns)
    parcel = next(c for c in candidates if "parcel" in c.text)
    assert parcel.occurrences == 3 and parcel.hint == "track_shipment" and parcel.review_first
    assert parcel.hint_counts == {"lookup_order": 1, "track_shipment": 2} and parcel.turn.turn_id == "t1"
    by_stratum: dict = {}
    for c in candidates:
        by_stratum.setdefault(c.hint, []).append(c)
    targets = {"refund_order": 2, "track_shipment": 1, "cancel_order": 1}
    first = draw(by_stratum, targets, 7, NearDuplicateIndex(0.7))
    again = draw(by_stratum, targets, 7, NearDuplicateIndex(0.7))
    assert [c.key for c in first.chosen["refund_order"]] == [c.key for c in again.chosen["refund_order"]]
    assert len(first.chosen["refund_order"]) == 1 and first.near_duplicates_skipped == 1
    earlier = draw(by_stratum, targets, 7, NearDuplicateIndex(0.7, ["cancel my order now!"]))
    assert earlier.chosen["cancel_order"] == []


def test_production_weights_leave_none_and_unknown_tools_out_and_sum_to_one(tmp_path):
    window = parse_window("2026-W44-W47")
    counts = Counter({"refund_order": 600, "track_shipment": 300, "none": 100, "brand_new_tool": 50, "search_kb": 1})
    weights = production_weights(counts, window, "log.parquet", {"refund_order", "track_shipment", "search_kb"})
    assert set(weights.weights) == {"refund_order", "track_shipment", "search_kb"}
    assert abs(sum(weights.weights.values()) - 1) < 1e-9 and weights.window == "2026-W44-W47"
    assert weights.weights["refund_order"] == pytest.approx(600 / 901, abs=1e-6)
    assert "100 of 1,051 with none" in weights.source
    root = write_taskset(tmp_path / "t")
    path = write_weights(root, weights)
    assert path == weights_path(root, window.id)
    assert ProductionWeights.model_validate_json(path.read_bytes()) == weights
    assert write_weights(root, weights) == path  # the same window again: nothing changes
    other = weights.model_copy(update={"weights": {"refund_order": 1.0}})
    with pytest.raises(InputError) as caught:
        write_weights(root, other)
    assert caught.value.problems[0].rule == "weights-immutable"
    assert ProductionWeights.model_validate_json(path.read_bytes()) == weights


def test_drift_is_total_variation_distance():
    assert compare({"a": 50, "b": 50}, {"a": 100}, "x").tvd == pytest.approx(0.5)
    assert compare({"a": 1, "b": 3}, {"a": 10, "b": 30}, "x").tvd == pytest.approx(0.0)
    requests = tuple(LabelledRequest(id=f"r{i}", messages=(Message(role="user", content=f"q{i}"),), expected=label,
                                     slice="s") for i, label in enumerate(["a"] * 3 + ["none"]))
    drift = eval_set_drift({"a": 20, "b": 60, "none": 20}, requests, "v9")
    # shares of the turns (requests) that call a tool, 'none' apart: a 25% / b 75% against a 100%
    assert drift.tvd == pytest.approx(0.75)
    assert {r.tool: r.production_share for r in drift.rows} == {"a": pytest.approx(0.25), "b": pytest.approx(0.75)}
    assert (drift.production_none, drift.other_none) == (pytest.approx(0.2), pytest.approx(0.25))
    assert [r.tool for r in drift.thin_tools(min_share=0.5, min_count=1)] == ["b"]
    old = ProductionWeights(window="w1", source="s", weights={"a": 0.5, "b": 0.5})
    new = ProductionWeights(window="w2", source="s", weights={"a": 0.8, "b": 0.2})
    assert window_drift(new, old).tvd == pytest.approx(0.3)


def test_label_age_warns_past_the_configured_age(tmp_path):
    root = write_taskset(tmp_path / "t")
    manifest = json.loads((root / "v1.manifest.json").read_text())
    created = datetime.fromisoformat(manifest["created_at"].replace("Z", "+00:00"))
    fresh = label_age(root, created + timedelta(days=3), max_age_days=28)
    assert fresh.newest_adjudicated == "v1" and fresh.warning is None and fresh.age_days == pytest.approx(3)
    stale = label_age(root, created + timedelta(days=40), max_age_days=28)
    assert "40 days old" in stale.warning and "v1" in stale.warning


def test_the_bundled_log_keeps_no_name_email_phone_card_or_code_once_masked():
    """Every user message of tasksets/support/production's log, masked with its traffic.yaml rules: no first
    name of the generator's list, no e-mail, no run of 7+ digits (phones, cards, order ids), no gift-card code."""
    import importlib.util
    import re

    import polars as pl
    import yaml

    from tasks.traffic.mask_personal_data import EMAIL
    from tests.factories import ROOT

    folder = ROOT / "tasksets" / "support" / "production"
    spec = importlib.util.spec_from_file_location("generate_log", folder / "generate_log.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    masker = Masker(MaskingRules(**yaml.safe_load((folder / "traffic.yaml").read_text())["masking"]))
    names = re.compile(r"\b(?:" + "|".join(name.title() for name in generator.FIRST) + r")\b")
    left = [text for text in map(masker.mask, pl.read_parquet(folder / "support_turns.parquet")["user_message"])
            if names.search(text) or EMAIL.search(text) or re.search(r"\d{7,}|GC-\w{4}-\w{4}", text, re.I)]
    assert left == [], (len(left), left[:5])
