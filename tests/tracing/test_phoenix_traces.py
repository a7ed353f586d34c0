"""A small traced run read back from a real Phoenix server (``phoenix serve`` started here, on free ports, its
working dir in a temporary folder): every warehouse row has its trace, every decision its DECISION span,
every chat call its LLM span, every label check, judge verdict and argument check its annotation on the
span it judges; one for one. The run mixes an offline router, a gated hosted arm and a judged hosted arm (the hosted ones
through the official SDK against the loopback provider server, with a distinctive fake key that must
appear in no span and no annotation)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import duckdb
import httpx
import pytest
import yaml

from tasks.tracing.trace_ids import DECISION, LLM, ROOT, TraceIds
from tests.factories.catalogues import support_tools
from tests.provider_server import ProviderServer, Reply, Seen, oracle, text_reply
from tests.selectors.providers.example_arguments import example_arguments
from tests.selectors.providers.test_provider_flow import trimmed_support
from tests.tracing.phoenix_server import PhoenixServer

pytestmark = pytest.mark.slow

FAKE_KEY = "sk-tooleval-FAKE-TRACE-5e0b3c7d9a1f4e26-DO-NOT-LEAK"
PROJECT = "tooleval-traced-test"
VOTES = ["right", "wrong", "right"]  # the judge's three votes of every turn (by vote index)
THRESHOLD = 0.5
EXPECTED_ARGUMENTS = {  # per label: what the oracle sends (example_arguments) passes, but for track_shipment
    "lookup_order": {"order_id": "NW-1234567"},
    "track_shipment": {"order_id": "NW-7654321"},
    "refund_order": {"order_id": "NW-1234567", "reason": {"one_of": ["damaged", "faulty"]}},
}
READ_TIMEOUT_S = 240.0


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    with PhoenixServer(tmp_path_factory.mktemp("phoenix")) as server:
        yield server


def _script(expected: dict[str, str]):
    arguments = {t.name: example_arguments(t.parameters) for t in support_tools()}
    answer = oracle(expected, arguments)

    def script(seen: Seen) -> Reply:
        if seen.system.startswith("You grade"):
            return text_reply(VOTES[(seen.seed or 0) % 3])
        return answer(seen)

    return script


def with_expected_arguments(support_copy: Path) -> set[str]:
    """The copy's v1 (trimmed) with EXPECTED_ARGUMENTS on the requests of those labels, frozen again; their ids."""
    from tasks.taskset.load_taskset import freeze_version

    path = support_copy / "v1.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for line in lines:
        if line["expected"] in EXPECTED_ARGUMENTS:
            line["expected_arguments"] = EXPECTED_ARGUMENTS[line["expected"]]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (support_copy / "v1.manifest.json").unlink()
    freeze_version(support_copy, "v1", ["existing", "new_tools"])
    return {line["id"] for line in lines if "expected_arguments" in line}


@pytest.fixture
def traced_run(prefect_harness, phoenix, support_copy: Path, warehouse_dir: Path, monkeypatch):
    from flows.evaluate import evaluate

    expected = trimmed_support(support_copy)
    expecting = with_expected_arguments(support_copy)
    with ProviderServer(_script(expected), api_key=FAKE_KEY) as server:
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        gpt = {"selector": "openai", "model": "gpt-4.1-mini-2025-04-14"}
        experiment = {
            "name": "traced-mix", "taskset": "..", "version": "v1", "seeds": [1, 2, 3], "batch_size": 5,
            "defaults": {"catalogue": "giftcards", "prompt": "default"},
            "arms": [
                {"name": "lexical-30", "selector": "lexical", "model": "bm25-okapi"},
                {"name": "gpt-gated", **gpt, "options": {"route": "gated", "router": "lexical",
                                                         "threshold": THRESHOLD}},
                {"name": "gpt-judged", **gpt, "options": {"judge": {"model": "gpt-4.1-2025-04-14", "votes": 3}}},
            ],
            "comparisons": [{"from": "lexical-30", "to": "gpt-gated", "declare": ["model"]},
                            {"from": "gpt-gated", "to": "gpt-judged"}],
            "tracing": {"endpoint": "otlp://127.0.0.1:9", "project": PROJECT},  # the flag below overrides it
        }
        path = support_copy / "experiments" / "traced.yaml"
        path.write_text(yaml.safe_dump(experiment, sort_keys=False))
        summary = evaluate(experiment_path=str(path), warehouse_dir=str(warehouse_dir), trace=phoenix.otlp)
    con = duckdb.connect(str(warehouse_dir / "tooleval.duckdb"), read_only=True)
    cursor = con.execute("select * from selection_rows where run_id = ? order by arm, seed, request_id",
                         [summary.run_id])
    columns = [d[0] for d in cursor.description]
    rows = [dict(zip(columns, values)) for values in cursor.fetchall()]
    orders = {}
    for arm, seed, tool, _ in con.execute("select arm, seed, tool, position from seed_orders where run_id = ? "
                                          "order by arm, seed, position", [summary.run_id]).fetchall():
        orders.setdefault((arm, seed), []).append(tool)
    con.close()
    return summary, rows, orders, expecting


def _read_back(phoenix: PhoenixServer, n_spans: int, n_annotations: int, project: str = PROJECT):
    """Phoenix stores what it receives a little later: poll until every span and annotation is there."""
    client = phoenix.client()
    deadline = time.monotonic() + READ_TIMEOUT_S
    while True:
        try:
            spans = client.spans.get_spans(project_identifier=project, limit=100_000)
        except httpx.HTTPStatusError as error:  # 404 until the project's first span is stored
            if error.response.status_code != 404 or time.monotonic() > deadline:
                raise
            spans = []
        annotations = client.spans.get_span_annotations(spans=spans, project_identifier=project) if spans else []
        if (len(spans) >= n_spans and len(annotations) >= n_annotations) or time.monotonic() > deadline:
            return client, spans, annotations
        time.sleep(2.0)


def _roles(row) -> tuple[str, ...]:
    if row["selector"] == "lexical":
        return (DECISION,)  # the offline selector is the decision model: its trace is that one span
    return (ROOT, DECISION, LLM) if row["router"] else (ROOT, LLM)


def test_every_row_reads_back_from_phoenix_as_its_trace_with_its_annotations(traced_run, phoenix):
    summary, rows, orders, expecting = traced_run
    assert summary.trace_warnings == [] and summary.trace.startswith(phoenix.otlp)
    n = len(rows)
    assert n == summary.n_rows == 3 * 3 * 12
    judged = [r for r in rows if r["judge_verdict"] is not None]
    routed_by_chat = [r for r in rows if r["router"] and r["decided_by"] == "chat" and r["router_pick"] is not None]
    assert len(judged) == 36 and routed_by_chat, "the run should judge one arm and fall back on some gated rows"
    n_spans = sum(len(_roles(r)) for r in rows)
    checked = [r for r in rows if r["request_id"] in expecting and LLM in _roles(r)]  # argument checks
    assert {r["arguments_correct"] for r in checked} == {True, False}, "some arguments right, some wrong"
    n_annotations = n + len(judged) + len(routed_by_chat) + len(checked)
    client, spans, annotations = _read_back(phoenix, n_spans, n_annotations)
    assert len(spans) == n_spans and len(annotations) == n_annotations

    by_id = {s["context"]["span_id"]: s for s in spans}
    assert len(by_id) == n_spans
    notes = {}
    for note in annotations:
        key = (note["span_id"], note["name"])
        assert key not in notes
        notes[key] = note
    for row in rows:
        ids = TraceIds.of(row["run_id"], row["arm"], row["seed"], row["request_id"])
        top = _roles(row)[0]
        root = by_id[ids.span_hex(top)]
        attrs = root["attributes"]
        assert root["context"]["trace_id"] == ids.trace_hex and root["parent_id"] is None
        assert root["span_kind"] == ("CHAIN" if top == ROOT else "DECISION")
        assert (attrs["metadata.run_id"], attrs["metadata.arm"], attrs["metadata.seed"], attrs["metadata.request_id"],
                attrs["metadata.slice"], attrs["metadata.label"], attrs["metadata.outcome"]) == (
            row["run_id"], row["arm"], row["seed"], row["request_id"], row["slice"], row["expected"], row["outcome"])
        options = orders[(row["arm"], row["seed"])] + ["none"]
        if DECISION in _roles(row):
            decision = by_id[ids.span_hex(DECISION)]
            d = decision["attributes"]
            offline = row["selector"] == "lexical"
            assert decision["span_kind"] == "DECISION" and decision["context"]["trace_id"] == ids.trace_hex
            assert decision["parent_id"] == (None if offline else ids.span_hex(ROOT))
            assert json.loads(d["input.value"])["options"] == options and d["metadata.request_id"] == row["request_id"]
            confidence = row["confidence"] if offline else row["router_confidence"]
            probabilities = dict(row["probabilities"] if offline else row["router_probabilities"])
            assert d["tooleval.decision.confidence"] == pytest.approx(confidence)
            assert d["tooleval.decision.pick"] == (row["chosen"] if offline else row["router_pick"])
            shown = json.loads(d["tooleval.decision.probabilities"])  # every option, in the seed's order
            assert list(shown) == options and shown == pytest.approx({o: probabilities.get(o, 0.0) for o in options})
            assert d["decision.model_name"] == "bm25-okapi"
            if not offline:
                assert d["tooleval.decision.threshold"] == THRESHOLD
                assert d["tooleval.decision.fallback"] == bool(row["fallback"])
                assert row["fallback"] == (row["router_confidence"] < THRESHOLD)
        if LLM in _roles(row):
            llm = by_id[ids.span_hex(LLM)]
            a = llm["attributes"]
            assert llm["span_kind"] == "LLM" and llm["parent_id"] == ids.span_hex(ROOT)
            assert [a[f"llm.tools.{i}.tool.json_schema"] and json.loads(a[f"llm.tools.{i}.tool.json_schema"])
                    ["function"]["name"] for i in range(len(options) - 1)] == options[:-1]  # the seed's order
            assert a["llm.model_name"] == row["served_model_id"] and a["llm.request.model_name"] == row["model_id"]
            assert a["llm.token_count.prompt"] == row["input_tokens"]
            assert a["llm.token_count.completion"] == row["output_tokens"]
            assert a["llm.input_messages.1.message.content"] == attrs["input.value"]
            if row["chosen"] not in (None, "none"):
                assert a["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] == row["chosen"]
            assert (llm["end_time"] > llm["start_time"]) == (row["latency_ms"] > 0)
        scored = DECISION if (LLM not in _roles(row) or row["decided_by"] == "router") else LLM
        check = notes[(ids.span_hex(scored), "label_check")]
        assert check["annotator_kind"] == "CODE" and check["result"]["label"] == row["outcome"]
        assert check["result"]["score"] == (1.0 if row["correct"] else 0.0)
        if row["judge_verdict"] is not None:
            judge = notes[(ids.span_hex(LLM), "judge")]
            assert judge["annotator_kind"] == "LLM" and judge["result"]["label"] == row["judge_verdict"] == "right"
            assert judge["metadata"]["votes"] == list(row["judge_votes"]) == VOTES
        assert ((ids.span_hex(LLM), "argument_check") in notes) == (row in checked)
        if row in checked:
            arguments = notes[(ids.span_hex(LLM), "argument_check")]
            label = {True: "right", False: "wrong", None: "not_scored"}[row["arguments_correct"]]
            assert arguments["annotator_kind"] == "CODE" and arguments["result"]["label"] == label
            assert arguments["metadata"]["outcomes"] == {o["parameter"]: o["outcome"]
                                                         for o in row["argument_outcomes"] or []}

    # the low-confidence decisions, found the way docs/routing/phoenix.md says (Phoenix's span filter)
    from phoenix.client.types.spans import SpanQuery

    low = client.spans.get_spans_dataframe(
        query=SpanQuery().where(f"span_kind == 'DECISION' and tooleval.decision.confidence < {THRESHOLD}"),
        project_identifier=PROJECT, limit=100_000)
    expect_low = sum(1 for r in rows if (r["confidence"] if r["selector"] == "lexical" else r["router_confidence"]
                                         or 1.0) < THRESHOLD and DECISION in _roles(r))
    assert len(low) == expect_low > 0
    wrong = client.spans.get_spans_dataframe(
        query=SpanQuery().where("annotations['label_check'].label == 'wrong_tool'"),
        project_identifier=PROJECT, limit=100_000)
    assert len(wrong) == sum(r["outcome"] == "wrong_tool" for r in rows) > 0

    # no key anywhere in what Phoenix holds
    held = json.dumps([spans, annotations], default=str)
    assert FAKE_KEY not in held and "sk-tooleval" not in held


SURFACE_PROJECT = "tooleval-traced-tasks"


def test_every_task_run_reads_back_as_its_trace_with_a_tool_span_per_call(prefect_harness, phoenix, tmp_path):
    """Tasks done on a tool surface (the offline baseline agent on a tiny help desk): one trace per task run,
    an AGENT root and a TOOL span per call as the warehouse's task_calls rows have them, the task check as a
    CODE annotation on the root."""
    from flows.evaluate import evaluate
    from tasks.surface.surface_trace import call_role
    from tests.surface.tiny_desk import write_desk

    folder = write_desk(tmp_path)
    experiment = folder / "experiments" / "four.yaml"
    experiment.write_text(experiment.read_text() + f"tracing: {{endpoint: '{phoenix.otlp}', project: "
                                                   f"{SURFACE_PROJECT}}}\n")
    summary = evaluate(experiment_path=str(experiment), warehouse_dir=str(tmp_path / "wh"))
    assert summary.trace_warnings == []
    con = duckdb.connect(str(tmp_path / "wh" / "tooleval.duckdb"), read_only=True)
    runs = con.execute("select run_id, arm, seed, task_id, success, stop_reason, n_calls from task_runs "
                       "where run_id = ?", [summary.run_id]).fetchall()
    calls = con.execute("select arm, seed, task_id, call_index, name, arguments, valid, executed, error "
                        "from task_calls where run_id = ?", [summary.run_id]).fetchall()
    con.close()
    assert len(runs) == summary.n_rows > 0 and calls

    _, spans, annotations = _read_back(phoenix, len(runs) + len(calls), len(runs), SURFACE_PROJECT)
    by_id = {s["context"]["span_id"]: s for s in spans}
    assert len(by_id) == len(runs) + len(calls) and len(annotations) == len(runs)
    notes = {a["span_id"]: a for a in annotations}
    for run_id, arm, seed, task_id, success, stop_reason, n_calls in runs:
        ids = TraceIds.of(run_id, arm, seed, task_id)
        root = by_id[ids.span_hex(ROOT)]
        assert root["span_kind"] == "AGENT" and root["parent_id"] is None
        assert (root["attributes"]["metadata.task_id"], root["attributes"]["metadata.arm"],
                root["attributes"]["metadata.seed"], root["attributes"]["metadata.success"]) == (task_id, arm, seed,
                                                                                                 success)
        check = notes[ids.span_hex(ROOT)]
        assert check["name"] == "task_check" and check["annotator_kind"] == "CODE"
        assert check["result"]["label"] == ("success" if success else "failure")
    for arm, seed, task_id, call_index, name, arguments, valid, executed, error in calls:
        ids = TraceIds.of(summary.run_id, arm, seed, task_id)
        tool = by_id[ids.span_hex(call_role(call_index))]
        a = tool["attributes"]
        assert tool["span_kind"] == "TOOL" and tool["parent_id"] == ids.span_hex(ROOT)
        assert a["tool.name"] == name and a["input.value"] == (arguments or "")
        assert (a["tooleval.call.valid"], a["tooleval.call.executed"], a["tooleval.call.error"]) == (
            valid, executed, error)
        assert (tool["status_code"] == "ERROR") == (not valid or error)


MCP_PROJECT = "tooleval-traced-mcp-tasks"


def test_task_runs_on_mcp_servers_read_back_with_a_tool_span_per_call_naming_its_server(prefect_harness, phoenix,
                                                                                       tmp_path):
    """Tasks on a surface of the real MCP servers (memory and filesystem): every call a TOOL span under the
    task's AGENT root, with the server it went to."""
    from flows.evaluate import evaluate
    from tasks.surface.surface_trace import call_role
    from tests.surface.mcp_office import write_office

    folder = write_office(tmp_path)
    experiment = folder / "experiments" / "run.yaml"
    experiment.write_text(experiment.read_text() + f"tracing: {{endpoint: '{phoenix.otlp}', project: {MCP_PROJECT}}}\n")
    summary = evaluate(experiment_path=str(experiment), warehouse_dir=str(tmp_path / "wh"))
    assert summary.trace_warnings == []
    con = duckdb.connect(str(tmp_path / "wh" / "tooleval.duckdb"), read_only=True)
    n_runs = con.execute("select count(*) from task_runs where run_id = ?", [summary.run_id]).fetchone()[0]
    calls = con.execute("select arm, seed, task_id, call_index, name, server from task_calls where run_id = ?",
                        [summary.run_id]).fetchall()
    con.close()
    assert calls and {server for *_, server in calls} <= {"memory", "files"} and all(c[5] for c in calls)
    _, spans, _ = _read_back(phoenix, n_runs + len(calls), n_runs, MCP_PROJECT)
    by_id = {s["context"]["span_id"]: s for s in spans}
    for arm, seed, task_id, call_index, name, server in calls:
        ids = TraceIds.of(summary.run_id, arm, seed, task_id)
        tool = by_id[ids.span_hex(call_role(call_index))]
        assert tool["span_kind"] == "TOOL" and tool["attributes"]["tool.name"] == name
        assert tool["attributes"]["tooleval.call.server"] == server


HOSTED_PROJECT = "tooleval-traced-hosted-tasks"


def test_a_hosted_agents_task_runs_read_back_with_an_llm_span_per_turn_and_no_key(prefect_harness, phoenix, tmp_path,
                                                                                  monkeypatch):
    """A chat-model agent (the official OpenAI SDK against the loopback server) on the tiny help desk: under
    each task run's AGENT root, one LLM span per turn (the tools as offered in the seed's order, the turn's
    tool calls, the final reply on the last) beside the TOOL spans; the fake key is nowhere in Phoenix."""
    from flows.evaluate import evaluate
    from tasks.surface.surface_trace import call_role, turn_role
    from tests.provider_server import ProviderServer
    from tests.surface.tiny_desk import close_ticket_script, hosted_desk_experiment, write_desk

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with ProviderServer(close_ticket_script, api_key=FAKE_KEY) as server:
        tracing = f"tracing: {{endpoint: '{phoenix.otlp}', project: {HOSTED_PROJECT}}}\n"
        folder = write_desk(tmp_path, experiment=hosted_desk_experiment(server.openai_url, "a tracing test", tracing))
        summary = evaluate(experiment_path=str(folder / "experiments" / "four.yaml"),
                              warehouse_dir=str(tmp_path / "wh"))
    assert summary.trace_warnings == []
    con = duckdb.connect(str(tmp_path / "wh" / "tooleval.duckdb"), read_only=True)
    runs = con.execute("select run_id, arm, seed, task_id, n_turns, tool_order, final_reply, model_id, "
                       "served_model_id from task_runs where run_id = ?", [summary.run_id]).fetchall()
    calls = con.execute("select arm, seed, task_id, call_index, turn, name, arguments from task_calls "
                        "where run_id = ?", [summary.run_id]).fetchall()
    con.close()
    n_turns = sum(r[4] for r in runs)
    assert len(runs) == 2 * 2 * 4 and n_turns == 2 * len(runs) and len(calls) == len(runs)

    _, spans, _ = _read_back(phoenix, len(runs) + n_turns + len(calls), 0, HOSTED_PROJECT)
    by_id = {s["context"]["span_id"]: s for s in spans}
    assert len(by_id) == len(runs) + n_turns + len(calls)
    turn_calls = {(c[0], c[1], c[2], c[4]): c for c in calls}
    for run_id, arm, seed, task_id, turns, tool_order, final_reply, model_id, served in runs:
        ids = TraceIds.of(run_id, arm, seed, task_id)
        for turn in range(1, turns + 1):
            span = by_id[ids.span_hex(turn_role(turn))]
            a = span["attributes"]
            assert span["span_kind"] == "LLM" and span["parent_id"] == ids.span_hex(ROOT)
            assert span["context"]["trace_id"] == ids.trace_hex and a["tooleval.turn"] == turn
            assert [json.loads(a[f"llm.tools.{i}.tool.json_schema"])["function"]["name"]
                    for i in range(len(tool_order))] == list(tool_order)  # the seed's order
            assert a["llm.request.model_name"] == model_id and a["llm.model_name"] == served
            assert a["metadata.task_id"] == task_id and a["metadata.seed"] == seed
            call = turn_calls.get((arm, seed, task_id, turn))
            if call is not None:
                assert a["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] == call[5]
                assert by_id[ids.span_hex(call_role(call[3]))]["start_time"] >= span["end_time"]
            else:
                assert a["llm.output_messages.0.message.content"] == final_reply
            assert ("llm.input_messages.1.message.content" in a) == (turn == 1)
    held = json.dumps(spans, default=str)
    assert FAKE_KEY not in held and "sk-tooleval" not in held


def test_a_traced_run_becomes_phoenix_experiments_over_its_version_as_a_dataset(traced_run, phoenix, tmp_path):
    """``tooleval phoenix``: the version as a dataset (an example per request, the slice as split), each arm
    as an experiment (a run per row, a repetition per seed, linked to the row's trace) with the label check
    and the judge as evaluations; publishing again posts nothing twice."""
    from tasks.tracing.phoenix_experiments import experiment_name, publish_run
    from warehouse.location import warehouse_at

    summary, rows, _, expecting = traced_run
    warehouse = warehouse_at(Path(summary.warehouse))
    first = publish_run(warehouse, summary.run_id)  # the address comes from the run's trace_endpoint
    assert first.base_url == phoenix.base_url
    assert [(a.arm, a.logged, a.already) for a in first.arms] == [(arm, 36, 0) for arm in
                                                                  ("lexical-30", "gpt-gated", "gpt-judged")]
    [(name, (dataset_id, created))] = first.datasets.items()
    assert created and name.endswith("/v1")

    client = phoenix.client()
    dataset = client.datasets.get_dataset(dataset=dataset_id)
    examples = {e["metadata"]["request_id"]: e for e in dataset.examples}
    by_request = {}
    for row in rows:
        by_request.setdefault(row["request_id"], row)
    assert set(examples) == set(by_request) and len(examples) == 12
    for request_id, row in by_request.items():
        assert examples[request_id]["output"]["expected"] == row["expected"]
        assert examples[request_id]["input"]["messages"][-1]["role"] == "user"
    example_ids = {e["id"]: request_id for request_id, e in examples.items()}

    experiments = {e["name"]: e for e in client.experiments.list(dataset_id=dataset_id)}
    assert set(experiments) == {experiment_name(summary.run_id, a) for a in ("lexical-30", "gpt-gated", "gpt-judged")}
    for arm in ("lexical-30", "gpt-gated", "gpt-judged"):
        experiment = experiments[experiment_name(summary.run_id, arm)]
        assert experiment["repetitions"] == 3 and experiment["metadata"]["arm"] == arm
        ran = client.experiments.get_experiment(experiment_id=experiment["id"])
        arm_rows = {(r["request_id"], r["seed"]): r for r in rows if r["arm"] == arm}
        assert len(ran["task_runs"]) == len(arm_rows) == 36
        evaluations: dict[str, list] = {}
        for evaluation in ran["evaluation_runs"]:
            evaluations.setdefault(evaluation.experiment_run_id, []).append(evaluation)
        for task_run in ran["task_runs"]:
            row = arm_rows[(example_ids[task_run["dataset_example_id"]], [1, 2, 3][task_run["repetition_number"] - 1])]
            assert task_run["output"]["outcome"] == row["outcome"] and task_run["output"].get("chosen") == row["chosen"]
            assert task_run["trace_id"] == TraceIds.of(row["run_id"], arm, row["seed"], row["request_id"]).trace_hex
            notes = {e.name: e for e in evaluations[task_run["id"]]}
            assert notes["label_check"].annotator_kind == "CODE"
            assert notes["label_check"].result["label"] == row["outcome"]
            assert notes["label_check"].result["score"] == (1.0 if row["correct"] else 0.0)
            assert ("judge" in notes) == (row["judge_verdict"] is not None)
            if row["judge_verdict"] is not None:
                assert notes["judge"].annotator_kind == "LLM" and notes["judge"].result["label"] == "right"
            assert ("argument_check" in notes) == (row["request_id"] in expecting)
            if row["request_id"] in expecting:
                label = {True: "right", False: "wrong", None: "not_scored"}[row["arguments_correct"]]
                assert notes["argument_check"].annotator_kind == "CODE"
                assert notes["argument_check"].result["label"] == label

    again = publish_run(warehouse, summary.run_id, phoenix.base_url)
    assert [(a.logged, a.already) for a in again.arms] == [(0, 36)] * 3
    assert list(again.datasets.values()) == [(dataset_id, False)]
    assert all(len(client.experiments.get_experiment(experiment_id=e["id"])["task_runs"]) == 36
               for e in client.experiments.list(dataset_id=dataset_id))
