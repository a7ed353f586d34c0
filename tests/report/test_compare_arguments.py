"""`tooleval compare` on argument accuracy: per tool, the paired change on the requests scored on both sides,
over the seeds the two runs share, with the interval tasks/stats gives the hand-counted requests; a change whose
interval covers 0 is printed as one (within noise); a run without scored arguments prints no argument table."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.cli import main
from schemas.selection.rows import SelectionArmRecord, SelectionRow, SelectionRunRecord
from tasks.selection.run_compare import compare_runs
from tasks.stats.paired import paired_comparison
from tests.factories.rows import insert, memory_warehouse, run_record, selection_row
from tests.report.test_run_comparison import ARM


def add_run(con, run_id: str, seeds: list[int], right: dict[str, set[int]], scored: set[str] | None = None) -> None:
    """Arm 'prod' of a run: every request labelled refund, the tool right under every seed; its arguments
    right under the seeds given (scored only for the requests in ``scored``, default all)."""
    rows = []
    for request, ok in right.items():
        for seed in seeds:
            on = scored is None or request in scored
            rows.append(selection_row(request, "refund", True, run_id=run_id, arm="prod", seed=seed,
                                      arguments_correct=(seed in ok) if on else None,
                                      argument_outcomes=[{"parameter": "order_id", "outcome": "right" if seed in ok
                                                          else "wrong_value"}] if on else None))
    insert(con, "landed_rows", SelectionRow, rows)
    insert(con, "runs", SelectionRunRecord, [run_record(len(rows), run_id=run_id)])
    insert(con, "arms", SelectionArmRecord, [{**ARM, "run_id": run_id, "seeds": seeds}])


# run a ran seeds 1-3, run b seeds 2-4: paired on seeds 2 and 3 only (seed 1 and 4 are another tool order)
RIGHT_A = {f"q{i}": {1, 2, 3} for i in range(10)} | {"q10": {2}, "q11": {1, 3}}
RIGHT_B = ({f"q{i}": ({2, 3, 4} if i >= 5 else ({3} if i % 2 else set())) for i in range(10)}
           | {"q10": {2, 3}, "q11": {4}})


def on_shared(right: dict[str, set[int]]) -> list[int]:
    return [len(ok & {2, 3}) for ok in right.values()]


def test_compare_pairs_argument_accuracy_per_tool_on_the_shared_seeds(con):
    add_run(con, "a", [1, 2, 3], RIGHT_A)
    add_run(con, "b", [2, 3, 4], RIGHT_B)
    (result,) = compare_runs(con, "wh", "a", "b")
    assert result.shared_seeds == [2, 3] and result.arguments_one_side == 0
    change = result.arguments[("existing", "refund")]
    expected = paired_comparison(on_shared(RIGHT_A), [2] * 12, on_shared(RIGHT_B), [2] * 12)
    assert change == expected
    # by hand: a right on 20 + 1 + 1 = 22 of 24 shared-seed rows, b on 10 + 1 + 1 + 2 + 0 = 14; worse: q0-q4
    # and q11, better: q10
    assert (change.correct_from, change.correct_to, change.rows_from) == (22, 14, 24)
    assert (change.worse, change.better) == (6, 1)
    # -33.3 points on 12 requests whose seeds disagree: the interval reaches over 0, and the test agrees
    assert change.change.low < -0.3 < 0 < change.change.high and change.p_value > 0.05 and not change.significant


def test_a_change_within_noise_is_printed_with_an_interval_over_zero(tmp_path: Path, capsys):
    root = tmp_path / "wh"
    root.mkdir()
    con = memory_warehouse(root / "tooleval.duckdb")
    swapped = {f"q{i}": {1, 2, 3} for i in range(10)} | {"q10": {1}, "q11": {1, 2, 3}}
    base = {f"q{i}": {1, 2, 3} for i in range(10)} | {"q10": {1, 2, 3}, "q11": {1}}
    add_run(con, "a", [1, 2, 3], base)
    add_run(con, "b", [1, 2, 3], swapped)
    (result,) = compare_runs(con, "wh", "a", "b")
    change = result.arguments[("existing", "refund")]
    assert change.change.estimate == 0 and change.change.low < 0 < change.change.high
    con.close()
    assert main(["compare", "a", "b", "--warehouse", str(root)]) == 0
    out = capsys.readouterr().out
    assert "Argument accuracy per tool, slice existing" in out
    table = out.split("Argument accuracy per tool, slice existing")[1]
    line = next(x for x in table.splitlines() if x.startswith("refund"))
    low, high = (float(x) for x in line.split("0.0", 1)[1].split()[:3:2])
    assert "94.4%  94.4%" in line and " 1/1 " in line and low < 0 < high
    assert max(len(x) for x in table.splitlines()[:4]) <= 80


def test_without_scored_arguments_compare_prints_no_argument_table(con, tmp_path: Path, capsys):
    add_run(con, "a", [1, 2, 3], RIGHT_A, scored=set())
    add_run(con, "b", [1, 2, 3], RIGHT_B, scored={"q1"})
    (result,) = compare_runs(con, "wh", "a", "b")
    assert result.arguments == {} and result.arguments_one_side == 1
    from tasks.selection.run_compare import comparison_headline, comparison_tables
    assert "argument accuracy not compared: 1 requests scored on one side only, none on both" in \
        comparison_headline(result)
    assert not [t for t in comparison_tables(result) if t.key.startswith("arguments:")]


@pytest.fixture
def con():
    connection = memory_warehouse()
    yield connection
    connection.close()
