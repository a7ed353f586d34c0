"""The toy instrument's parts: its experiment file, arms, task-set versions, work unit, rows, figures and
report. Each is the smallest thing of its kind the core accepts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

from schemas.arrow import to_arrow_table
from schemas.criteria import Verdict
from schemas.experiment import ArmSpec, ExperimentFile
from schemas.run_records import ArmRecord, RunRecord, UnitRow
from tasks.core_records import ArmContext, Loaded, ResolvedArm, ResolvedExperiment, RunContext, UnitResult, WorkUnit
from tasks.files.content_hash import sha256_hex
from tasks.report_types import Report, ReportTable

RULES = {"parity": lambda n: "even" if n % 2 == 0 else "odd", "always-even": lambda n: "even"}


class ToyArmSpec(ArmSpec):
    rule: str | None = Field(default=None, description="How the arm guesses: parity or always-even.")


class ToyExperimentFile(ExperimentFile):
    defaults: ToyArmSpec | None = None
    arms: list[ToyArmSpec] = Field(min_length=1)


class ToyRow(UnitRow):
    """One guess: a number of the task set, what the arm's rule said, and whether it was right."""

    n: int = Field(description="The number.")
    guessed: str = Field(description="even or odd.")
    correct: bool = Field(description="The guess was right.")


class ToyRunRecord(RunRecord):
    """One toy run."""

    n_rows: int = Field(description="Guesses registered.")


class ToyArmRecord(ArmRecord):
    """One arm of a toy run."""

    rule: str = Field(description="The arm's rule.")


@dataclass(frozen=True, kw_only=True)
class ToyArm(ResolvedArm):
    instrument = "toy"
    rule: str

    def own_respect(self, respect: str) -> Any:
        if respect == "rule":
            return self.rule
        raise KeyError(respect)


def resolve_toy_arm(name: str, rung: int, merged: dict[str, Any], context: ArmContext) -> ToyArm:
    return ToyArm(name=name, rung=rung, prompt_name=merged["prompt"], prompt_text=context.prompt(merged["prompt"]),
                  model_id=merged["model"], version=merged["version"], rule=merged["rule"])


@dataclass(frozen=True)
class Manifest:
    content_hash: str
    slices: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToyVersion:
    taskset: str
    manifest: Manifest
    numbers: tuple[int, ...]


def load_toy_versions(experiment: ResolvedExperiment) -> Loaded:
    """Each version is ``<version>.txt`` in the task set: one number a line."""
    versions = {}
    for name in experiment.versions:
        text = (experiment.taskset_dir / f"{name}.txt").read_text()
        versions[name] = ToyVersion(experiment.taskset_dir.name, Manifest(sha256_hex(text)),
                                    tuple(int(line) for line in text.split()))
    return Loaded(versions=versions, checks={name: len(v.numbers) for name, v in versions.items()})


def guess_and_land(unit: WorkUnit, ctx: RunContext) -> UnitResult:
    guess = RULES[unit.arm.rule]
    rows = [ToyRow(run_id=ctx.run_id, experiment=ctx.experiment, arm=unit.arm.name, rung=unit.arm.rung,
                   seed=unit.seed, taskset=unit.taskset, taskset_version=unit.taskset_version, n=n,
                   guessed=guess(n), correct=guess(n) == ("even" if n % 2 == 0 else "odd")) for n in unit.batch]
    path = ctx.land(unit, "toy_rows", to_arrow_table(ToyRow, [row.model_dump() for row in rows]))
    return UnitResult(label=unit.label, n_rows=len(rows), n_ok=sum(row.correct for row in rows), n_cache_hits=0,
                      n_failures=0, paths=(str(path),))


def arm_record(arm: ToyArm, common: dict[str, Any]) -> ToyArmRecord:
    return ToyArmRecord(**common, n_tools=0, rule=arm.rule)


@dataclass
class ToyFigures:
    run_id: str
    run: dict[str, Any]
    arms: list[tuple[str, int, int]]


def load_toy_figures(con: Any, run_id: str) -> ToyFigures:
    cursor = con.execute("SELECT * FROM toy_runs WHERE run_id = ?", [run_id])
    run = dict(zip([c[0] for c in cursor.description], cursor.fetchone()))
    arms = con.execute("SELECT arm, n_rows, n_correct FROM toy_accuracy WHERE run_id = ? ORDER BY arm",
                       [run_id]).fetchall()
    return ToyFigures(run_id, run, arms)


def build_toy_report(figures: ToyFigures, verdict: Verdict | None) -> Report:
    table = ReportTable(title="Guesses per arm", columns=["arm", "rows", "right"], key="toy-arms",
                        rows=[[arm, str(n), str(right)] for arm, n, right in figures.arms])
    return Report(run_id=figures.run_id, headline=[f"toy run {figures.run_id}: {len(figures.arms)} arms"],
                  tables=[table], verdict=verdict, figures=figures, title="tooleval toy")
