"""Acceptance criteria: read and check the file (with the gate kinds of the experiment's instrument),
register it (sha256 + UTC time) before the first model call, and tell whether it changed since.

A registration is two files under ``<warehouse>/registrations/<run_id>/``: ``criteria.yaml`` (the
registered bytes) and ``registration.json`` (source path, sha256, time). The run record carries the same
hash and time. A run whose criteria file changed between registration and judgement refuses to judge.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from schemas.criteria import CriteriaFile
from tasks.files.atomic_write import write_atomic
from tasks.files.content_hash import sha256_hex
from tasks.files.input_errors import InputError, Problem
from tasks.files.yaml_files import load_yaml

REGISTRATION_FILE = "registration.json"
CRITERIA_COPY = "criteria.yaml"


def _locate(raw: bytes, loc: tuple[Any, ...]) -> tuple[str, str]:
    """(dotted path, 'line N') of the YAML node at a pydantic error location. Location parts that are not
    in the YAML (the gate kind pydantic adds for a tagged union) are left out of the path."""
    try:
        node = yaml.compose(raw.decode())
    except yaml.YAMLError:
        node = None
    path: list[str] = []
    for key in loc:
        match = None
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if k.value == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            match = node.value[key]
        if match is None and isinstance(node, yaml.MappingNode) and isinstance(key, str) and any(
                k.value == "kind" and v.value == key for k, v in node.value):
            continue  # the union's tag
        path.append(str(key))
        if match is not None:
            node = match
    line = f"line {node.start_mark.line + 1}" if node is not None else ""
    return ".".join(path), line


def parse_criteria(path: Path, raw: bytes, model: type[CriteriaFile]) -> CriteriaFile:
    """Validate criteria bytes against an instrument's criteria file, naming the file, the line and the rule."""
    file = str(path)
    data = load_yaml(raw, file)
    if not isinstance(data, dict):
        raise InputError.one(file, "", "schema", "a criteria file is a YAML mapping with `name` and `gates`")
    try:
        criteria = model.model_validate(data)
    except ValidationError as error:
        problems = []
        for e in error.errors():
            path_, line = _locate(raw, tuple(e["loc"]))
            where = path_ + (f" ({line})" if line else "")
            problems.append(Problem(file, where, "criteria-schema", e["msg"]))
        raise InputError(problems) from None
    names = [g.name for g in criteria.gates]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError.one(file, f"gate {repeated[0]}", "gate-names-unique", "two gates share this name")
    return criteria


def load_criteria(path: Path, model: type[CriteriaFile]) -> CriteriaFile:
    path = Path(path)
    if not path.is_file():
        raise InputError.one(str(path), "", "file-exists", "criteria file not found")
    return parse_criteria(path, path.read_bytes(), model)


def criteria_path(experiment_path: Path, criteria: str | None) -> Path | None:
    """The criteria file an experiment names (relative to the experiment file), or None."""
    if not criteria:
        return None
    return (Path(experiment_path).parent / criteria).resolve()


def check_against_experiment(criteria: CriteriaFile, path: Path, arm_names: list[str],
                             slices: set[str]) -> None:
    """Arms and slices a gate names must exist in the experiment, before anything runs."""
    problems = []
    for gate in criteria.gates:
        arms = getattr(gate, "arms", None)
        if isinstance(arms, list):
            for arm in arms:
                if arm not in arm_names:
                    problems.append(Problem(str(path), f"gate {gate.name}", "gate-arms",
                                            f"names arm '{arm}', which the experiment does not have"))
        named = list(getattr(gate, "floors", {}) or {}) + list(getattr(gate, "slices", None) or [])
        for slice_ in named:
            if slices and slice_ not in slices:
                problems.append(Problem(str(path), f"gate {gate.name}", "gate-slices",
                                        f"names slice '{slice_}'; the task set has {sorted(slices)}"))
    if problems:
        raise InputError(problems)


def experiment_criteria(experiment: Any, versions: dict[str, Any], model: type[CriteriaFile]
                        ) -> tuple[Path, CriteriaFile] | None:
    """Load the criteria an experiment names and check them against its arms and its versions' slices; None
    when it names none."""
    path = criteria_path(experiment.path, experiment.spec.criteria)
    if path is None:
        return None
    criteria = load_criteria(path, model)
    slices = {s for version in versions.values() for s in version.manifest.slices}
    check_against_experiment(criteria, path, [a.name for a in experiment.arms], slices)
    return path, criteria


@dataclass(frozen=True)
class CriteriaRegistration:
    """The criteria a run registered before its first selection."""

    run_id: str
    source: str
    """The criteria file's path when registered."""
    sha256: str
    registered_at: datetime
    copy: Path
    """The registered bytes, kept beside the warehouse."""

    def to_json(self) -> dict[str, str]:
        return {"run_id": self.run_id, "source": self.source, "sha256": self.sha256,
                "registered_at": self.registered_at.isoformat(), "copy": self.copy.name}


def register_criteria(path: Path, model: type[CriteriaFile], registrations_dir: Path, run_id: str,
                      now: datetime | None = None) -> CriteriaRegistration:
    """Hash the criteria file, keep its bytes and the UTC time under registrations/<run_id>/.

    Call it before the run's first model call. The bytes are validated again (the file may have changed since
    the run was prepared). A run id already registered with other criteria is refused.
    """
    path = Path(path)
    raw = path.read_bytes()
    parse_criteria(path, raw, model)
    digest = sha256_hex(raw)
    directory = Path(registrations_dir) / run_id
    existing = read_registration(registrations_dir, run_id)
    if existing is not None:
        if existing.sha256 != digest:
            raise InputError.one(str(path), "", "criteria-registered-once",
                                 f"run {run_id} already registered criteria {existing.sha256[:12]}")
        return existing
    directory.mkdir(parents=True, exist_ok=True)
    registration = CriteriaRegistration(run_id=run_id, source=str(path), sha256=digest,
                                        registered_at=now or datetime.now(timezone.utc),
                                        copy=directory / CRITERIA_COPY)
    write_atomic(registration.copy, raw)
    write_atomic(directory / REGISTRATION_FILE, json.dumps(registration.to_json(), indent=2).encode())
    return registration


def read_registration(registrations_dir: Path, run_id: str) -> CriteriaRegistration | None:
    directory = Path(registrations_dir) / run_id
    meta = directory / REGISTRATION_FILE
    if not meta.is_file():
        return None
    data = json.loads(meta.read_text())
    return CriteriaRegistration(run_id=data["run_id"], source=data["source"], sha256=data["sha256"],
                                registered_at=datetime.fromisoformat(data["registered_at"]),
                                copy=directory / data.get("copy", CRITERIA_COPY))


def changed_since_registration(registration: CriteriaRegistration) -> str | None:
    """Why the criteria file can no longer be judged against (changed, moved, deleted), or None."""
    source = Path(registration.source)
    if not source.is_file():
        return f"the criteria file {source} is gone since it was registered at {registration.registered_at:%Y-%m-%d %H:%M:%SZ}"
    digest = sha256_hex(source.read_bytes())
    if digest != registration.sha256:
        return (f"the criteria file {source} changed after it was registered at "
                f"{registration.registered_at:%Y-%m-%d %H:%M:%SZ} (sha256 {registration.sha256[:12]} -> {digest[:12]}); "
                "gates moved after the run started are not judged")
    return None


def registered_criteria(registration: CriteriaRegistration, model: type[CriteriaFile]) -> CriteriaFile:
    """The registered criteria, read from the kept copy, which must still hash to the registered sha256."""
    raw = registration.copy.read_bytes()
    if sha256_hex(raw) != registration.sha256:
        raise ValueError(f"the registered copy {registration.copy} does not match sha256 {registration.sha256[:12]}")
    return parse_criteria(registration.copy, raw, model)


def criteria_to_judge(registration: CriteriaRegistration, recorded_hash: str | None, check_source: bool,
                      model: type[CriteriaFile]) -> tuple[CriteriaFile | None, str]:
    """The registered criteria a run is judged against, or (None, why they cannot be trusted): the
    registration must hold the hash the run recorded, its kept copy must still hash to it, and with
    ``check_source`` the criteria file must not have changed since it was registered."""
    if recorded_hash and recorded_hash != registration.sha256:
        return None, "the registration files do not match the criteria hash in the run record"
    if check_source and (reason := changed_since_registration(registration)):
        return None, reason
    try:
        return registered_criteria(registration, model), ""
    except (ValueError, InputError, OSError) as error:
        return None, f"the registered criteria cannot be read: {error}"
