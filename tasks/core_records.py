"""The records the core and every instrument pass each other: the resolved experiment and its arms
(``ResolvedExperiment``, ``ResolvedArm``, ``ArmContext``, ``ArmRefused``), what an instrument loads for a
run (``Loaded``), and a run's work (``WorkUnit``, ``RunContext`` with where its traces go: ``TraceTarget``,
``UnitResult``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, TypeVar

from tasks.files.content_hash import sha256_hex
from tasks.instrument_registry import landed_folders
from warehouse.parquet_store import write_partition

if TYPE_CHECKING:  # pyarrow only by a unit that lands rows; the schemas' pydantic models by their readers
    import pyarrow as pa

    from schemas.experiment import ExperimentFile
    from schemas.taskset import ProductionWeights

T = TypeVar("T")


class ArmRefused(Exception):
    """An arm that cannot run as written: (rule, message) pairs, placed by the core at the arm."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"[{rule}] {message}" for rule, message in problems))
        self.problems = problems


@dataclass(frozen=True, kw_only=True)
class ResolvedArm:
    """An arm with every respect filled in and its prompt read; each instrument adds its artefact."""

    instrument: ClassVar[str]
    name: str
    rung: int
    prompt_name: str
    prompt_text: str
    model_id: str
    version: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def prompt_hash(self) -> str:
        return sha256_hex(self.prompt_text)

    @property
    def provider(self) -> str | None:
        """The hosted-model API the arm's model answers through ('openai' / 'anthropic'); None when the arm
        calls none (an offline selector or agent)."""
        return None

    def respect(self, respect: str) -> Any:
        """What the arm is in one respect; two arms differ in a respect when these differ."""
        common = {"prompt": self.prompt_hash, "model": self.model_id, "version": self.version}
        return common[respect] if respect in common else self.own_respect(respect)

    def own_respect(self, respect: str) -> Any:
        raise KeyError(respect)


@dataclass
class ArmContext:
    """Where an experiment's arms are resolved: its task set and folder, and what its arms share (a prompt,
    a catalogue or a surface is read once however many arms name it)."""

    taskset_dir: Path
    experiment_dir: Path
    _read: dict[tuple[str, str], Any] = field(default_factory=dict)

    def once(self, kind: str, name: str, read: Callable[[], T]) -> T:
        if (kind, name) not in self._read:
            self._read[(kind, name)] = read()
        return self._read[(kind, name)]

    def prompt(self, name: str) -> str:
        from tasks.taskset.load_taskset import load_prompt

        return self.once("prompt", name, lambda: load_prompt(self.taskset_dir, name))


@dataclass(frozen=True)
class ResolvedComparison:
    baseline: str
    arm: str
    changed: tuple[str, ...]


@dataclass(frozen=True)
class ResolvedExperiment:
    path: Path
    experiment_hash: str
    spec: ExperimentFile
    taskset_dir: Path
    arms: tuple[ResolvedArm, ...]
    comparisons: tuple[ResolvedComparison, ...]
    instrument: str
    """The instrument the experiment measures with (tasks/instrument_registry.py)."""
    instrument_note: str | None = None
    """Said when the file does not name its instrument and it was inferred from its arms."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def seeds(self) -> list[int]:
        return self.spec.seeds

    @property
    def versions(self) -> list[str]:
        return sorted({arm.version for arm in self.arms})

    def arm(self, name: str) -> ResolvedArm:
        return next(a for a in self.arms if a.name == name)


@dataclass(frozen=True)
class Loaded:
    """What an instrument loads for a run: each version the arms use and what its checks found."""

    versions: dict[str, Any]
    checks: dict[str, Any]
    weights: ProductionWeights | None = None
    """The production weights window the experiment names (selection: the weighted figures)."""


DEFAULT_PROJECT = "tooleval"
"""Phoenix project the spans land in unless the tracing block names another."""


@dataclass(frozen=True)
class TraceTarget:
    """An OTLP/HTTP collector (Phoenix serves OTLP and its REST API on one port)."""

    host: str
    port: int
    project: str = DEFAULT_PROJECT

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def endpoint(self) -> str:
        """As ``--trace`` takes it (and ``runs.trace_endpoint`` records it): otlp://HOST:PORT."""
        return f"otlp://{self.host}:{self.port}"

    @property
    def traces_url(self) -> str:
        """The OTLP/HTTP traces endpoint."""
        return f"{self.base_url}/v1/traces"

    def __str__(self) -> str:
        return f"{self.endpoint} (project {self.project})"


class WorkUnit:
    """A batch of one arm's work items under one seed.

    ``batch`` is a slice of the version's work items: in the planning process a zero-copy slice of the one
    table (or tuple); pickled (Dask and Ray workers), only its own items.

    A plain class on purpose, not a dataclass: Prefect walks dataclass and pydantic parameters field by
    field looking for futures, twice per task; an instance is a leaf to that walk.
    """

    __slots__ = ("arm", "seed", "batch_index", "batch", "taskset", "taskset_version")

    def __init__(self, *, arm: ResolvedArm, seed: int, batch_index: int, batch: Any, taskset: str,
                 taskset_version: str) -> None:
        self.arm = arm
        self.seed = seed
        self.batch_index = batch_index
        self.batch = batch
        self.taskset = taskset
        self.taskset_version = taskset_version

    def __repr__(self) -> str:
        return f"WorkUnit({self.label}, {self.n_items} items)"

    @property
    def label(self) -> str:
        return f"{self.arm.name}/seed={self.seed}/batch={self.batch_index}"

    @property
    def n_items(self) -> int:
        return len(self.batch)


@dataclass(frozen=True)
class RunContext:
    """What every unit of one run shares."""

    run_id: str
    experiment: str
    warehouse: Path
    """The warehouse folder: each landed table's partitions lie in its folder below it."""
    cache_path: Path | None
    """The instrument's per-item result cache; None: no caching."""
    ledger_path: Path | None = None
    """The run's budget ledger (tasks/selectors/providers/call_budget.py), shared by every process; None keeps it in memory."""
    max_calls: int | None = None
    """Call cap of the run (hosted models), None for no cap."""
    max_spend_usd: float | None = None
    """Spend cap of the run in US dollars, None for no cap."""
    prefix_lanes: bool = True
    """Hosted arms (selectors and task agents): one (arm, seed) at a time per endpoint (``prefix_lanes``); off only
    to measure the difference (benchmarks/prefix_cache.py)."""
    trace: TraceTarget | None = None
    """Where the run's traces go (``--trace`` / the experiment's ``tracing:``); None: no tracing, no import."""
    batch: bool = False
    """Hosted chat requests go through the providers' batch APIs unless an arm says otherwise (``--batch`` / the
    experiment's ``batch:``)."""
    batch_wait: str = "hold"
    """'hold': a unit waits in its task until its batches end; 'detach': it submits, polls once, and a request
    still waiting stops the run before registering (``--batch-wait`` / the experiment's ``batch_wait:``)."""

    def land(self, unit: WorkUnit, table: str, rows: pa.Table) -> Path:
        """Write one unit's rows of one landed table as its Parquet partition (atomic, named by the unit)."""
        return write_partition(self.warehouse / landed_folders()[table], self.run_id, unit.arm.name, unit.seed,
                               unit.batch_index, rows)


@dataclass(frozen=True)
class UnitResult:
    """What a unit did, for the run's summary and its progress line."""

    label: str
    n_rows: int
    """Items landed: selection rows, task runs."""
    n_ok: int
    """Of which good: correct selections, successful task runs."""
    n_cache_hits: int
    n_failures: int
    """Of which failed: invalid, error or empty rows; task runs that could not be carried out (a provider
    error, the run's budget, a failed surface)."""
    n_budget_stopped: int = 0
    """Of which not carried out because the run's spend or call cap was reached: rerun to resume."""
    pending_batches: tuple[str, ...] = ()
    """A detached unit whose batches have not ended: their ids (it landed nothing; a rerun picks them up)."""
    paths: tuple[str, ...] = ()
    """The Parquet files landed."""
