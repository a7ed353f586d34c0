"""tooleval as a Python API: one function per thing a user does; the CLI only parses arguments and prints.

    from flows.api import run_experiment, report, validate
    outcome = run_experiment("tasksets/support/experiments/ladder.yaml")       # tool selection
    outcome = run_experiment("tasksets/support_tasks/experiments/four_arms.yaml")  # tasks on a surface
    outcome.report.verdict.status, outcome.exit_code

``run_experiment`` runs an experiment of any instrument (tasks/instrument_registry.py): it prepares the run once
(resolve the arms, load and check the task-set versions, read the criteria) before Prefect is involved, so
bad input fails fast and nothing is written; once the cheap checks pass, a Prefect server starts in its own
process (unless ``PREFECT_API_URL`` names a running one, or a kept one answers) while the label checks run.
The evaluate flow is handed that prepared run (a flow parameter): nothing is loaded or checked twice.
``report``, ``validate`` and ``validate_tasks`` never import Prefect.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Sequence

from flows.exit_codes import run_exit_code, verdict_exit_code

if TYPE_CHECKING:  # each function imports what it needs when called: ``import flows.api`` stays light, and a
    # read-only call (report, sql_session, validate) never loads the run machinery; the flow module imports
    # Prefect: only runs pay for it
    from flows.evaluate import RunSummary
    from flows.prefect_server import LocalServer
    from tasks.importers.mcp_catalogue import McpImportSummary
    from tasks.report.sql_session import SqlSession
    from tasks.report_types import Report
    from tasks.run.deferred_registration import LateRegistration
    from tasks.selection.fit_router_cutoff import FittedCutoff
    from tasks.selection.run_compare import ArmPairComparison
    from tasks.selectors.decision_models.train_decision_model import TrainedModel
    from tasks.tracing.phoenix_experiments import PhoenixPublication
    from warehouse.location import Warehouse


@dataclass(frozen=True)
class RunOutcome:
    """A finished run: what the flow returned, its report, and the exit code the CLI ends with."""

    summary: "RunSummary"
    report: Report | None
    """None when the run could not register yet (``summary.registered`` is False)."""
    warehouse: Warehouse
    prefect_server: str | None = None
    """The kept Prefect server the run used, and how long it stays (None: a configured API or a temporary one)."""
    forecast_error: list[str] = field(default_factory=list)
    """What the run cost against its forecast, as printed (none when it forecast nothing)."""

    @property
    def exit_code(self) -> int:
        if self.summary.halts or not self.summary.registered:
            return run_exit_code(self.summary)
        return verdict_exit_code(self.report.verdict if self.report is not None else None)


@contextmanager
def prefect_api(server: LocalServer | None) -> Iterator[None]:
    """Point Prefect (and any worker process it starts) at the local server, once it answers; watch the
    API for the run (a lost API ends the process at once with exit 6, see ApiWatch); before the server is
    stopped, let Prefect's client send what it still queues (a quiet shutdown)."""
    from flows.prefect_server import ApiWatch, configured_api_url, drain_prefect_client

    if server is None:
        url = configured_api_url()
        with ApiWatch(url, None) if url else nullcontext():
            yield
        drain_prefect_client()
        return
    from prefect.settings import PREFECT_API_URL, temporary_settings

    url = server.wait_ready()
    previous = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = url  # Dask workers are other processes
    try:
        with temporary_settings({PREFECT_API_URL: url}), ApiWatch(url, server):
            try:
                yield
            finally:
                drain_prefect_client()
    finally:
        if previous is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = previous


def run_experiment(experiment_path: Path | str, *, warehouse: str | Path | None = None, use_cache: bool = True,
                   allow_provisional: bool = False, task_runner: str | None = None, max_calls: int | None = None,
                   max_spend_usd: float | None = None, trace: str | None = None, batch: bool = False,
                   batch_wait: str | None = None, say: Callable[[str], None] = lambda line: None) -> RunOutcome:
    """Check, run, land, register and report one experiment (either instrument). Raises InputError on bad
    input, before any model call and with nothing written. ``trace`` (otlp://HOST:PORT) exports the run's
    OpenInference traces (default: the experiment's ``tracing:`` block, else none). ``batch`` sends hosted arms'
    chat requests through the providers' batch APIs (default: the experiment's ``batch:``); ``batch_wait``
    'detach' stops the run before registering while a batch still runs (default: the experiment's
    ``batch_wait:``, else 'hold'). ``say`` is told the lines of what the run will cost, before its first call."""
    from flows import gc_pause
    from flows.prefect_server import check_api_answers, configured_api_url, run_server
    from flows.prefect_settings import apply_prefect_defaults, quiet_prefect_tracebacks
    from tasks.drill_points import reached
    from tasks.report.publish import read_report
    from tasks.run import prepare_run
    from tasks.run.preflight import check_before_run
    from tasks.tracing.trace_target import resolve_trace_target
    from warehouse.location import warehouse_at

    apply_prefect_defaults()
    # the cheap checks before any server starts (the experiment, its files' structure and hashes, the weights,
    # the criteria, the trace target, the warehouse and the disk): bad input is refused in about a second,
    # and no Prefect database is written for it
    prepared = prepare_run.prepare_run(experiment_path, checked=False)
    if batch and not prepared.instrument.sends_batches:
        from tasks.files.input_errors import InputError

        raise InputError.one(str(experiment_path), "", "batch", f"--batch: a {prepared.instrument.name} "
                             "experiment sends no requests through a provider batch API; leave the flag out")
    if not use_cache and (batch_wait or getattr(prepared.experiment.spec, "batch_wait", "hold")) == "detach":
        from tasks.files.input_errors import InputError

        raise InputError.one(str(experiment_path), "", "batch_wait", "detach needs the cache: a rerun finds its "
                             "batches by the experiment's name, which --no-cache replaces with the run id")
    resolve_trace_target(trace, prepared.experiment)
    check_before_run(prepared, warehouse_at(warehouse), starts_prefect_server=not configured_api_url(),
                     allow_provisional=allow_provisional)
    forecast = prepared.instrument.forecast(prepared, warehouse_at(warehouse).root, use_cache=use_cache)
    for line in forecast.lines():
        say(line)
    server = run_server()  # the kept server, or one of the run's own, starting while the label checks run
    try:
        # the label checks take seconds on a cold cache; bad input is named before a dead Prefect API
        checked = prepare_run.CheckedRun(prepared, forecast)  # the flow is handed the checked run
        if server is None and (url := configured_api_url()):
            check_api_answers(url)  # a dead PREFECT_API_URL is said now, not after a minute of Prefect's retries
        from flows.task_runners import evaluate_on  # Prefect: heavy, imported only to run

        evaluate = evaluate_on(task_runner)
        if server is not None:  # the server is still starting: import now what the flow imports after it answers
            from flows.prefect_server import import_before_api

            import_before_api(prepared)
        quiet_prefect_tracebacks()  # a failure is one message and a traceback file (flows/crash.py), not a log
        gc_pause.resume()  # the console script paused the collector for the imports (flows/gc_pause.py)
        with prefect_api(server):
            reached("server-started")
            summary = evaluate(experiment_path=str(experiment_path),
                               warehouse_dir=str(warehouse) if warehouse is not None else None,
                               use_cache=use_cache, max_calls=max_calls, max_spend_usd=max_spend_usd,
                               allow_provisional=allow_provisional, trace=trace, prepared=checked,
                               batch=batch, batch_wait=batch_wait)
    finally:
        if server is not None:
            server.stop()
    kept = server.summary() if server is not None and server.kept else None
    location = warehouse_at(summary.warehouse)
    if not summary.registered:
        return RunOutcome(summary=summary, report=None, warehouse=location, prefect_server=kept)
    published = summary.report or read_report(location, summary.run_id)
    if summary.verdict is not None:
        published.verdict = summary.verdict
    return RunOutcome(summary=summary, report=published, warehouse=location, prefect_server=kept,
                      forecast_error=forecast.error_lines(location.db_path, summary.run_id))


def register(run_id: str, warehouse: str | Path | None = None, wait_s: float | None = None) -> LateRegistration:
    """Register a run that landed its rows but could not register (the DuckDB file was held), then judge
    and publish it. No selection is made and Prefect is not involved."""
    from tasks.run.deferred_registration import register_saved_run
    from warehouse.location import warehouse_at

    return register_saved_run(warehouse_at(warehouse), run_id, wait_s)


def report(run_id: str | None = None, warehouse: str | Path | None = None, instrument: str | None = None,
           stored: bool = False) -> Report:
    """A registered run's report (default: the latest run, of ``instrument`` when given: 'selection',
    'surface'), with the verdict it was given when it ran. ``stored``: its tables only (no figures, no
    charts), from the copy kept when the run was reported if nothing they depend on changed
    (tasks/report/stored_report.py), without importing the figures' libraries or opening the warehouse."""
    from warehouse.location import warehouse_at

    location = warehouse_at(warehouse)
    if stored:
        from tasks.report.stored_report import stored_report

        if (kept := stored_report(location, run_id, instrument)) is not None:
            return kept
    from tasks.report.publish import read_report

    return read_report(location, run_id, instrument, keep=stored)


def validate(version_path: str | Path, catalogues: list[str] | None = None, weights: str | None = None,
             warehouse: str | Path | None = None) -> str:
    """The label checks on one task-set version file, or every check a run makes on an experiment file
    (``.yaml``; nothing is run) with its cost forecast from ``warehouse``'s past rows; a summary, or
    InputError."""
    from tasks.files.input_errors import InputError

    path = Path(version_path)
    if path.suffix in (".yaml", ".yml"):
        if catalogues or weights:
            raise InputError.one(str(path), "", "validate-options", "--catalogue and --weights check a version "
                                 "file; an experiment names its own catalogues and weights")
        from tasks.run.validate_experiment import validate_experiment_file

        return "\n".join(validate_experiment_file(path, warehouse))
    if warehouse is not None:
        raise InputError.one(str(path), "", "validate-options", "--warehouse is for an experiment's cost "
                             "forecast; a version file's checks read no warehouse")
    from tasks.taskset.validate_version import validate_version_file

    return validate_version_file(path, catalogues, weights)


def validate_tasks(tasks_path: str | Path, surfaces: list[str] | None = None) -> str:
    """The task checks on one version file (e.g. tasksets/support_tasks/t1.jsonl) against the named surfaces
    (default: every surface of the task set); a one-line summary, or InputError."""
    from tasks.surface.load_surface import load_surface
    from tasks.surface.load_tasks import load_task_version
    from tasks.surface.task_checks import check_tasks

    path = Path(tasks_path)
    folder, version = path.parent, path.name.removesuffix(".jsonl")
    names = surfaces or sorted(p.stem for p in (folder / "surfaces").glob("*.yaml"))
    loaded = load_task_version(folder, version)
    from tasks.surface.catalogue_drift import pinned_note

    resolved = [load_surface(folder, name) for name in names]
    checked = check_tasks(loaded, resolved)
    note = pinned_note(resolved)
    warnings = [f"\n  warning: surface {surface.name}: {warning}" for surface in resolved for warning in surface.warnings]
    return (f"OK {path}: {checked.n_tasks} tasks, slices {loaded.manifest.counts_by_slice}, checked against "
            f"{checked.n_surfaces} surface(s) ({', '.join(names)}); hash {loaded.actual_hash[:12]} matches the manifest"
            + "".join(warnings) + (f"\n  {note}" if note else ""))


def write_catalogue(surface_path: str | Path, out: str | Path) -> str:
    """A surface's tools as offered (after its transform) written as a selection catalogue file, so the same
    transform can be a rung of a selection experiment. A tool offered under another name than its backend's
    (a prefix or rename) is recorded in the file's ``offered_as``, so requests labelled with the backend's
    name expect the name offered."""
    from tasks.surface.load_surface import load_surface

    path = Path(surface_path)
    surface = load_surface(path.parent.parent, path.stem)
    target = Path(out)
    name = target.stem
    offered_as = {t.backend.name: t.spec.name for t in surface.tools if t.backend.name != t.spec.name}
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"name": name, "description": surface.description,
                                  "tools": [t.spec.model_dump() for t in surface.tools],
                                  **({"offered_as": offered_as} if offered_as else {})}, indent=2) + "\n")
    return (f"wrote {target}: {len(surface.tools)} tools of surface {surface.name} as catalogue '{name}'"
            + (f"; {len(offered_as)} offered under another name than their label (offered_as)" if offered_as else ""))


def import_mcp(name: str, taskset: str | Path, *, command: Sequence[str] = (), url: str | None = None,
               cwd: str | None = None, env: Mapping[str, str] | None = None,
               expected_arguments: str | Path | None = None) -> "McpImportSummary":
    """List the tools of an MCP server (``command`` and its args over stdio, or ``url``) and write them as the
    next version of catalogue ``name`` in the task-set folder ``taskset`` (``catalogues/NAME-vN.json``), or
    nothing when they equal the latest version's; with ``expected_arguments`` (a JSON Lines file of request id
    and expected arguments, checked against the listed tools) also the set's next version of requests carrying
    them. InputError, with nothing written, on bad input or a server that cannot start or list its tools."""
    from tasks.importers.mcp_catalogue import import_mcp_catalogue

    return import_mcp_catalogue(name, Path(taskset), command=command, url=url, cwd=cwd, env=env,
                                expected_arguments=Path(expected_arguments) if expected_arguments else None)


def publish_to_phoenix(run_id: str | None = None, warehouse: str | Path | None = None, *,
                       base_url: str | None = None, experiment: str | Path | None = None) -> "PhoenixPublication":
    """A registered selection run (default: the latest) as Phoenix experiments over its task-set version as
    a Phoenix dataset (tasks/tracing/phoenix_experiments.py); ``base_url`` defaults to where the run's
    traces went, else http://127.0.0.1:6006. InputError when the run, its task set or Phoenix is not there."""
    from tasks.tracing.phoenix_experiments import publish_run
    from warehouse.location import warehouse_at

    return publish_run(warehouse_at(warehouse), run_id, base_url, Path(experiment) if experiment else None)


def sql_session(warehouse: str | Path | None = None) -> SqlSession:
    """An SQL session over a snapshot of the warehouse (``session.refresh()`` takes it, ``session.run(sql)``
    answers, ``session.close()`` removes it): read-only, and it never holds the file a run registers into."""
    from tasks.report.sql_session import SqlSession
    from warehouse.location import warehouse_at

    return SqlSession(warehouse_at(warehouse))


def compare(run_a: str, run_b: str, warehouse: str | Path | None = None, *, arm_a: str | None = None,
            arm_b: str | None = None, differ_in: list[str] | tuple[str, ...] = ()) -> list[ArmPairComparison]:
    """Paired per-slice, per-tool and weighted changes from run_a to run_b, per arm pair. Raises NotComparable
    when a pair differs in a respect not in ``differ_in``; InputError on unknown runs or arms."""
    from tasks.report.read_only import open_read_only, require_warehouse
    from tasks.selection.run_compare import compare_runs
    from warehouse.location import warehouse_at

    location = warehouse_at(warehouse)
    require_warehouse(location.db_path)
    with open_read_only(location.db_path) as con:  # held for the comparison only
        return compare_runs(con, str(location.db_path), run_a, run_b, arm_a=arm_a, arm_b=arm_b, differ_in=differ_in)


def fit_cutoff(experiment_path: str | Path, arm: str, out: str | Path | None = None,
               salt: str | None = None) -> "FittedCutoff":
    """Fit the 'none' cut-off of an arm's offline router on one hash half of its task-set version, confirm
    it on the other, and write it (default ``cutoffs/<arm>-<version>.json`` beside the experiment)."""
    from tasks.selection.fit_router_cutoff import DEFAULT_SALT, fit_router_cutoff

    return fit_router_cutoff(Path(experiment_path), arm, Path(out) if out else None, salt or DEFAULT_SALT)


def train(version_path: str | Path, out: str | Path, catalogues: list[str] | None = None,
          folds: int = 5, unseen_weight: float = 1.0, encoder: str | None = None, fine_tune: bool = False,
          fine_tune_epochs: int = 2, progress: Callable[[str], None] | None = None,
          fine_tune_seed: int = 0, context_turns: int | None = None) -> "TrainedModel":
    """Learn a decision model from a task-set version's labelled requests (cross-fitted on ``folds`` folds,
    with transfer copies at ``unseen_weight``, its features under ``encoder``: MiniLM unless a local model
    directory is given) and write its file; ``fine_tune`` (experimental: ``experimental/fine_tuning``): with a
    fine-tuned encoder per fold model beside it, scoring by the product of the two; ``fine_tune_seed``: which
    draw of that fine-tuning (0 by default); ``context_turns``: the turns read before each conversation's last user
    turn (recorded in the file; the model scores with the same; None: the training's default)."""
    from tasks.selectors.decision_models.train_decision_model import DEFAULT_MODEL_ID, train_decision_model

    return train_decision_model(Path(version_path), Path(out), catalogues=catalogues, folds=folds,
                                unseen_weight=unseen_weight, encoder=encoder or DEFAULT_MODEL_ID, fine_tune=fine_tune,
                                fine_tune_epochs=fine_tune_epochs, fine_tune_seed=fine_tune_seed, context_turns=context_turns,
                                progress=progress)
