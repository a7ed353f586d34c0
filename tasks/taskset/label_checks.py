"""Label checks on a task-set version, run with Great Expectations before any model call.

Rules (each failure names the file, the line or id, and the rule):
- request-non-empty, slice-declared: per request;
- label-offered / fallback-offered: the label is an offered tool (the request's own tools, else the
  catalogues in use) or 'none';
- one-label-per-text: no request text (case- and space-insensitive) offered the same tools carries two different
  labels (requests with their own tools are compared only with requests offering the same tool names);
- relabel-adjudicated: a request with a fallback label, or whose label differs from the parent
  version's, has an adjudication record;
- and, without Great Expectations, the rules of tasks/taskset/integrity_checks.py (first) and argument_checks.py.

great_expectations is imported here only, and in a child process (``run_label_checks_apart``): its import
costs seconds and memory that the run's own process would otherwise hold to its end (at 1M rows that
process is at its largest while it registers and reports, long after the check).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from schemas.catalogue import NONE_LABEL, Catalogue
from schemas.taskset import ProductionWeights
from tasks.files.input_errors import InputError, Problem
from tasks.taskset.argument_checks import ARGUMENT_RULES, argument_problems
from tasks.taskset.check_cache import CheckReport, check_key, recall_report, remember
from tasks.taskset.integrity_checks import VERSION_RULES, WEIGHT_RULES, version_problems, weight_problems
from tasks.taskset.load_taskset import TaskSetVersion, load_version, version_paths


@lru_cache(maxsize=1)
def _context() -> Any:
    import great_expectations as gx

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = {"globally": False, "metric_calculations": False}
    return context


def _validate(name: str, frame: Any, expectations: list[Any], index_columns: list[str]) -> list[Any]:
    """Run expectations on a pandas frame; return the failed expectation results."""
    import great_expectations as gx

    context = _context()
    source = context.data_sources.add_or_update_pandas(f"tooleval_{name}")
    asset = source.add_dataframe_asset(name)
    batch = asset.add_batch_definition_whole_dataframe("all").get_batch(batch_parameters={"dataframe": frame})
    suite = gx.ExpectationSuite(name=f"tooleval_{name}")
    for expectation in expectations:
        suite.add_expectation(expectation)
    result = batch.validate(
        suite, result_format={"result_format": "COMPLETE", "unexpected_index_column_names": index_columns}
    )
    return [r for r in result.results if not r.success]


def _problems(failed: Iterable[Any], file: str) -> list[Problem]:
    problems = []
    for result in failed:
        meta = result.expectation_config.meta or {}
        rule, message = meta.get("rule", result.expectation_config.type), meta.get("message", "")
        indexes = result.result.get("unexpected_index_list") or []
        if not indexes:
            observed = result.result.get("observed_value")
            detail = f" (observed {observed})" if observed is not None else ""
            problems.append(Problem(meta.get("file", file), "", rule, message + detail))
        for index in indexes:
            if "line" in index:
                where = f"line {int(index['line'])} (id {index['id']})"
            elif index.get("tool") is not None:
                where = f"tool {index['tool']}"
            else:  # a whole-file rule (the manifest's hash): the file alone locates it
                where = ""
            value = index.get(meta.get("show", ""), "")
            problems.append(Problem(meta.get("file", file), where, rule, message + (f": {value}" if value != "" else "")))
    return problems


def request_frame(version: TaskSetVersion, catalogue_tools: set[str]) -> Any:
    """One row per request with the derived columns the expectations test: computed on the version's
    request table with polars, handed to Great Expectations as pandas (what its pandas source reads)."""
    import polars as pl  # here: a version whose checks are remembered (check_cache) is never framed

    table = version.table
    none = pl.lit(NONE_LABEL)
    parent = pl.DataFrame(schema={"id": pl.String, "parent_expected": pl.String})
    if version.manifest.parent:
        parent = (load_version(version.directory, version.manifest.parent).table
                  .select("id", pl.col("expected").alias("parent_expected"))
                  .unique("id", keep="last", maintain_order=True))
    # the request's own tools when it has them (names read from their JSON), else the catalogues in use
    own_names = (pl.col("tools").str.json_decode(pl.List(pl.Struct({"name": pl.String})))
                 .list.eval(pl.element().struct.field("name")))
    catalogue = pl.Series(sorted(catalogue_tools), dtype=pl.String).implode()

    def offered(label: pl.Expr) -> pl.Expr:
        return (pl.when(pl.col("tools").is_null()).then(label.is_in(catalogue))
                .otherwise(label.is_in(own_names)).fill_null(False))

    # texts compared case- and space-insensitively: trimmed, lower case, each run of white space one space
    normalised = pl.col("text").str.strip_chars().str.to_lowercase().str.replace_all(r"\s+", " ")
    # ... and keyed on the tools offered with it: the same words rightly expect different tools when
    # different tools are offered (BFCL: "what is the contact of adriel" -> adriel_contact, or contact)
    offered_set = (pl.when(pl.col("tools").is_null()).then(pl.lit("\x00catalogues"))
                   .otherwise(own_names.list.sort().list.join("\x1f")))
    relabelled = pl.col("fallback").is_not_null() | (
        pl.col("parent_expected").is_not_null() & (pl.col("parent_expected") != pl.col("expected")))
    adjudicated = sorted({a.request_id for a in version.adjudications})
    frame = (
        table.select("line", "id", "text", "expected", "fallback", "slice", "tools")
        .join(parent, on="id", how="left", maintain_order="left")
        .select(
            "line", "id",
            pl.col("text").str.strip_chars(),
            "expected",
            pl.col("fallback").fill_null(NONE_LABEL),
            "slice",
            label_offered=(pl.col("expected") == none) | offered(pl.col("expected")),
            fallback_offered=(pl.col("fallback").is_null() | (pl.col("fallback") == none)
                              | offered(pl.col("fallback"))),
            labels_for_text=pl.col("expected").n_unique().over(normalised, offered_set),
            relabel_adjudicated=~relabelled | pl.col("id").is_in(pl.Series(adjudicated, dtype=pl.String).implode()),
        )
    )
    return frame.to_pandas()


def check_labels(
    version: TaskSetVersion,
    catalogues: Iterable[Catalogue],
    weights: ProductionWeights | None = None,
    weights_path: Path | None = None,
) -> CheckReport:
    """Every rule, or the remembered pass of the very same content; raise InputError listing each failure (a
    run refused those of tasks/taskset/integrity_checks.py already, as its versions loaded)."""
    catalogues = list(catalogues)
    key = check_key(version, catalogues, weights)
    if (passed := recall_report(key)) is not None:
        return passed
    catalogue_tools = {name for catalogue in catalogues for name in catalogue.label_names}
    problems = (version_problems(version) + argument_problems(version, catalogues)
                + (weight_problems(weights, weights_path, catalogue_tools) if weights else []))
    try:
        report = run_label_checks_apart(version, catalogues)
    except InputError as error:
        raise InputError(problems + error.problems) from None
    if problems:
        raise InputError(problems)
    report = replace(report, n_expectations=report.n_expectations + VERSION_RULES + ARGUMENT_RULES
                     + (WEIGHT_RULES if weights else 0),
                     n_weights=len(weights.weights) if weights else 0)
    remember(key, {"n_requests": report.n_requests, "n_expectations": report.n_expectations,
                   "n_weights": report.n_weights})
    return report


def run_label_checks_apart(version: TaskSetVersion, catalogues: list[Catalogue]) -> CheckReport:
    """``run_label_checks`` in a fresh child process (spawned, so no thread of this one is copied), which
    exits with Great Expectations and its frames; the same report, or the same InputError, comes back.
    multiprocessing is imported here: a check whose labels passed before starts no process."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        outcome = pool.submit(_checked, version, catalogues).result()
    if isinstance(outcome, CheckReport):
        return outcome
    raise InputError(outcome)


def _checked(version: TaskSetVersion, catalogues: list[Catalogue]) -> CheckReport | list[Problem]:
    """The child's side: the report, or the problems (an InputError's fields do not survive pickling)."""
    try:
        return run_label_checks(version, catalogues)
    except InputError as error:
        return error.problems


def run_label_checks(version: TaskSetVersion, catalogues: Iterable[Catalogue]) -> CheckReport:
    """Run the request rules with Great Expectations; raise InputError listing each failure, or return what was
    checked."""
    import great_expectations.expectations as gxe

    catalogue_tools = {name for catalogue in catalogues for name in catalogue.label_names}
    file = str(version.requests_path)
    frame = request_frame(version, catalogue_tools)
    offered_where = "the catalogues in use" if catalogue_tools else "the request's own tools"

    def meta(rule: str, message: str, show: str = "", on: str = file) -> dict[str, str]:
        return {"rule": rule, "message": message, "show": show, "file": on}

    request_expectations = [
        gxe.ExpectColumnValueLengthsToBeBetween(
            column="text", min_value=1, meta=meta("request-non-empty", "the request text is empty")),
        gxe.ExpectColumnValuesToBeInSet(
            column="slice", value_set=list(version.manifest.slices),
            meta=meta("slice-declared", f"slice not among the manifest's {version.manifest.slices}", "slice")),
        gxe.ExpectColumnValuesToBeInSet(
            column="label_offered", value_set=[True],
            meta=meta("label-offered", f"expected label is neither 'none' nor a tool of {offered_where}", "expected")),
        gxe.ExpectColumnValuesToBeInSet(
            column="fallback_offered", value_set=[True],
            meta=meta("fallback-offered", f"fallback label is neither 'none' nor a tool of {offered_where}", "fallback")),
        gxe.ExpectColumnValuesToBeBetween(
            column="labels_for_text", max_value=1,
            meta=meta("one-label-per-text", "the same request text carries different labels elsewhere", "expected")),
        gxe.ExpectColumnValuesToBeInSet(
            column="relabel_adjudicated", value_set=[True],
            meta=meta("relabel-adjudicated", "the label changes (fallback or parent version) without an adjudication "
                      f"in {version_paths(version.directory, version.version)['adjudications'].name}", "expected")),
    ]
    failed = (_validate("requests", frame, request_expectations, ["line", "id", "expected", "fallback", "slice"])
              if len(frame) else [])
    n_expectations = len(request_expectations)

    if failed:
        raise InputError(_problems(failed, file))
    return CheckReport(n_requests=len(frame), n_expectations=n_expectations, n_weights=0)
