"""A task experiment's acceptance criteria: read and check the file, register it (sha256 + UTC time) before
the first call, as selection runs do (same registration files, same 'changed since registration' rule)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from pydantic import ValidationError

from schemas.surface.criteria import SurfaceCriteria
from tasks.experiment.criteria import (
    CRITERIA_COPY,
    REGISTRATION_FILE,
    CriteriaRegistration,
    _locate,
    criteria_path,
    read_registration,
)
from tasks.files.atomic_write import write_atomic
from tasks.files.content_hash import sha256_hex
from tasks.files.input_errors import InputError, Problem
from tasks.files.yaml_files import load_yaml


def parse_task_criteria(path: Path, raw: bytes) -> SurfaceCriteria:
    file = str(path)
    data = load_yaml(raw, file)
    if not isinstance(data, dict):
        raise InputError.one(file, "", "schema", "a criteria file is a YAML mapping with `name` and `gates`")
    try:
        criteria = SurfaceCriteria.model_validate(data)
    except ValidationError as error:
        problems = []
        for e in error.errors():
            where, line = _locate(raw, tuple(e["loc"]))
            problems.append(Problem(file, where + (f" ({line})" if line else ""), "criteria-schema", e["msg"]))
        raise InputError(problems) from None
    names = [g.name for g in criteria.gates]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError.one(file, f"gate {repeated[0]}", "gate-names-unique", "two gates share this name")
    return criteria


def load_task_criteria(experiment_path: Path, criteria: str | None, arm_names: list[str],
                       slices: set[str]) -> tuple[Path, SurfaceCriteria] | None:
    """The experiment's criteria, checked against its arms and slices; None when it names none."""
    path = criteria_path(experiment_path, criteria)
    if path is None:
        return None
    if not path.is_file():
        raise InputError.one(str(path), "", "file-exists", "criteria file not found")
    parsed = parse_task_criteria(path, path.read_bytes())
    problems = []
    for gate in parsed.gates:
        arms = getattr(gate, "arms", None)
        for arm in arms if isinstance(arms, list) else []:
            if arm not in arm_names:
                problems.append(Problem(str(path), f"gate {gate.name}", "gate-arms",
                                        f"names arm '{arm}', which the experiment does not have"))
        for slice_ in getattr(gate, "floors", {}) or {}:
            if slice_ not in slices:
                problems.append(Problem(str(path), f"gate {gate.name}", "gate-slices",
                                        f"names slice '{slice_}'; the task set has {sorted(slices)}"))
    if problems:
        raise InputError(problems)
    return path, parsed


def register_task_criteria(path: Path, registrations_dir: Path, run_id: str) -> CriteriaRegistration:
    """Hash the criteria file and keep its bytes and the UTC time under registrations/<run_id>/, before the
    first call; a run id already registered with other criteria is refused."""
    raw = Path(path).read_bytes()
    parse_task_criteria(Path(path), raw)
    digest = sha256_hex(raw)
    existing = read_registration(registrations_dir, run_id)
    if existing is not None:
        if existing.sha256 != digest:
            raise InputError.one(str(path), "", "criteria-registered-once",
                                 f"run {run_id} already registered criteria {existing.sha256[:12]}")
        return existing
    directory = Path(registrations_dir) / run_id
    directory.mkdir(parents=True, exist_ok=True)
    registration = CriteriaRegistration(run_id=run_id, source=str(path), sha256=digest,
                                        registered_at=datetime.now(timezone.utc), copy=directory / CRITERIA_COPY)
    write_atomic(registration.copy, raw)
    write_atomic(directory / REGISTRATION_FILE, json.dumps(registration.to_json(), indent=2).encode())
    return registration


def registered_task_criteria(registration: CriteriaRegistration) -> SurfaceCriteria:
    raw = registration.copy.read_bytes()
    if sha256_hex(raw) != registration.sha256:
        raise ValueError(f"the registered copy {registration.copy} does not match sha256 {registration.sha256[:12]}")
    return parse_task_criteria(registration.copy, raw)
