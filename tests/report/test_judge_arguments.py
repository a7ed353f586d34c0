"""The judge_argument_check view and the report's judge-beside-arguments table on known rows: every judged
turn counted once in its (verdict, argument check) cell, unjudged turns in none."""

from __future__ import annotations

from schemas.selection.rows import SelectionRow
from tasks.report.text_table import layout_lines
from tasks.selection.judge_arguments import judge_arguments_table
from tests.factories.rows import insert, records, selection_row


def row(i: int, seed: int, verdict: str | None, arguments_correct: bool | None, *, correct: bool = True,
        arm: str = "judged", rung: int = 2) -> dict:
    outcomes = None if arguments_correct is None else [
        {"parameter": "order_id", "outcome": "right" if arguments_correct else "wrong_value"}]
    return selection_row(f"r{i}", "refund", correct, seed=seed, arm=arm, rung=rung, selector="openai",
                         judge_verdict=verdict, judge_votes=None if verdict is None else [verdict] * 3,
                         arguments_correct=arguments_correct, argument_outcomes=outcomes)


KNOWN = [
    # (request, seed, judge, arguments): the cells the view must count
    (1, 1, "right", True), (1, 2, "right", True), (2, 1, "right", True),  # right x right: 3 rows, 2 requests
    (3, 1, "right", False), (3, 2, "right", False),                        # the choice held, the call did not
    (4, 1, "wrong", True),                                                 # the judge disagrees with the label
    (5, 1, "wrong", False),
    (6, 1, "unsure", None),                                                # no expected arguments
]


def test_the_view_crosses_the_judges_verdict_with_the_argument_check(con):
    rows = [row(i, seed, verdict, args) for i, seed, verdict, args in KNOWN]
    rows.append(row(7, 1, "wrong", None, correct=False))  # another tool: not scored, label wrong
    rows.append(row(8, 1, None, False))  # not judged: in no cell
    rows.append(row(1, 1, None, True, arm="plain", rung=1))  # an arm without a judge: no row at all
    insert(con, "landed_rows", SelectionRow, rows)
    found = {(r["arm"], r["judge_verdict"], r["argument_check"]): (r["rows"], r["n_requests"], r["label_correct"])
             for r in records(con, "select * from judge_argument_check")}
    assert found == {("judged", "right", "right"): (3, 2, 3), ("judged", "right", "wrong"): (2, 1, 2),
                     ("judged", "wrong", "right"): (1, 1, 1), ("judged", "wrong", "wrong"): (1, 1, 1),
                     ("judged", "wrong", "not_scored"): (1, 1, 0), ("judged", "unsure", "not_scored"): (1, 1, 1)}


def test_the_table_shows_each_verdict_beside_the_argument_check_with_shares(con):
    rows = [row(i, seed, verdict, args) for i, seed, verdict, args in KNOWN]
    rows += [row(i, 1, "right", None, arm="other", rung=3) for i in (1, 2)]  # judged, nothing scored
    insert(con, "landed_rows", SelectionRow, rows)
    table = judge_arguments_table(records(con, "select * from judge_argument_check"))
    assert table is not None and table.key == "judge_arguments"
    assert table.columns == ["rung", "judge", "args right", "args wrong", "not scored"]
    assert table.rows == [
        ["2. judged", "right", "3 (37.5%)", "2 (25.0%)", "0"],
        ["", "wrong", "1 (12.5%)", "1 (12.5%)", "0"],
        ["", "unsure", "0", "0", "1 (12.5%)"],
        ["3. other", "right", "0", "0", "2 (100.0%)"],
    ]
    assert table.sections == [0, 3]
    printed = layout_lines(table.title, table.columns, table.rows, [False, False, True, True, True], 80,
                           table.sections, table.note)
    assert max(len(line) for line, _ in printed) <= 80


def test_no_table_when_no_judged_turn_had_its_arguments_scored(con):
    insert(con, "landed_rows", SelectionRow, [row(1, 1, "right", None), row(2, 1, None, True)])
    assert judge_arguments_table(records(con, "select * from judge_argument_check")) is None
    assert judge_arguments_table([]) is None


def test_the_report_of_a_judged_run_carries_the_table_and_an_unjudged_one_does_not():
    from tasks.report.render import render_text
    from tasks.selection.tables import build_report
    from tests.factories.rows import RUN, KnownRun

    judged = KnownRun(arms=("judged",)).add([row(i, 1, verdict, args, rung=1)
                                             for i, seed, verdict, args in KNOWN if seed == 1]).finish()
    text = render_text(build_report(judged, RUN), width=80)
    assert "the judge's verdict on the choice beside the argument check" in text
    assert [t.key for t in build_report(judged, RUN).tables].count("judge_arguments") == 1
    plain = KnownRun(arms=("judged",)).add([row(i, 1, None, True, rung=1) for i in range(3)]).finish()
    assert "judge_arguments" not in [t.key for t in build_report(plain, RUN).tables]
