"""BFCL v4 multiple answered by a hosted arm (openai SDK, loopback server) with one parameter mutated per record,
landed and reported: the report's kinds of argument error count each call in the category an independent
reading of BFCL's checker gives it, and the per-parameter errors name the mutated parameter of each tool."""

from __future__ import annotations

from collections import Counter

import pytest

from tasks.selection.argument_tables import OUTCOME_TEXT
from tasks.selection.tables import build_report
from tests.factories.rows import RUN, KnownRun, selection_row
from tests.importers.test_bfcl_arguments import (
    BFCL_TO_OURS, QUESTIONS, bfcl_verdict, first_answer, mutations, planned_requests, raw_records)
from tests.selectors.providers.test_hosted_argument_outcomes import bfcl_replayed

pytestmark = pytest.mark.skipif(not QUESTIONS.is_file(), reason="public bench data not found")


def test_the_report_counts_each_mutated_call_in_its_bfcl_category(serve, tmp_path):
    planned = planned_requests(tmp_path)
    raw = raw_records()
    mutated, category, parameter = {}, {}, {}
    for n, (request_id, (function, answer)) in enumerate(raw.items()):
        call = first_answer(answer, function["parameters"]["properties"])
        what, mutated[request_id] = (found := mutations(function, answer, call))[n % len(found)]
        category[request_id] = BFCL_TO_OURS[bfcl_verdict(function, answer, mutated[request_id])]
        parameter[request_id] = "invented_flag" if what == "invented parameter" else what.split(":")[0]
    scored = bfcl_replayed(serve, planned, mutated)
    run = KnownRun(arms=("mutated",))
    run.add([selection_row(p.request_id, p.expected, arm="mutated", slice_="multiple", expected_position=None,
                           **{k: row[k] for k in ("chosen", "outcome", "correct", "pair", "invalid", "error",
                                                  "empty", "detail", "arguments_correct", "argument_outcomes")})
             for p, row in zip(planned, scored)])
    report = build_report(run.finish(), RUN)
    tables = {t.key: t for t in report.tables}
    wrong = Counter(c for c in category.values() if c != "right")
    kinds = {row[2]: (int(row[3]), int(row[5])) for row in tables["argument-errors"].rows}
    assert kinds == {OUTCOME_TEXT[c]: (k, k) for c, k in wrong.items()}  # one call per request, one kind each
    [accuracy] = tables["arguments"].rows
    assert accuracy[2:5] == ["200", "200", f"{100 * (200 - sum(wrong.values())) / 200:.1f}%"]
    shown = {(row[0], row[2]) for row in tables["parameter-errors-multiple"].rows}
    made = {(f"{p.expected}: {parameter[p.request_id]}", OUTCOME_TEXT[category[p.request_id]])
            for p in planned if category[p.request_id] != "right"}
    assert len(shown) == 10 and shown <= made
