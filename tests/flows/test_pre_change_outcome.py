"""The pre-change flow through Prefect: a failed gate ends the flow run Failed with the verdict line as its
message, logs the line, stores the result, and leaves the markdown report and the per-gate table as
artifacts; a run without criteria ends Completed. Read back from the API, as an automation or CI would."""

from __future__ import annotations

import logging
import shutil

import pytest

from flows.exit_codes import EXIT_GATE_FAILED, EXIT_OK
from flows.pre_change import pre_change
from flows.run_outcome import RunFailed, RunResult, artifact_key, experiment_key, final_state
from tests.factories import SUPPORT
from tests.factories.taskset import write_support_experiment

LADDER = SUPPORT / "experiments" / "ladder.yaml"


def read_back(flow_run_id):
    """The flow run (its final state) and its artifacts, from the API."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(flow_run_id)
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    return flow_run, {a.key: a for a in artifacts}


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[tuple[str, str]] = []

    def emit(self, record):
        self.lines.append((record.levelname, record.getMessage()))


def bm25_ladder(root) -> str:
    """The demo ladder on a copy of the support set with BM25 in place of the decision model: it fails gates."""
    shutil.copytree(SUPPORT, root / "support")
    ladder = root / "support" / "experiments" / LADDER.name
    text = ladder.read_text()
    trained = "  selector: trained\n  model: tooleval-hybrid\n  options: {model_file: ../models/hybrid.json}\n"
    assert trained in text
    ladder.write_text(text.replace(trained, "  selector: lexical\n  model: bm25-okapi\n"))
    return str(ladder)


@pytest.fixture(scope="module")
def failed_gate(prefect_harness, tmp_path_factory):
    warehouse = tmp_path_factory.mktemp("warehouse")
    experiment = bm25_ladder(tmp_path_factory.mktemp("bm25"))
    logger, lines = logging.getLogger("prefect.flow_runs"), Lines()
    logger.addHandler(lines)  # what the flow run logs (a worker prints it and sends it to the API)
    try:
        state = pre_change(experiment_path=experiment, warehouse_dir=str(warehouse), return_state=True)
    finally:
        logger.removeHandler(lines)
    return state, read_back(state.state_details.flow_run_id), lines.lines


FAILED = ["busy-tools-hold", "weighted-no-drop", "weighted-floor", "slice-floors"]
"""The gates the ladder fails with BM25 as its selector."""


def test_a_failed_gate_ends_the_flow_run_failed_with_the_verdict_line(failed_gate):
    state, (flow_run, _), _ = failed_gate
    assert state.is_failed() and flow_run.state.type.value == "FAILED" and flow_run.state.name == "Failed"
    message = flow_run.state.message
    assert message == f"FAIL — 4 of 7 gates failed: {', '.join(FAILED)} (exit {EXIT_GATE_FAILED})"


def test_the_result_is_stored_and_says_what_ci_needs(failed_gate):
    state, (flow_run, _), _ = failed_gate
    stored = flow_run.state.result(raise_on_failure=False)  # read from the result storage, not from memory
    assert isinstance(stored, RunFailed) and str(stored) == flow_run.state.message  # Prefect's kind of data
    result = stored.result
    assert isinstance(result, RunResult)
    assert (result.exit_code, result.status, result.n_rows) == (EXIT_GATE_FAILED, "FAIL", 6480)
    assert result.failed_gates == FAILED
    assert result.reports["markdown"].endswith("report.md")


def test_the_verdict_line_is_logged_as_a_warning_and_nothing_as_an_error(failed_gate):
    _, _, logs = failed_gate
    assert any(level == "WARNING" and "FAIL — 4 of 7 gates failed: busy-tools-hold" in line and "(exit 1)" in line
               for level, line in logs), logs
    assert [line for level, line in logs if level in ("ERROR", "CRITICAL")] == []


def test_the_report_and_the_gates_are_artifacts(failed_gate):
    state, (_, artifacts), _ = failed_gate
    key = f"pre-change-{experiment_key(str(LADDER))}"
    assert key == "pre-change-support-ladder"
    report, gates = artifacts[artifact_key(key, "report")], artifacts[artifact_key(key, "gates")]
    assert report.type == "markdown" and report.data.startswith("## tooleval: ✘ FAIL — run `")
    assert "busy-tools-hold" in report.data and "FAIL — 4 of 7 gates failed" in report.description
    assert gates.type == "table"
    import json

    rows = json.loads(gates.data) if isinstance(gates.data, str) else gates.data
    assert [(r["gate"], r["status"]) for r in rows] == [
        ("busy-tools-hold", "FAIL"), ("no-dominant-confusion", "PASS"), ("weighted-no-drop", "FAIL"),
        ("weighted-floor", "FAIL"), ("slice-floors", "FAIL"), ("router-confidence-separates", "PASS"),
        ("clean-replies", "PASS")]
    assert "closest: none -> update_payment_method" in rows[1]["evidence"]  # the closest call of a passing gate


def test_a_run_without_criteria_ends_completed(prefect_harness, support_copy, tmp_path):
    experiment = write_support_experiment(support_copy, "no-criteria", [{"name": "giftcards-30", "catalogue": "giftcards"}])
    state = pre_change(experiment_path=str(experiment), warehouse_dir=str(tmp_path / "wh"), return_state=True)
    flow_run, artifacts = read_back(state.state_details.flow_run_id)
    assert flow_run.state.type.value == "COMPLETED"
    assert flow_run.state.message.startswith("NO CRITERIA")
    result = state.result()
    assert result.exit_code == EXIT_OK and result.n_rows == 3 * 540
    assert artifact_key("pre-change", experiment_key(str(experiment)), "report") in artifacts


def test_a_failed_state_resolves_into_its_exception_not_a_type_error(prefect_harness):
    """Prefect resolves a Failed state's data into an exception (a worker does so after the run ends): a
    RunResult as the data made it log `TypeError: Unexpected result for failed state`; the RunResult now
    travels inside RunFailed, and calling the flow raises that, with the verdict line."""
    from prefect import flow

    result = RunResult(run_id="r1", exit_code=EXIT_GATE_FAILED, verdict_line="FAIL — 1 of 1 gates failed",
                       status="FAIL", failed_gates=["g"])

    @flow(persist_result=True)
    def ends_failed():
        return final_state(result, result.verdict_line, result.exit_code)

    with pytest.raises(RunFailed) as raised:
        ends_failed()
    assert str(raised.value) == "FAIL — 1 of 1 gates failed (exit 1)" and raised.value.result == result
    state = ends_failed(return_state=True)
    assert state.is_failed() and state.result(raise_on_failure=False).result == result


def test_a_failed_run_leaves_no_error_record_or_traceback_in_the_engine_s_log(prefect_harness):
    """A worker runs a flow through ``prefect.flow_engine.run_flow`` with the run's logger as its error logger,
    and that logs any Exception the finished run's result raises, with its traceback: a Failed pre-change
    run's log ended in ~40 lines of `flows.run_outcome.RunFailed`. The verdict is the state's message only."""

    from prefect import flow
    from prefect.flow_engine import run_flow

    result = RunResult(run_id="r2", exit_code=EXIT_GATE_FAILED, verdict_line="FAIL — 1 of 1 gates failed",
                       status="FAIL", failed_gates=["g"])

    @flow(persist_result=True)
    def ends_failed():
        return final_state(result, result.verdict_line, result.exit_code)

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    engine_log = logging.getLogger("tooleval.test.engine-errors")
    engine_log.addHandler(Keep())
    try:
        with pytest.raises(RunFailed) as raised:  # as the worker's engine calls it
            run_flow(ends_failed, error_logger=engine_log)
    finally:
        engine_log.handlers.clear()
    assert raised.value.result == result
    assert [r for r in records if r.levelno >= logging.ERROR or r.exc_info] == []
