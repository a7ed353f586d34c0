"""The weekly flow end to end through Prefect, from the bundled production log: v2 with weights, a queue,
masked personal data and passing label checks; the production configuration on v1 and v2; the
calibration of v2 against v1; the weekly report."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from flows.run_outcome import stored_result
from flows.weekly import weekly
from tasks.taskset.load_taskset import load_version
from tests.factories import NOW
from tests.factories import SUPPORT
from tests.factories.traffic import copy_support_v1, shrink_sampling

pytestmark = pytest.mark.slow  # two weekly flow runs through Prefect: ~40 s after the session's harness


@pytest.fixture(scope="module")
def weekly_run(prefect_harness, tmp_path_factory):
    root = tmp_path_factory.mktemp("weekly")
    taskset = copy_support_v1(root / "support")
    shrink_sampling(taskset)
    warehouse = root / "warehouse"
    # the bundled weekly criteria (production_criteria.yaml): the offline stand-in router fails their floors
    production = taskset / "experiments" / "production.yaml"
    state = weekly(taskset_dir=str(taskset), experiment=str(production), warehouse_dir=str(warehouse), now=NOW,
                   return_state=True)
    summary = stored_result(state)
    WEEKLY_STATE["state"] = state
    return taskset, warehouse, summary


WEEKLY_STATE: dict = {}


def test_weekly_writes_v2_with_weights_queue_and_checks(weekly_run):
    taskset, _, summary = weekly_run
    assert (summary.version, summary.parent, summary.window, summary.versions) == ("v2", "v1", "2026-W44-W47", ["v1", "v2"])
    v2 = load_version(taskset, "v2")
    assert v2.manifest.parent == "v1" and v2.manifest.window == "2026-W44-W47" and v2.manifest.sampling_seed is not None
    assert (taskset / "weights" / "2026-W44-W47.json").is_file() and (taskset / "queue" / "v2.queue.jsonl").is_file()
    assert "[ORDER_ID]" in (taskset / "v2.jsonl").read_text() and "NW-" not in (taskset / "v2.jsonl").read_text().upper()
    for name in ("v1.jsonl", "v1.manifest.json", "v1.adjudications.jsonl"):
        assert (taskset / name).read_bytes() == (SUPPORT / name).read_bytes()


def test_weekly_measures_every_version_in_use_under_the_new_window(weekly_run):
    taskset, warehouse, summary = weekly_run
    n_v2 = len(load_version(taskset, "v2").requests)
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        by_arm = dict(con.execute("select arm, count(*) from selection_rows where run_id = ? group by arm",
                                  [summary.run_id]).fetchall())
        assert by_arm == {"production.v1": 3 * 540, "production.v2": 3 * n_v2}
        assert con.execute("select weights_window from runs where run_id = ?", [summary.run_id]).fetchall() == [
            ("2026-W44-W47",)]
        assert con.execute("select changed from comparisons where run_id = ?", [summary.run_id]).fetchall() == [
            (["version"],)]
        assert con.execute("select count(*) from production_weights where window_id = '2026-W44-W47'").fetchall()[0][0] == 30
    finally:
        con.close()


def test_weekly_reports_calibration_drift_and_provisional_labels(weekly_run):
    _, _, summary = weekly_run
    assert {"existing", "new_tools", "weighted"} <= set(summary.calibration)
    assert set(summary.drift) == {"v1", "v2"} and all(0 < d < 1 for d in summary.drift.values())
    assert Path(summary.reports["weekly"]).parent.name == summary.run_id  # one folder per run: never overwritten
    weekly_md = open(summary.reports["weekly"]).read()
    for text in ("Calibration of v2 against v1", "expectations passed on", "Personal data masked",
                 "Production mix vs eval set v2", "Production mix vs window 2026-W36-W47", "Age of the labels",
                 "PROVISIONAL LABELS: v2", "Per-tool accuracy on v1 and v2"):
        assert text in weekly_md, text
    assert "Calibration v2 vs v1" in open(summary.reports["calibration"]).read()
    assert "PROVISIONAL LABELS: v2" in open(summary.reports["markdown"]).read()


def test_without_provisional_labels_only_adjudicated_versions_are_measured(weekly_run):
    taskset, warehouse, first = weekly_run
    summary = stored_result(weekly(taskset_dir=str(taskset), experiment=str(taskset / "experiments" / "production.yaml"),
                                   warehouse_dir=str(warehouse), now=NOW, allow_provisional=False, return_state=True))
    assert summary.version == "v2" and summary.reused and summary.versions == ["v1"]
    assert any("not calibrated" in w for w in summary.warnings) and summary.calibration == {}
    assert not (taskset / "v3.jsonl").exists()


def test_a_failed_gate_ends_the_weekly_flow_run_failed_and_its_reports_are_artifacts(weekly_run):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    _, _, summary = weekly_run
    flow_run_id = WEEKLY_STATE["state"].state_details.flow_run_id
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(flow_run_id)
        artifacts = {a.key: a for a in client.read_artifacts(  # key None: Prefect's own result record
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))}
    assert flow_run.state.type.value == "FAILED"
    assert flow_run.state.message.startswith("weekly 2026-W44-W47 v2: FAIL — 2 of 3 gates failed: weighted-floor, existing-floor")
    assert flow_run.state.message.endswith("(exit 1)")
    assert set(artifacts) - {None} == {"weekly-support-report", "weekly-support-calibration", "weekly-support-run-report",
                              "weekly-support-run-gates"}
    assert "Calibration of v2 against v1" in artifacts["weekly-support-report"].data
    assert artifacts["weekly-support-run-report"].data.startswith("## tooleval: ✘ FAIL")
    assert summary.run_id in artifacts["weekly-support-run-gates"].description
