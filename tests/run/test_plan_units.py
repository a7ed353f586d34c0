"""Planning: a work unit is its arm, seed and a slice of the request table; the batch planned inside the
task gives the cache keys, labels and tool orders the per-request planner gave."""

from __future__ import annotations

import hashlib
import json
import pickle

from schemas.catalogue import Catalogue, ToolSpec
from schemas.taskset import LabelledRequest, Message
from tasks.selection.arms import SelectionArm
from tasks.run.permute_tools import permute_tools, tool_set_id
from tasks.selection.plan_batch import plan_batch, plan_arm_seed, selector_fingerprint
from tasks.run.cache_keys import tools_fingerprint
from tasks.selection.records import offered_tool_sets
from tasks.taskset.request_table import request_table

TOOLS = tuple(ToolSpec(name=name, description=f"{name} does things") for name in
              ("refund_order", "track_shipment", "reset_password", "search_kb", "cancel_order"))
OWN = (ToolSpec(name="get_weather", description="Weather.",
                parameters={"type": "object", "properties": {"city": {"type": "string"}}}),
       ToolSpec(name="get_time", description="Time."))


def arm(catalogue: Catalogue | None = Catalogue(name="base", tools=TOOLS[:4])) -> SelectionArm:
    return SelectionArm(name="a", rung=1, catalogue_name="base" if catalogue else "per_request", catalogue=catalogue,
                       prompt_name="default", prompt_text="Pick a tool.", model_id="bm25-okapi", selector="lexical",
                       version="v1", options={"abstain_threshold": 0.5})


def requests(n: int) -> list[LabelledRequest]:
    out = []
    for i in range(n):
        messages = [Message(role="user", content=f"où est ma commande n°{i} ? 📦 \"vite\"")]
        if i % 3 == 1:
            messages = [Message(role="assistant", content="Bonjour"), *messages]
        out.append(LabelledRequest(
            id=f"r{i}", messages=tuple(messages), slice="existing", intent=f"i{i % 2}" if i % 2 else None,
            expected=("cancel_order", "track_shipment", "none", "get_time")[i % 4],
            fallback="refund_order" if i % 4 == 0 else None, tools=OWN if i % 4 == 3 else None,
        ))
    return out


def old_plan(resolved: SelectionArm, seed: int, request: LabelledRequest) -> tuple:
    """What the per-request planner computed before the request table (its formula, written out)."""
    tools = permute_tools(request.tools if request.tools is not None else resolved.catalogue.tools, seed)
    names = [t.name for t in tools]
    if request.expected == "none" or request.expected in names:
        expected = request.expected
    elif request.fallback in names:
        expected = request.fallback
    else:
        expected = "none"
    key = hashlib.sha256(json.dumps([selector_fingerprint(resolved), tools_fingerprint(tools),
                                     [m.model_dump() for m in request.messages]],
                                    sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    return (request.id, tuple(names), tool_set_id(names), expected,
            names.index(expected) + 1 if expected != "none" else None, key)


def test_planned_batches_equal_the_per_request_planner():
    given = requests(12)
    for seed in (1, 2, 3):
        units = list(plan_arm_seed(arm(), seed, tuple(given), "shop", batch_size=5))
        assert [u.n_items for u in units] == [5, 5, 2] and [u.batch_index for u in units] == [0, 1, 2]
        planned = [p for u in units for p in plan_batch(u)]
        assert [(p.request_id, tuple(t.name for t in p.tools), p.tool_set_id, p.expected, p.expected_position,
                 p.cache_key) for p in planned] == [old_plan(arm(), seed, r) for r in given]
        assert [p.messages for p in planned] == [r.messages for r in given]
        assert [(p.slice, p.intent, p.label_status) for p in planned] == [(r.slice, r.intent, r.label_status)
                                                                          for r in given]


def test_the_fallback_is_the_label_when_the_expected_tool_is_not_offered():
    [unit] = plan_arm_seed(arm(), 1, tuple(requests(1)), "shop", batch_size=5)
    assert plan_batch(unit)[0].expected == "refund_order"  # cancel_order is not in this rung's catalogue


def test_a_unit_is_a_slice_and_pickles_only_its_own_rows():
    """Prefect holds every unit, and Dask sends each to a worker: a unit's pickle carries its batch's rows
    (so it runs anywhere) and nothing more; it does not grow with the task set."""
    small, large = request_table(requests(200)), request_table(requests(4000))
    unit_small = plan_arm_seed(arm(), 1, small, "shop", batch_size=50)[0]
    unit_large = list(plan_arm_seed(arm(), 1, large, "shop", batch_size=50))[40]
    size_small, size_large = len(pickle.dumps(unit_small)), len(pickle.dumps(unit_large))
    assert abs(size_large - size_small) < 1_000  # the same 50 rows' worth, whatever the table's size
    one_row = len(pickle.dumps(plan_arm_seed(arm(), 1, small, "shop", batch_size=1)[0]))
    row_bytes = max(len(json.dumps(r.model_dump(mode="json"), ensure_ascii=False).encode()) for r in requests(200))
    assert size_small - one_row < 49 * row_bytes * 1.5  # each further request: about its own JSON

    copy = pickle.loads(pickle.dumps(unit_large))
    assert copy.label == unit_large.label and plan_batch(copy) == plan_batch(unit_large)


def test_units_share_the_table_rather_than_copy_it():
    table = request_table(requests(1000))
    units = list(plan_arm_seed(arm(), 1, table, "shop", batch_size=100))
    assert all(u.batch.get_column("messages").to_list() == table.get_column("messages")[i * 100:(i + 1) * 100]
               .to_list() for i, u in enumerate(units))
    assert not hasattr(units[0], "__dict__")  # a plain class with slots: a leaf to Prefect's parameter walk


def test_tool_sets_registered_are_those_offered():
    given = tuple(requests(8))
    units = [u for seed in (1, 2) for u in plan_arm_seed(arm(), seed, given, "shop", batch_size=3)]
    offered: dict[str, tuple[str, ...]] = {}  # as the planner of each request registered them: first seen kept
    for planned in (p for u in units for p in plan_batch(u)):
        offered.setdefault(planned.tool_set_id, tuple(t.name for t in planned.tools))
    assert offered_tool_sets(units) == offered and len(offered) == 2
    per_request_only = [u for u in plan_arm_seed(arm(None), 1, given[3::4], "shop", batch_size=3)]
    assert list(offered_tool_sets(per_request_only)) == [tool_set_id(["get_weather", "get_time"])]


def test_a_trained_router_keys_its_scoring_revision_and_the_other_keys_stay_as_they_were(monkeypatch):
    from dataclasses import replace

    from tasks.run.cache_keys import digest, keyed_options
    from tasks.selectors.arm_options import answer_options
    from tasks.selectors.routers import router_setup

    lexical = arm()
    hosted = replace(lexical, selector="openai", model_id="gpt-x")
    options = keyed_options(answer_options(hosted.selector_options))
    earlier = digest([hosted.selector, hosted.model_id, options,
                      hosted.prompt_text])  # the key's formula before any router had a revision
    assert selector_fingerprint(hosted) == earlier
    plain = selector_fingerprint(lexical)
    trained = replace(lexical, selector="trained", model_id="tooleval-hybrid")
    routed = replace(lexical, selector="openai", model_id="gpt-x", options={"router": "trained"})
    before = selector_fingerprint(trained), selector_fingerprint(routed)
    monkeypatch.setitem(router_setup.SCORING_REVISIONS, "trained", "a later scoring")
    after = selector_fingerprint(trained), selector_fingerprint(routed)
    assert before[0] != after[0] and before[1] != after[1]  # nothing the old code cached answers for the new
    assert selector_fingerprint(hosted) == earlier and selector_fingerprint(lexical) == plain
