"""The failure drill, fast subset (the full drill: ``python benchmarks/failure_drill.py``).

- Every bad input of tests/drill/bad_inputs.py (79, every command, among them inputs that once failed badly:
  `tooleval sql` escapes, arm names that cannot be a folder, tool parameters that are no JSON Schema, unknown
  matchers, empty tasks files, one-label training sets, ``--warehouse ''``, a run id of the other instrument):
  its exit code, a message naming the file, the line or id and the rule, no traceback, the warehouse (or the
  path the case watches) untouched. In-process, so it is fast; the benchmark runs each as a real ``tooleval``
  process.
- Slow tier: kill -9 at two points of a real run (a selector call in flight; the registration's
  uncommitted transaction) and a rerun that loses and duplicates nothing and repeats no more calls than
  were in flight; a hosted selector killed from outside at its 30th call (answers are cached one by one); a read-write connection held by another process while a run registers; two runs into one
  warehouse at once; ``tooleval report`` while another process writes.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

import flows.prefect_server as prefect_server
from flows.cli import main
from tests.drill.bad_inputs import BAD_INPUTS, check, root_can_mount, snapshot, unmount_under
from tests.drill.harness import (
    cli_env,
    concurrent_runs,
    drill_experiment,
    hosted_kill_and_resume,
    kill_and_resume,
    report_while_written,
    run_while_held,
    tooleval,
)
from tests.factories.prefect_api import migrated_home

CLOSED_API = "http://127.0.0.1:9/api"
"""No run case may reach Prefect: an API that refuses connections makes any that does end with exit 6."""


def test_the_drill_has_at_least_40_bad_inputs_with_distinct_names():
    assert len(BAD_INPUTS) >= 40 and len({case.name for case in BAD_INPUTS}) == len(BAD_INPUTS)


@pytest.mark.parametrize("case", BAD_INPUTS, ids=[case.name for case in BAD_INPUTS])
def test_bad_input_is_named_and_leaves_the_warehouse_untouched(case, tmp_path, monkeypatch):
    if case.needs_root_mount and not root_can_mount():
        pytest.skip("needs root and a tmpfs mount for a read-only warehouse (the benchmark runs it where it can)")
    monkeypatch.setenv("PREFECT_API_URL", CLOSED_API)
    try:
        built = case.build(tmp_path)
        for key, value in built.env.items():
            monkeypatch.setenv(key, value)
        if built.env.get("PREFECT_API_URL") == "":  # a case that needs the temporary server's checks
            monkeypatch.setattr(prefect_server, "configured_api_url", lambda: None)
        before = snapshot(built.warehouse)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(built.args)
            except SystemExit as stopped:  # argparse refusing an argument
                code = stopped.code
        checked = check(case, built, before, code, out.getvalue() + err.getvalue())
    finally:
        unmount_under(tmp_path)
    assert checked.held, f"{checked.problems}\n{checked.output}"


# --------------------------------------------------------------------------------------------------
# slow tier: real processes
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def drill(tmp_path_factory):
    work = tmp_path_factory.mktemp("drill")
    return work, drill_experiment(work / "shop"), migrated_home(work / "prefect-home")


@pytest.mark.slow
@pytest.mark.parametrize("point", ["unit-selected:1", "registration-uncommitted"])
def test_a_run_killed_at_a_point_resumes_with_nothing_lost_or_duplicated(drill, point):
    work, experiment, prefect_home = drill
    outcome = kill_and_resume(point, experiment, work, prefect_home)
    assert outcome.killed_exit == -9 and outcome.rerun_exit in (0, 1)
    assert outcome.rows_lost == 0 and outcome.duplicated_duckdb == 0 and outcome.duplicated_parquet == 0
    assert outcome.leftover_parquet_runs == 0 and outcome.unreported_runs == 0 and outcome.orphaned_processes == 0
    assert outcome.calls_repeated <= outcome.calls_in_flight
    assert not outcome.traceback_shown and outcome.resumed, outcome.problems
    if point == "registration-uncommitted":  # the killed run had saved its records: the rerun registered it
        assert outcome.registered_runs == 2 and any("also registered" in line for line in outcome.rerun_said)
    else:  # killed mid-selection: its rows were unregistrable and removed; the rerun selected the rest
        assert outcome.registered_runs == 1 and outcome.calls_in_killed_run >= 1


@pytest.mark.slow
def test_a_hosted_run_killed_between_calls_repeats_only_the_calls_in_flight(drill):
    work, experiment, prefect_home = drill
    outcome = hosted_kill_and_resume(experiment, work, prefect_home, kill_at_call=30)
    assert outcome.killed_after_calls >= 30 and outcome.calls_cached_at_kill >= 20  # answers cached as they came
    assert outcome.calls_repeated <= outcome.calls_in_flight <= 8  # 4 units x concurrency 2 at most
    assert outcome.rows_lost == 0 and outcome.duplicated == 0 and not outcome.problems, outcome.problems


@pytest.mark.slow
def test_readers_and_a_second_run_never_cost_a_run_its_rows(drill):
    work, experiment, prefect_home = drill
    warehouse = work / "wh-shared"
    # the warehouse's first run, on the session's shared Prefect server: what follows is what the test checks
    first = tooleval(["run", str(experiment.path), "--warehouse", str(warehouse)], cli_env(prefect_home), work, "first")
    assert first.returncode in (0, 1), first.stderr
    outcomes = [run_while_held(experiment, warehouse, work, prefect_home, read_only=False),
                concurrent_runs(experiment, warehouse, work, prefect_home, n=2),
                report_while_written(warehouse, work, prefect_home)]
    for outcome in outcomes:
        assert not outcome.problems, (outcome.case, outcome.problems)
    assert outcomes[0].registered_runs == 2 and outcomes[1].registered_runs == 4
