"""deployments/prefect.yaml declares the weekly (cron) and the manual pre-change deployment, on a process
work pool, with entrypoints and parameters that match the flows."""

from __future__ import annotations

import inspect

import yaml
from prefect.flows import load_flow_from_entrypoint

from tests.factories import ROOT

PREFECT_YAML = ROOT / "deployments" / "prefect.yaml"


def deployments() -> dict[str, dict]:
    return {d["name"]: d for d in yaml.safe_load(PREFECT_YAML.read_text())["deployments"]}


def test_weekly_and_pre_change_deployments_are_declared():
    found = deployments()
    assert set(found) == {"weekly-support", "pre-change"}
    weekly = found["weekly-support"]
    (schedule,) = weekly["schedules"]
    assert schedule["cron"] == "0 6 * * 1" and schedule["timezone"] == "UTC" and schedule["active"]
    assert "schedules" not in found["pre-change"]
    assert {d["work_pool"]["name"] for d in found.values()} == {"tooleval-process"}


def test_entrypoints_load_and_parameters_match_the_flow_signatures():
    for name, deployment in deployments().items():
        flow = load_flow_from_entrypoint(str(ROOT / deployment["entrypoint"]))
        accepted = set(inspect.signature(flow.fn).parameters)
        assert set(deployment["parameters"]) <= accepted, name
        for path_parameter in ("taskset_dir", "experiment", "experiment_path"):
            if path_parameter in deployment["parameters"]:
                assert (ROOT / deployment["parameters"][path_parameter]).exists(), (name, path_parameter)
    assert load_flow_from_entrypoint(str(ROOT / "flows/weekly.py:weekly")).name == "weekly"
    assert load_flow_from_entrypoint(str(ROOT / "flows/pre_change.py:pre_change")).name == "pre-change"
