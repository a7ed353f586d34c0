"""Two runs compared: the run_comparison view on known rows (paired on request ids and shared seeds, labels,
respects) and `tooleval compare` (paired changes with intervals; refusal, exit 7, naming the ids)."""

from __future__ import annotations

from statistics import NormalDist

from pathlib import Path

import pytest

from flows.cli import main
from flows.exit_codes import EXIT_NOT_COMPARABLE
from schemas.selection.rows import (
    OfferedTool,
    SelectionArmRecord,
    SelectionRow,
    SelectionRunRecord,
    WeightRecord,
)
from tasks.selection.run_compare import compare_runs, NotComparable
from tests.factories.rows import insert, memory_warehouse, records, run_record, selection_row

ARM = dict(arm="prod", rung=1, catalogue="base", prompt="default", taskset_version="v1", taskset_hash="t1",
           n_tools=4, catalogue_hash="cat1", prompt_hash="prompt1", model_id="gpt-4.1-mini-2025-04-14",
           selector="openai")


def add_run(con, run_id: str, seeds: list[int], right: dict[str, list[int]], *, labels: dict[str, str] | None = None,
            served: str | None = None, weights: dict[str, float] | None = None, **arm) -> None:
    """A run of arm 'prod': request -> the seeds under which it is right; labels: request -> expected tool."""
    labels = labels or {}
    rows = [selection_row(request, labels.get(request, request.split("-")[0]), seed in ok, run_id=run_id, arm="prod",
                          seed=seed, served_model_id=served)
            for request, ok in right.items() for seed in seeds]
    insert(con, "landed_rows", SelectionRow, rows)
    insert(con, "runs", SelectionRunRecord, [run_record(len(rows), run_id=run_id, weights_window="w" if weights else None)])
    insert(con, "arms", SelectionArmRecord, [{**ARM, "run_id": run_id, "seeds": seeds, **arm}])
    if weights:
        insert(con, "production_weights", WeightRecord,
               [dict(taskset="known", window_id="w", tool=t, weight=v) for t, v in weights.items()])
        insert(con, "offered_tools", OfferedTool, [dict(tool_set_id="ts1", tool=t) for t in weights])


def test_the_view_pairs_requests_on_the_seeds_both_runs_ran(con):
    # run a: seeds 1, 2, 3; run b: seeds 2, 3, 4 -> paired on seeds 2 and 3 only
    add_run(con, "a", [1, 2, 3], {"refund-1": [1, 2, 3], "refund-2": [1], "track-1": [2, 3]})
    add_run(con, "b", [2, 3, 4], {"refund-1": [4], "refund-2": [2, 3], "track-1": [2, 3]})
    rows = {r["request_id"]: r for r in records(con, "select * from run_comparison where run_a = 'a' and run_b = 'b'")}
    assert set(rows) == {"refund-1", "refund-2", "track-1"}
    one = rows["refund-1"]
    assert (one["paired_on"], list(one["shared_seeds"])) == ("request and seed", [2, 3])
    assert (one["trials_a"], one["correct_a"], one["trials_b"], one["correct_b"]) == (2, 2, 2, 0)
    assert one["worse"] and not one["better"]
    assert rows["refund-2"]["better"] and (rows["refund-2"]["correct_a"], rows["refund-2"]["correct_b"]) == (0, 2)
    assert not rows["track-1"]["worse"] and not rows["track-1"]["better"]
    assert all(list(r["differs_in"]) == [] and r["label_stable"] for r in rows.values())
    # the other order is there too, mirrored
    back = one_row(con, "select * from run_comparison where run_a = 'b' and run_b = 'a' and request_id = 'refund-1'")
    assert back["better"] and (back["correct_a"], back["correct_b"]) == (0, 2)


def one_row(con, sql: str) -> dict:
    (row,) = records(con, sql)
    return row


def test_the_view_falls_back_to_requests_when_no_seed_is_shared_and_names_every_difference(con):
    add_run(con, "a", [1, 2], {"refund-1": [1, 2], "track-1": []}, served="gpt-4.1-mini-2025-04-14")
    add_run(con, "b", [5, 6, 7], {"refund-1": [5], "track-1": [5, 6, 7]}, labels={"track-1": "none"},
            served="gpt-4.1-mini-2025-06-30", model_id="gpt-4.1-mini-2025-06-30", prompt_hash="prompt2")
    rows = {r["request_id"]: r for r in records(con, "select * from run_comparison where run_a = 'a' and run_b = 'b'")}
    refund = rows["refund-1"]
    assert refund["paired_on"] == "request" and list(refund["shared_seeds"]) == []
    assert (refund["trials_a"], refund["correct_a"], refund["trials_b"], refund["correct_b"]) == (2, 2, 3, 1)
    assert list(refund["differs_in"]) == ["prompt", "model", "served_model"]
    assert (refund["model_a"], refund["model_b"]) == ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini-2025-06-30")
    assert not rows["track-1"]["label_stable"] and rows["track-1"]["expected_b"] == "none"


def test_compare_refuses_a_month_apart_when_the_pinned_model_differs_naming_both_ids(con):
    add_run(con, "a", [1, 2, 3], {"refund-1": [1, 2, 3]})
    add_run(con, "b", [1, 2, 3], {"refund-1": [1, 2, 3]}, model_id="gpt-4.1-mini-2025-06-30")
    with pytest.raises(NotComparable) as refused:
        compare_runs(con, "wh", "a", "b")
    text = str(refused.value)
    assert "model: gpt-4.1-mini-2025-04-14 -> gpt-4.1-mini-2025-06-30" in text and "--differ-in" in text
    (result,) = compare_runs(con, "wh", "a", "b", differ_in=["model"])  # declared: compared
    assert result.differs_in == ["model"]
    with pytest.raises(NotComparable, match="catalogue"):  # declaring another respect does not cover it
        compare_runs(con, "wh", "a", "b", differ_in=["catalogue"])


def test_compare_pairs_slices_and_tools_with_intervals_and_weights(con):
    right_a = {f"refund-{i}": [1, 2, 3] for i in range(10)} | {f"track-{i}": [1, 2, 3] for i in range(10)}
    right_b = {f"refund-{i}": ([] if i < 6 else [1, 2, 3]) for i in range(10)} | {f"track-{i}": [1, 2, 3] for i in range(10)}
    add_run(con, "a", [1, 2, 3], right_a, weights={"refund": 0.75, "track": 0.25})
    add_run(con, "b", [1, 2, 3], right_b, weights={"refund": 0.75, "track": 0.25})
    (result,) = compare_runs(con, "wh", "a", "b")
    assert result.paired_on == "request and seed" and result.shared_seeds == [1, 2, 3] and result.n_requests == 20
    existing = result.slices["existing"]
    assert (existing.accuracy_from, existing.accuracy_to, existing.worse, existing.better) == (1.0, 0.7, 6, 0)
    assert existing.change.estimate == pytest.approx(-0.3) and existing.change.high < 0
    refund = result.tools[("existing", "refund")]
    # the score test at 0 the interval inverts: 6 of 10 requests worse, none better, seeds agreeing:
    # z = (6 - 0.25) / sqrt(6) (a quarter-request continuity correction)
    z = (6 - 0.25) / 6 ** 0.5
    assert refund.change.estimate == pytest.approx(-0.6)
    assert refund.p_value == pytest.approx(2 * (1 - NormalDist().cdf(z))) and refund.change.high < 0
    assert result.tools[("existing", "track")].change.estimate == 0
    assert result.weighted.weighted.estimate == pytest.approx(0.75 * -0.6)
    contribution = {c.tool: c.weighted_contribution for c in result.weighted.contributions}
    assert contribution == pytest.approx({"refund": -0.45, "track": 0.0})


def test_every_arm_pair_read_at_once_gives_what_each_pair_read_alone_gives(con):
    """Arms of the same name in both runs are read from the view in one query (tasks/selection/run_compare.py):
    the figures of each pair are those of the pair compared on its own (``--arm``)."""
    add_run(con, "a", [1, 2, 3], {f"refund-{i}": [1, 2, 3] for i in range(8)} | {"track-1": [1]})
    add_run(con, "b", [1, 2, 3], {f"refund-{i}": ([] if i < 5 else [1, 2, 3]) for i in range(8)} | {"track-1": [2, 3]})
    for run in ("a", "b"):  # a second arm, 'canary': the same rows, right everywhere in run b
        con.execute("INSERT INTO landed_rows SELECT * REPLACE ('canary' AS arm) FROM landed_rows WHERE run_id = ?",
                    [run])
        con.execute("INSERT INTO arms SELECT * REPLACE ('canary' AS arm, 2 AS rung) FROM arms WHERE run_id = ?", [run])
    con.execute("UPDATE landed_rows SET correct = true WHERE run_id = 'b' AND arm = 'canary'")
    together = compare_runs(con, "wh", "a", "b")
    assert [(r.arm_a, r.arm_b) for r in together] == [("prod", "prod"), ("canary", "canary")]
    for result in together:
        (alone,) = compare_runs(con, "wh", "a", "b", arm_a=result.arm_a)
        assert result == alone
    prod, canary = (r.slices["existing"] for r in together)
    assert (prod.worse, prod.better) == (5, 1) and (canary.worse, canary.better) == (0, 1)


def _warehouse_with_two_runs(root: Path, **arm_b) -> Path:
    root.mkdir()
    con = memory_warehouse(root / "tooleval.duckdb")
    add_run(con, "a", [1, 2, 3], {f"refund-{i}": [1, 2, 3] for i in range(6)})
    add_run(con, "b", [1, 2, 3], {f"refund-{i}": ([] if i < 3 else [1, 2, 3]) for i in range(6)}, **arm_b)
    con.close()
    return root


def test_the_command_prints_the_changes_and_exits_7_when_not_comparable(tmp_path, capsys):
    same = _warehouse_with_two_runs(tmp_path / "same")
    assert main(["compare", "a", "b", "--warehouse", str(same)]) == 0
    out = capsys.readouterr().out
    assert "prod (run a) -> prod (run b)" in out and "paired on 6 requests by request ids and seeds 1, 2, 3" in out
    assert "100.0%" in out and "50.0%" in out and "-50.0" in out
    other = _warehouse_with_two_runs(tmp_path / "other", model_id="gpt-4.1-mini-2025-06-30", catalogue_hash="cat2")
    assert main(["compare", "a", "b", "--warehouse", str(other), "--differ-in", "model"]) == EXIT_NOT_COMPARABLE
    err = capsys.readouterr().err
    assert "catalogue: base (sha256 cat2" not in err and "catalogue: base (sha256 cat1) -> base (sha256 cat2)" in err
    assert "model" not in err.split("differ in")[1].split("\n")[0]  # declared: not listed
    assert main(["compare", "a", "zzz", "--warehouse", str(same)]) == 2
    assert "run zzz" in capsys.readouterr().err
