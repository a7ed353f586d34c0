"""Load an experiment file and resolve its arms; refuse seeds that cannot be run and comparisons that change
more than one thing. The same rules for every instrument: what an arm is made of is the instrument's
(``Instrument.resolve_arm``), everything else is here; the records it builds are tasks/core_records.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from schemas.experiment import ArmSpec, Comparison, ExperimentFile
from tasks.core_records import ArmContext, ArmRefused, ResolvedArm, ResolvedComparison, ResolvedExperiment
from tasks.files.content_hash import sha256_hex
from tasks.files.input_errors import InputError, Problem
from tasks.files.yaml_files import load_yaml
from tasks.instrument_api import Instrument, instrument
from tasks.instrument_registry import instrument_of

SEED_LIMIT = 2 ** 63
MIN_SEEDS = 3
ARM_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
NAME_MAX_BYTES = 100
"""Longest arm or experiment name, in UTF-8 bytes: an arm name is a folder of its rows (``arm=<name>``) and a
cut-off file (``<arm>-<version>.json``), an experiment name a weekly file's name (``<name>-weekly-...``); a file
system takes 255 bytes per path part, and the rest of the part needs room."""


def read_experiment(path: Path) -> tuple[Instrument, ExperimentFile, str | None]:
    """The experiment's instrument (tasks/instrument_api.py), the file, parsed and validated against that
    instrument's experiment file, naming the file and the line, and a note when the file does not name its
    instrument."""
    path = Path(path)
    if not path.is_file():
        raise InputError.one(str(path), "", "file-exists", "experiment file not found")
    data = load_yaml(path.read_bytes(), str(path))
    if not isinstance(data, dict):
        raise InputError.one(str(path), "", "schema", "an experiment file is a YAML mapping")
    name, note = instrument_of(data, str(path))
    kind = instrument(name)
    try:
        return kind, kind.experiment_file.model_validate(data), note
    except ValidationError as error:
        problems = [
            Problem(str(path), ".".join(str(p) for p in e["loc"]), "schema", e["msg"]) for e in error.errors()
        ]
        raise InputError(problems) from None


def load_experiment_file(path: Path) -> ExperimentFile:
    return read_experiment(path)[1]


def _merge(defaults: ArmSpec | None, arm: ArmSpec) -> dict[str, Any]:
    merged = defaults.model_dump(exclude={"name"}, exclude_none=True) if defaults else {}
    for key, value in arm.model_dump().items():
        if key == "options":
            merged["options"] = {**merged.get("options", {}), **value}
        elif value is not None:
            merged[key] = value
    return merged


def seed_problems(spec: ExperimentFile, file: str) -> list[Problem]:
    """At least three distinct seeds (unless declared otherwise), each a whole number a BIGINT holds."""
    problems = []
    if len(spec.seeds) < MIN_SEEDS and not spec.declared.few_seeds:
        problems.append(Problem(file, "seeds", "min-seeds",
                                f"{len(spec.seeds)} seed(s) given; at least {MIN_SEEDS} are needed to see the noise "
                                "floor, unless `declared: {few_seeds: <why>}` says otherwise"))
    if len(set(spec.seeds)) != len(spec.seeds):
        problems.append(Problem(file, "seeds", "seeds-unique", f"seeds repeat: {spec.seeds}"))
    if not spec.seeds:
        problems.append(Problem(file, "seeds", "seeds-given", "no seeds: a run needs at least one (three to see "
                                "the noise floor)"))
    if out_of_range := [s for s in spec.seeds if not 0 <= s < SEED_LIMIT]:
        problems.append(Problem(file, "seeds", "seed-range", f"seeds must be whole numbers from 0 to 2**63 - 1 "
                                f"(they are stored as BIGINT): {out_of_range}"))
    return problems


def arm_name_problems(spec: ExperimentFile, file: str) -> list[Problem]:
    names = [arm.name for arm in spec.arms]
    problems = [Problem(file, f"arm {name}", "arm-names-unique", "two arms share this name")
                for name in sorted({n for n in names if names.count(n) > 1})]
    problems += [Problem(file, f"arm {name}", "arm-name-chars",
                         (f"{', '.join(repr(c) for c in sorted(set(name) - ARM_NAME_CHARS))} cannot be in an arm name: "
                          if name else "the name is empty: ")
                         + "use ASCII letters (a-z, A-Z), digits, '.', '_' or '-' (it names a folder of rows)")
                 for name in dict.fromkeys(names) if not name or set(name) - ARM_NAME_CHARS]
    problems += [Problem(file, f"arm {name[:40]}...", "arm-name-length",
                         f"the name is {len(name.encode())} bytes; at most {NAME_MAX_BYTES} (it names the arm's folder "
                         "of rows, and a file system takes 255 bytes per folder name)")
                 for name in dict.fromkeys(names) if len(name.encode()) > NAME_MAX_BYTES]
    problems += [Problem(file, f"arm {name}", "arm-name-path", "'.' and '..' cannot name an arm (they mean a folder)")
                 for name in dict.fromkeys(names) if name in (".", "..")]
    return problems


def experiment_name_problems(spec: ExperimentFile, file: str) -> list[Problem]:
    """An experiment name is part of a file name (the weekly experiment's): not empty, no '/', no NUL, not '.'
    or '..', at most NAME_MAX_BYTES bytes."""
    name = spec.name
    if not name.strip() or name in (".", ".."):
        return [Problem(file, "name", "experiment-name", "give the experiment a name ('.' and '..' are folders)")]
    if "/" in name or "\\" in name or "\x00" in name:
        return [Problem(file, "name", "experiment-name", "'/', '\\' and NUL cannot stand in a name that is part of "
                        "a file name")]
    if len(name.encode()) > NAME_MAX_BYTES:
        return [Problem(file, "name", "experiment-name", f"the name is {len(name.encode())} bytes; at most "
                        f"{NAME_MAX_BYTES} (it is part of file names)")]
    return []


def resolve_arms(kind: Instrument, spec: ExperimentFile, context: ArmContext, file: str, only: str | None = None
                 ) -> tuple[list[ResolvedArm], list[Problem]]:
    """Every arm (or the arm named ``only``) merged with the defaults, checked for completeness, then resolved
    by its instrument."""
    arms: list[ResolvedArm] = []
    problems: list[Problem] = []
    for rung, arm in enumerate(spec.arms, start=1):
        if only is not None and arm.name != only:
            continue
        where = f"arm {arm.name}"
        merged = _merge(spec.defaults, arm)
        merged.setdefault("version", spec.version)
        kind.fill_arm(merged)
        missing = [k for k in kind.arm_fields if not merged.get(k)]
        if missing:
            problems.append(Problem(file, where, "arm-complete",
                                    f"no {', '.join(missing)} (set it on the arm or under defaults)"))
            continue
        try:
            arms.append(kind.resolve_arm(arm.name, rung, merged, context))
        except ArmRefused as refused:
            problems += [Problem(file, where, rule, message) for rule, message in refused.problems]
        except InputError as error:  # a catalogue, surface or prompt the arm names cannot be read
            problems += [Problem(file, where, p.rule, " ".join(filter(None, (f"{p.file}:", p.where, p.message))))
                         for p in error.problems]
    return arms, problems


def resolve_comparisons(spec: ExperimentFile, arms: list[ResolvedArm], respects: tuple[str, ...], file: str
                        ) -> tuple[list[ResolvedComparison], list[Problem]]:
    """The declared pairs (or the ladder), each changing one respect unless the rest is declared."""
    by_name = {arm.name: arm for arm in arms}
    if spec.comparisons == "ladder":
        pairs = [Comparison(**{"from": a.name, "to": b.name}) for a, b in zip(arms, arms[1:])]
    else:
        pairs = spec.comparisons
    comparisons: list[ResolvedComparison] = []
    problems: list[Problem] = []
    for pair in pairs:
        where = f"comparison {pair.baseline} -> {pair.arm}"
        if pair.baseline not in by_name or pair.arm not in by_name:
            problems.append(Problem(file, where, "comparison-arms", "names an arm the experiment does not have"))
            continue
        a, b = by_name[pair.baseline], by_name[pair.arm]
        changed = tuple(r for r in respects if a.respect(r) != b.respect(r))
        undeclared = [r for r in changed if r not in pair.declare]
        if not changed:
            problems.append(Problem(file, where, "one-change", "the two arms are identical: nothing is compared"))
        elif len(undeclared) > 1:
            problems.append(Problem(
                file, where, "one-change",
                f"the arms differ in {len(changed)} respects ({', '.join(changed)}); a comparison changes one. "
                f"Declare the others knowingly with `declare: [{', '.join(changed[1:])}]` or split the change",
            ))
        comparisons.append(ResolvedComparison(pair.baseline, pair.arm, changed))
    return comparisons, problems


def resolve_experiment(path: Path, only_arm: str | None = None) -> ResolvedExperiment:
    """Everything an experiment refers to, resolved and checked, before any data or model is touched.
    ``only_arm``: resolve that arm alone (no other arm, no comparison), for a command that acts on one arm
    (``tooleval fit``): another arm's problem, such as naming the cut-off file that command is about to write,
    is for the run to report."""
    path = Path(path)
    kind, spec, note = read_experiment(path)
    file = str(path)
    taskset_dir = (path.parent / spec.taskset).resolve()
    if not taskset_dir.is_dir():
        raise InputError.one(file, "taskset", "taskset-exists", f"task-set folder {taskset_dir} not found")
    problems = experiment_name_problems(spec, file) + seed_problems(spec, file) + arm_name_problems(spec, file)
    arms, arm_problems = resolve_arms(kind, spec, ArmContext(taskset_dir, path.parent), file, only_arm)
    if problems + arm_problems:
        raise InputError(problems + arm_problems)
    comparisons, problems = ([], []) if only_arm is not None else resolve_comparisons(spec, arms, kind.respects, file)
    if problems:
        raise InputError(problems)
    return ResolvedExperiment(path=path, experiment_hash=sha256_hex(path.read_bytes()), spec=spec,
                              taskset_dir=taskset_dir, arms=tuple(arms), comparisons=tuple(comparisons),
                              instrument=kind.name, instrument_note=note)
