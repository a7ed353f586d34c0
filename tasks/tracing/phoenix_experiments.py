"""A registered selection run as Phoenix experiments, for comparing its arms in Phoenix's own UI:

- each task-set version the run used becomes a Phoenix **dataset** ``<taskset>/<version>``: one example
  per request (the messages in; the label and its fallback out; request id, intent and label status as
  metadata; the slice as its split). Its content hash is in the dataset's description: a dataset of that
  name with other content is refused, never mixed;
- each arm becomes an **experiment** ``<run_id> <arm>`` over it, one repetition per seed: a run per row
  (the tool chosen, the outcome, the confidence, who decided; the row's trace id when the run was traced),
  with the label check as a CODE evaluation ``label_check``, the judge's majority as an LLM evaluation
  ``judge`` and, on requests with expected arguments, the argument check as a CODE evaluation
  ``argument_check`` (``argument_check.py``).

Published from the warehouse after the run (``tooleval phoenix RUN_ID``), never during it; Phoenix's own
client (``datasets.create_dataset``, ``experiments.create``, ``log_run``, ``log_evaluation``). Publishing
again adds what is missing and nothing twice: an example's runs already in the experiment (by example and
repetition) are skipped, evaluations are upserts. Nothing here reaches the warehouse's files for writing.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from tasks.files.input_errors import InputError
from tasks.taskset.load_taskset import TaskSetVersion, load_version
from tasks.tracing.argument_check import NAME as ARGUMENT_CHECK, argument_check
from tasks.tracing.annotations import phoenix_client
from tasks.tracing.trace_ids import TraceIds
from tasks.tracing.trace_target import parse_trace_target
from warehouse.location import Warehouse
from warehouse.query import records

DEFAULT_PHOENIX = "http://127.0.0.1:6006"
POSTERS = 8
"""Runs and evaluations posted at once (Phoenix takes one run per request)."""
ROW_COLUMNS = ("arm", "seed", "request_id", "taskset_version", "expected", "chosen", "correct", "outcome",
               "confidence", "decided_by", "router_pick", "router_confidence", "judge_verdict", "judge_votes",
               "latency_ms", "cache_hit", "served_model_id", "detail", "label", "arguments",
               "arguments_correct", "argument_outcomes")


@dataclass(frozen=True)
class PublishedArm:
    arm: str
    experiment_id: str
    url: str
    logged: int
    """Runs posted now."""
    already: int
    """Runs the experiment held from an earlier publication (skipped)."""


@dataclass(frozen=True)
class PhoenixPublication:
    run_id: str
    base_url: str
    datasets: dict[str, tuple[str, bool]]
    """Dataset name -> (its Phoenix id, whether it was created now)."""
    arms: list[PublishedArm]


@dataclass(frozen=True)
class RunForPhoenix:
    """What a registered run gives Phoenix: the run record, its arms and its rows (plain dicts)."""

    run: dict[str, Any]
    arms: list[dict[str, Any]]
    rows: list[dict[str, Any]]


def read_run_for_phoenix(warehouse: Warehouse, run_id: str | None) -> RunForPhoenix:
    """The run (default: the latest), its arms and rows, read through a read-only connection held briefly."""
    from tasks.report.publish import latest_runs, open_read_only, require_warehouse

    require_warehouse(warehouse.db_path)
    con = open_read_only(warehouse.db_path)
    try:
        run_id = run_id or next(iter(latest_runs(con, "selection")), None)
        if run_id is None:
            raise InputError.one(str(warehouse.db_path), "", "run-registered", "no run is registered yet")
        found = records(con, "SELECT * FROM runs WHERE run_id = ?", [run_id])
        if not found:
            tasks = con.execute("SELECT count(*) FROM task_runs WHERE run_id = ?", [run_id]).fetchall()[0][0]
            why = ("a run of tasks done on a tool surface: only selection runs become Phoenix experiments "
                   "(its traces are in Phoenix when it ran with --trace)" if tasks else "no such run in this warehouse")
            raise InputError.one(str(warehouse.db_path), f"run {run_id}", "run-registered", why)
        run = found[0]
        arms = records(con, "SELECT * FROM arms WHERE run_id = ? ORDER BY rung", [run_id])
        rows = records(con, f"SELECT {', '.join(ROW_COLUMNS)} FROM selection_rows WHERE run_id = ? "
                            "ORDER BY arm, seed, request_id", [run_id])
    finally:
        con.close()
    return RunForPhoenix(run=run, arms=arms, rows=rows)


def run_versions(found: RunForPhoenix, experiment_path: Path | None) -> dict[str, TaskSetVersion]:
    """The task-set versions of the run's arms, loaded from the task set its experiment file names (the
    path recorded on the run, unless ``experiment_path``), each checked against the content hash the run
    recorded: a version whose files changed since is refused."""
    from tasks.experiment.resolve_experiment import load_experiment_file

    path = Path(experiment_path or found.run["experiment_path"])
    if not path.is_file():
        raise InputError.one(str(path), "", "file-exists",
                             "the run's experiment file is not here (give --experiment FILE: the task set's "
                             "requests are read from the folder it names)")
    taskset_dir = (path.parent / load_experiment_file(path).taskset).resolve()  # as resolve_experiment finds it
    versions: dict[str, TaskSetVersion] = {}
    for arm in found.arms:
        name = arm["taskset_version"]
        if name in versions:
            continue
        version = load_version(taskset_dir, name)
        if version.actual_hash != arm["taskset_hash"]:
            raise InputError.one(str(version.requests_path), "", "version-unchanged",
                                 f"version {name} changed since run {found.run['run_id']} (content sha256 "
                                 f"{version.actual_hash[:12]}, the run recorded {arm['taskset_hash'][:12]})")
        versions[name] = version
    return versions


def dataset_name(version: TaskSetVersion) -> str:
    return f"{version.taskset}/{version.version}"


def dataset_description(version: TaskSetVersion) -> str:
    return (f"tooleval task set {version.taskset}, version {version.version} "
            f"(content sha256 {version.actual_hash}): one example per labelled request, its slice as split")


def dataset_examples(version: TaskSetVersion) -> list[dict[str, Any]]:
    """One example per request, in the version's order."""
    examples = []
    for request in version.requests:
        given: dict[str, Any] = {"messages": [{"role": m.role, "content": m.content} for m in request.messages]}
        if request.tools:
            given["tools"] = [tool.name for tool in request.tools]
        examples.append({
            "input": given,
            "output": {"expected": request.expected, **({"fallback": request.fallback} if request.fallback else {})},
            "metadata": {"request_id": request.id, "intent": request.intent, "label_status": request.label_status},
            "splits": request.slice,
        })
    return examples


def run_output(row: Mapping[str, Any]) -> dict[str, Any]:
    """An experiment run's output: what the row chose and how it scored (no nulls)."""
    values = {name: row[name] for name in ("chosen", "outcome", "correct", "confidence", "decided_by",
                                           "router_pick", "router_confidence", "cache_hit", "served_model_id")}
    if row["outcome"] in ("error", "invalid", "empty") and row.get("detail"):
        values["detail"] = row["detail"]
    return {name: value for name, value in values.items() if value is not None}


def publish_run(warehouse: Warehouse, run_id: str | None = None, base_url: str | None = None,
                experiment_path: Path | None = None) -> PhoenixPublication:
    """Publish a registered selection run to the Phoenix at ``base_url`` (default: where the run's traces
    went, else ``DEFAULT_PHOENIX``; see the module's doc)."""
    import httpx

    found = read_run_for_phoenix(warehouse, run_id)
    run_id = found.run["run_id"]
    if base_url is None:
        base_url = found.run.get("trace_endpoint") or DEFAULT_PHOENIX
    base_url = parse_trace_target(base_url, where="--phoenix").base_url  # no credentials, no path
    versions = run_versions(found, experiment_path)
    client = phoenix_client(base_url)
    try:
        client.projects.list()  # Phoenix answers, before anything is created
    except httpx.HTTPError as error:
        raise InputError.one("--phoenix", "", "phoenix-answers",
                             f"no Phoenix answers at {base_url} ({type(error).__name__}); start it "
                             "(`make phoenix-serve`) or give --phoenix URL") from None
    datasets = {name: ensure_dataset(client, version) for name, version in versions.items()}
    traced = found.run.get("trace_project") is not None
    arms = []
    for arm in found.arms:
        dataset = datasets[arm["taskset_version"]]
        rows = [row for row in found.rows if row["arm"] == arm["arm"]]
        arms.append(publish_arm(client, found.run, arm, dataset, rows, traced,
                                expecting_arguments(versions[arm["taskset_version"]])))
    return PhoenixPublication(run_id=run_id, base_url=base_url, arms=arms,
                              datasets={dataset_name(versions[v]): (d["id"], d["created"]) for v, d in datasets.items()})


def ensure_dataset(client, version: TaskSetVersion) -> dict[str, Any]:
    """The version's dataset (created when Phoenix has none of that name): {"id", "examples": request id ->
    example id, "version_id", "created"}. A dataset of that name with other content is refused."""
    import httpx

    name = dataset_name(version)
    created = False
    try:
        dataset = client.datasets.get_dataset(dataset=name)
    except (ValueError, httpx.HTTPStatusError):  # no dataset of that name yet
        dataset = client.datasets.create_dataset(name=name, examples=dataset_examples(version),
                                                 dataset_description=dataset_description(version))
        created = True
    if version.actual_hash not in (dataset.description or ""):
        raise InputError.one("--phoenix", f"dataset {name}", "phoenix-dataset",
                             f"Phoenix already has a dataset '{name}' that is not this version (its description "
                             f"does not carry content sha256 {version.actual_hash[:12]}); rename or delete it")
    examples = {example["metadata"]["request_id"]: example["id"] for example in dataset.examples}
    missing = [request.id for request in version.requests if request.id not in examples]
    if missing:
        raise InputError.one("--phoenix", f"dataset {name}", "phoenix-dataset",
                             f"the dataset lacks {len(missing)} of the version's requests (e.g. {missing[0]})")
    return {"id": dataset.id, "version_id": dataset.version_id, "examples": examples, "created": created}


def experiment_name(run_id: str, arm: str) -> str:
    return f"{run_id} {arm}"


def expecting_arguments(version: TaskSetVersion) -> dict[str, str]:
    """Request id -> its label, for the version's requests with expected arguments."""
    return {r.id: r.expected for r in version.requests if r.expected_arguments is not None}


def publish_arm(client, run: Mapping[str, Any], arm: Mapping[str, Any], dataset: Mapping[str, Any],
                rows: Sequence[Mapping[str, Any]], traced: bool,
                expecting: Mapping[str, str] | None = None) -> PublishedArm:
    """One arm as an experiment over the dataset: a run per row not yet there, with its evaluations.
    ``expecting``: request id -> label of the requests with expected arguments (a row answered under a
    fallback label has none)."""
    expecting = expecting or {}
    seeds = sorted(arm["seeds"])
    name = experiment_name(run["run_id"], arm["arm"])
    existing = next((e for e in client.experiments.list(dataset_id=dataset["id"]) if e["name"] == name), None)
    if existing is None:
        existing = client.experiments.create(
            dataset_id=dataset["id"], dataset_version_id=dataset["version_id"], experiment_name=name,
            experiment_description=f"tooleval run {run['run_id']}, arm {arm['arm']} ({arm['selector']} "
                                   f"{arm['model_id']}, catalogue {arm['catalogue']}, prompt {arm['prompt']})",
            experiment_metadata={"run_id": run["run_id"], "experiment": run["experiment"], "arm": arm["arm"],
                                 "rung": arm["rung"], "selector": arm["selector"], "model_id": arm["model_id"],
                                 "catalogue": arm["catalogue"], "prompt": arm["prompt"], "seeds": seeds,
                                 "taskset_version": arm["taskset_version"]},
            repetitions=len(seeds))
    done = {(r["dataset_example_id"], r["repetition_number"])
            for r in client.experiments.get_experiment(experiment_id=existing["id"])["task_runs"]}
    started = run["started_at"]
    if started.tzinfo is None:
        started = started.replace(tzinfo=timezone.utc)
    todo = []
    for row in rows:
        key = (dataset["examples"][row["request_id"]], seeds.index(row["seed"]) + 1)
        if key not in done:
            todo.append((key, row))

    def post(item) -> None:
        (example_id, repetition), row = item
        ended = started + timedelta(milliseconds=max(row["latency_ms"] or 0.0, 0.0))
        trace_id = TraceIds.of(run["run_id"], row["arm"], row["seed"], row["request_id"]).trace_hex if traced else None
        logged = client.experiments.log_run(
            experiment_id=existing["id"], dataset_example_id=example_id, output=run_output(row),
            start_time=started, end_time=ended, repetition_number=repetition, trace_id=trace_id,
            error=None)
        chosen = row["chosen"] if row["chosen"] is not None else "(no usable answer)"
        client.experiments.log_evaluation(
            experiment_run_id=logged["id"], name="label_check", annotator_kind="CODE",
            score=1.0 if row["correct"] else 0.0, label=row["outcome"],
            explanation=f"expected {row['expected']}, chose {chosen}",
            metadata={"expected": row["expected"], "chosen": row["chosen"], "seed": row["seed"]})
        if row.get("judge_verdict") is not None:
            votes = list(row.get("judge_votes") or [])
            client.experiments.log_evaluation(
                experiment_run_id=logged["id"], name="judge", annotator_kind="LLM", label=row["judge_verdict"],
                score=(sum(v == "right" for v in votes) / len(votes)) if votes else None,
                explanation=f"majority {row['judge_verdict']} of votes {', '.join(votes)}",
                metadata={"votes": votes})
        if expecting.get(row["request_id"]) == (row.get("label") or row["expected"]):
            check = argument_check(row)
            client.experiments.log_evaluation(
                experiment_run_id=logged["id"], name=ARGUMENT_CHECK, annotator_kind="CODE", label=check["label"],
                score=check.get("score"), explanation=check["explanation"], metadata=check["metadata"])

    with ThreadPoolExecutor(POSTERS) as pool:
        list(pool.map(post, todo))
    url = client.experiments.get_experiment_url(dataset_id=dataset["id"], experiment_id=existing["id"])
    return PublishedArm(arm=arm["arm"], experiment_id=existing["id"], url=url, logged=len(todo),
                        already=len(rows) - len(todo))


def publication_lines(published: PhoenixPublication) -> list[str]:
    """What ``tooleval phoenix`` prints."""
    lines = [f"run {published.run_id} in Phoenix at {published.base_url}:"]
    for name, (dataset_id, created) in published.datasets.items():
        lines.append(f"  dataset {name} ({'created' if created else 'already there'}, id {dataset_id})")
    for arm in published.arms:
        lines.append(f"  experiment {arm.arm}: {arm.logged:,} runs posted, {arm.already:,} already there")
        lines.append(f"    {arm.url}")
    return lines
