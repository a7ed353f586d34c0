"""The task-set versions a selection run reads: loaded (parsed, each line's schema; ids, the manifest's hash
and the weights checked) and never scored by a decision model that learned from them; then, as the run's last
check, label-checked (Great Expectations) against the arms' catalogues. Before any model call; nothing is
written."""

from __future__ import annotations

from schemas.catalogue import NONE_LABEL
from schemas.taskset import ProductionWeights, effective_label
from tasks.core_records import Loaded, ResolvedExperiment
from tasks.drill_points import reached
from tasks.files.input_errors import InputError, Problem
from tasks.instrument_api import PreparedRun
from tasks.taskset.integrity_checks import version_problems, weight_problems
from tasks.taskset.label_checks import CheckReport, check_labels
from tasks.taskset.load_taskset import TaskSetVersion, load_version, load_weights
from tasks.taskset.provisional_labels import refuse_provisional


def load_selection_versions(experiment: ResolvedExperiment) -> Loaded:
    weights = load_weights(experiment.taskset_dir, experiment.spec.weights) if experiment.spec.weights else None
    versions = {version: load_version(experiment.taskset_dir, version) for version in experiment.versions}
    refuse_broken_versions(experiment, versions, weights)
    refuse_leakage(experiment, versions)
    refuse_unscored_labels(experiment, versions)
    return Loaded(versions=versions, checks={}, weights=weights)


def refuse_broken_versions(experiment: ResolvedExperiment, versions: dict[str, TaskSetVersion],
                           weights: ProductionWeights | None) -> None:
    """Request ids used twice, a manifest the files no longer hash to, production weights that are negative, name
    no tool of the arms' catalogues or do not sum to 1: refused as the versions load, not after the label checks."""
    problems = [problem for version in versions.values() for problem in version_problems(version)]
    if weights is not None:
        tools = {name for arm in experiment.arms if arm.catalogue is not None for name in arm.catalogue.label_names}
        problems += weight_problems(weights, experiment.taskset_dir / "weights" / f"{experiment.spec.weights}.json",
                                    tools)
    if problems:
        raise InputError(problems)


def refuse_unscored_labels(experiment: ResolvedExperiment, versions: dict[str, TaskSetVersion]) -> None:
    """An arm whose catalogue offers the tool of no label of its version (no request's label or fallback,
    spelled as the catalogue offers it: ``effective_label``) would expect 'none' of every request: its
    accuracy would measure a relabelling, not the arm. Refused here, naming the arm and the catalogue (a
    catalogue that offers the tools under other names without saying so, ``offered_as``, is the usual cause)."""
    labels: dict[str, list[str]] = {}
    for version, loaded in versions.items():
        shared = [(expected, fallback) for tools, expected, fallback
                  in zip(loaded.column("tools"), loaded.column("expected"), loaded.column("fallback")) if tools is None]
        named = {expected for expected, _ in shared} | {fallback for _, fallback in shared if fallback is not None}
        labels[version] = sorted(named - {NONE_LABEL})
    problems: list[Problem] = []
    for arm in experiment.arms:
        named = labels.get(arm.version) or []
        if arm.catalogue is None or not named:
            continue
        offered = frozenset(arm.catalogue.names)
        if any(effective_label(label, None, offered, arm.catalogue.offered_as) != NONE_LABEL for label in named):
            continue
        shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
        tools = ", ".join(arm.catalogue.names[:5]) + (" ..." if len(arm.catalogue.names) > 5 else "")
        problems.append(Problem(
            str(experiment.path), f"arm {arm.name}", "labels-offered-by-arm",
            f"no label of {arm.version} ({shown}) names a tool of catalogue {arm.catalogue.name} ({tools}): every "
            "request would expect 'none' and none of its labels would be scored. A catalogue offering the tools "
            "under other names (a prefix or rename) must say which label each name stands for (offered_as): "
            "write it with `tooleval tasks catalogue SURFACE_YAML --out ...`, which records it"))
    if problems:
        raise InputError(problems)


def check_selection_labels(experiment: ResolvedExperiment, loaded: Loaded) -> dict[str, CheckReport]:
    """The label checks (Great Expectations, seconds on a cold cache) of each version, against the arms'
    catalogues and the weights: the run's last check, after every cheap one passed."""
    catalogues = [arm.catalogue for arm in experiment.arms if arm.catalogue is not None]
    weights_path = (experiment.taskset_dir / "weights" / f"{experiment.spec.weights}.json"
                    if experiment.spec.weights else None)
    checks = {}
    for version, loaded_version in loaded.versions.items():
        reached("label-checks", version)
        checks[version] = check_labels(loaded_version, catalogues, loaded.weights, weights_path)
    return checks


def refuse_provisional_labels(prepared: PreparedRun, allow_provisional: bool) -> None:
    """Provisional labels (production hints) are measured only when the run allows them."""
    refuse_provisional(prepared.versions, allow_provisional)


def refuse_leakage(experiment: ResolvedExperiment, versions: dict[str, TaskSetVersion]) -> None:
    """A trained decision model may not score requests it learned from: a model cross-fitted on the version
    scores each with a fold model that never saw it; a one-fold model is refused here, before any selection."""
    problems: list[Problem] = []
    for arm in experiment.arms:
        if arm.decision_model_hash is None:
            continue
        options = arm.selector_options
        model_file = options.get("model_file") or (options.get("router_options") or {}).get("model_file")
        from tasks.selectors.decision_models.trained import leaked_requests, load_model_file
        from tasks.taskset.request_table import parse_messages

        model = load_model_file(str(model_file), arm.decision_model_hash)
        version = versions[arm.version]
        # the task set as `tooleval train` names it (its folder) and the version's content hash: ids match
        # only inside the same task set
        conversations = [parse_messages(m) for m in version.column("messages")] if model.context_turns else None
        leaked = leaked_requests(model, experiment.taskset_dir.resolve().name, version.manifest.content_hash,
                                 version.column("id"), version.column("text"), conversations)
        if leaked:
            shown = ", ".join(leaked[:5]) + (f" and {len(leaked) - 5} more" if len(leaked) > 5 else "")
            problems.append(Problem(
                str(experiment.path), f"arm {arm.name}", "decision-model-leakage",
                f"the decision model {model_file} learned from {len(leaked)} request(s) of {arm.version} (the same "
                f"request of this task set, or the same text): {shown}; it was trained with one fold, so no model "
                "of it is unseen by them: train with --folds 5 (cross-fitting) or on another version"))
    if problems:
        raise InputError(problems)
