"""The rules every task of a version must keep, checked before any agent turn; each failure names the file,
the line and id, and the rule (the same InputError as the label checks of selection task sets). The rules
are listed in docs/surface/writing-tasks.md; they are structural over nested records (fixtures validated by
the backend's own pydantic state model), so they are checked in Python, not as Great Expectations column
expectations.

A pass is remembered by content (``remembered_checks``), as the label checks of selection task sets are
(tasks/taskset/check_cache.py): the rules are a pure function of the version's files, the surfaces (their
hashes: file, backend source, tools as offered) and the rules' source, so an experiment whose arms or
comparisons changed is not checked task by task again. Failures are never kept."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from tasks.files.cache_folder import cache_folder
from tasks.files.content_hash import parts_sha256, sha256_hex
from tasks.files.input_errors import InputError, Problem
from tasks.surface.load_surface import ResolvedSurface
from tasks.surface.load_tasks import TaskVersion, _includes, fixture_path, load_task_version, task_paths
from tasks.surface.wanted_actions import action_problems

if TYPE_CHECKING:  # the run's machinery: `tooleval tasks validate` needs none of it
    from tasks.core_records import Loaded, ResolvedExperiment


@dataclass(frozen=True)
class TaskCheckReport:
    n_tasks: int
    n_surfaces: int
    n_rules: int = 11
    cached: bool = False
    """The same content passed before: the tasks were not checked again."""


ROOT = Path(__file__).parents[2]
RULES = (ROOT / "tasks" / "surface", ROOT / "schemas", ROOT / "schemas" / "surface")
"""The rules' source: this package (the checks, the task loader, the backends' state building) and the schemas
the tasks, surfaces and fixtures are read with; every .py file in these folders is in a pass's key."""


def load_surface_versions(experiment: ResolvedExperiment) -> Loaded:
    """Each version the arms use, its tasks checked against every surface the arms run them on."""
    from tasks.core_records import Loaded

    versions, checks = {}, {}
    for version in experiment.versions:
        versions[version] = load_task_version(experiment.taskset_dir, version)
        surfaces = {a.surface.name: a.surface for a in experiment.arms if a.version == version}
        checks[version] = remembered_checks(versions[version], surfaces.values())
    return Loaded(versions=versions, checks=checks)


def check_key(version: TaskVersion, surfaces: Iterable[ResolvedSurface]) -> str:
    """Everything the rules' answer depends on, hashed: the version's content (its tasks file and the fixture
    files it includes) and manifest, each surface's name and hash, the rules' source and pydantic's version
    (a backend's state model validates the fixtures); contents, never paths."""
    import pydantic

    sources = sorted(path for folder in RULES for path in folder.glob("*.py"))
    parts = {"rules": parts_sha256((str(path.relative_to(ROOT)), path.read_bytes()) for path in sources),
             "pydantic": pydantic.VERSION, "version": [version.actual_hash, version.manifest.model_dump(mode="json")],
             "surfaces": sorted([s.name, s.surface_hash] for s in surfaces)}
    return sha256_hex(json.dumps(parts, sort_keys=True))


def remembered_checks(version: TaskVersion, surfaces: Iterable[ResolvedSurface]) -> TaskCheckReport:
    """``check_tasks``, or the pass kept from an earlier check of the same content (``cached``); a pass is
    kept in the cache folder's ``task-checks`` (a cache that cannot be written is simply not used)."""
    from tasks.taskset.check_cache import recall, remember

    surfaces = list(surfaces)
    key, folder = check_key(version, surfaces), cache_folder("task-checks")
    passed = recall(key, folder)
    if passed is not None and set(passed) == {"n_tasks", "n_surfaces", "n_rules"}:
        return TaskCheckReport(**passed, cached=True)
    report = check_tasks(version, surfaces)
    remember(key, {name: value for name, value in asdict(report).items() if name != "cached"}, folder)
    return report


def check_tasks(version: TaskVersion, surfaces: Iterable[ResolvedSurface]) -> TaskCheckReport:
    """Every rule; raise InputError listing each failure, or return what was checked."""
    surfaces = list(surfaces)
    file = str(version.tasks_path)
    problems: list[Problem] = []
    ids = Counter(line.task.id for line in version.lines)
    backends = list({id(s.backend): s.backend for s in surfaces}.values())
    present: dict[str, bool] = {}

    def included(name: str) -> bool:  # tasks share their fixture files: each is looked for once
        if name not in present:
            present[name] = fixture_path(version.directory, name).is_file()
        return present[name]

    for line in version.lines:
        task = line.task
        where = f"line {line.line} (id {task.id})"

        def problem(rule: str, message: str) -> None:
            problems.append(Problem(file, where, rule, message))

        if ids[task.id] > 1:
            problem("ids-unique", "id used more than once")
        if not task.text.strip():
            problem("request-non-empty", "the request text is empty")
        if task.slice not in version.manifest.slices:
            problem("slice-declared", f"slice '{task.slice}' not among the manifest's {version.manifest.slices}")
        missing = [n for n in _includes(task.fixtures) if not included(n)]
        fixtures: dict = {}
        starts: dict[tuple, Any] = {}  # state key -> the fixtures read once as that state (ToolkitStart)

        def start(backend: Any) -> Any:
            if backend.state_key not in starts:
                starts[backend.state_key] = backend.starting_state(fixtures)
            return starts[backend.state_key]

        if missing:
            problem("fixtures-include", f"includes {', '.join(missing)}: no such file under fixtures/")
        else:
            fixtures = version.fixtures(task)
            for backend in backends:
                for message in start(backend).problems:
                    problem("fixtures-schema", message)
        for call in task.assertion.required_calls:
            lacking = [s.name for s in surfaces if call.tool not in s.backend_tools]
            if lacking:
                problem("assert-tool-known", f"requires a call of '{call.tool}', which surface(s) "
                                             f"{', '.join(lacking)} do not have; "
                                             + assertion_hint([s for s in surfaces if s.name in lacking]))
        for call in task.assertion.not_called:
            if surfaces and all(call.tool not in s.backend_tools for s in surfaces):
                problem("assert-tool-known", f"not_called names '{call.tool}', a tool of no surface in use")
        for call in (*task.assertion.required_calls, *task.assertion.not_called):
            for surface in surfaces:
                backend = surface.backend_tools.get(call.tool)
                if backend is None:
                    continue
                unknown = sorted(set(call.args) - set(backend.parameters.get("properties", {})))
                if unknown:
                    problem("assert-args-known", f"'{call.tool}' on surface {surface.name} has no argument(s) "
                                                 f"{', '.join(unknown)}")
                    break
        for state in task.assertion.state:
            for backend in backends:
                reason = start(backend).state_path_problem(state.parts)
                if reason:
                    problem("assert-state-path", f"path '{state.path}': {reason}")
                    break
        for probe in task.assertion.probes:
            for surface in surfaces:
                backend = surface.backend_tools.get(probe.probe.tool)
                if backend is None:
                    problem("assert-probe-known", f"probes with '{probe.probe.tool}', which surface {surface.name} "
                                                  "does not have")
                    break
                unknown = sorted(set(probe.probe.args) - set(backend.parameters.get("properties", {})))
                if unknown:
                    problem("assert-probe-known", f"'{probe.probe.tool}' on surface {surface.name} has no "
                                                  f"argument(s) {', '.join(unknown)}")
                    break
        for rule, message in action_problems(task, surfaces):
            problem(rule, message)
    if version.manifest.content_hash != version.actual_hash:
        problems.append(Problem(str(task_paths(version.directory, version.version)["manifest"]), "", "manifest-hash",
                                f"the version's files hash to {version.actual_hash[:12]}, the manifest says "
                                f"{version.manifest.content_hash[:12]}: the version was edited after it was frozen"))
    if problems:
        raise InputError(problems)
    return TaskCheckReport(n_tasks=len(version.lines), n_surfaces=len(surfaces))


def assertion_hint(lacking: Sequence[ResolvedSurface]) -> str:
    """What to assert instead of a call a surface cannot make: the outcome, which every surface can reach.

    A required call names one surface's tool; the state it leaves (an email in the outbox, a refund in the
    refunds) is the same whichever tools wrote it, so a state assertion (a probe on an MCP surface) holds on
    every surface."""
    models = {s.backend.toolkit.state_model for s in lacking if s.backend.kind == "toolkit"}
    ways = []
    if models:
        fields = "; ".join(f"{m.__name__} has {', '.join(m.model_fields)}" for m in sorted(models, key=str))
        ways.append("assert on the state the call leaves instead (state: [{path: COLLECTION.ID.FIELD, equals: "
                    f"VALUE}}]; {fields}), which holds on every surface whatever tool wrote it")
    if any(s.backend.kind != "toolkit" for s in lacking):
        ways.append("read the outcome with a probe instead (probes: [{probe: {tool, args}, path, <matcher>}]) on a "
                    "tool every surface in use has")
    return " or ".join(ways) or "assert on the outcome instead (state or probes), which holds on every surface"
