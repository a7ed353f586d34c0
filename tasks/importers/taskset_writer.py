"""What every importer shares: the summary it prints and the writing of a new task-set folder."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from schemas.catalogue import CatalogueFile
from schemas.selection.experiment import SelectionExperimentFile
from schemas.taskset import LabelledRequest, VersionManifest
from tasks.files.content_hash import file_sha256
from tasks.files.input_errors import InputError
from tasks.files.json_lines import write_jsonl
from tasks.files.write_probe import nearest_existing
from tasks.taskset.load_taskset import freeze_version

VERSION = "v1"
"""Every import writes the first version of a new task set."""

SHOWN_DETAILS = 20
"""How many dropped rows ``ImportSummary.lines`` lists before summarising the rest."""


@dataclass(frozen=True)
class ImportSummary:
    """What an import wrote and what it left out, for the CLI to print."""

    source: str
    """Which importer ran: 'bfcl' or 'metatool'."""
    out: Path
    """The task-set folder written."""
    n_requests: int
    """Requests in ``v1.jsonl``."""
    n_tools: int
    """Distinct tool names (catalogue tools for MetaTool; names across all requests for BFCL)."""
    dropped: dict[str, int] = field(default_factory=dict)
    """Source rows left out, by reason (e.g. duplicate, label_conflict, unknown_tool)."""
    dropped_rows: tuple[str, ...] = ()
    """One readable line per dropped row or group of rows."""
    notices: tuple[str, ...] = ()
    """Oddities noticed in the source that did not change what was imported."""
    content_hash: str = ""
    """The frozen version's content hash."""

    @property
    def n_dropped(self) -> int:
        return sum(self.dropped.values())

    def lines(self) -> list[str]:
        """Human-readable lines: what was written, then what was dropped and why, then notices."""
        lines = [
            f"{self.source}: wrote task set {self.out} ({VERSION}, hash {self.content_hash[:12]})",
            f"  requests: {self.n_requests}   tools: {self.n_tools}",
        ]
        if self.n_dropped:
            reasons = ", ".join(f"{reason} {count}" for reason, count in self.dropped.items() if count)
            lines.append(f"  dropped {self.n_dropped} source rows: {reasons}")
            lines += [f"    {detail}" for detail in self.dropped_rows[:SHOWN_DETAILS]]
            hidden = len(self.dropped_rows) - SHOWN_DETAILS
            if hidden > 0:
                lines.append(f"    ... and {hidden} more (listed in {VERSION}.manifest.json notes)")
        else:
            lines.append("  dropped: nothing")
        lines += [f"  notice: {notice}" for notice in self.notices]
        experiments = self.out / "experiments"
        lines += [f"next: tooleval run {experiments / OFFLINE_EXPERIMENT}   (BM25 and MiniLM: runs as written)",
                  f"      tooleval train {self.out / (VERSION + '.jsonl')} --out {self.out / MODEL_FILE}",
                  f"      tooleval run {experiments / TRAINED_EXPERIMENT}   (adds the decision model just trained)"]
        return lines


def file_digest(path: Path) -> str:
    """First 12 hex digits of the file's sha256, to name a source file unambiguously in notes."""
    return file_sha256(path)[:12]


def refuse_frozen(out: Path) -> None:
    """Versions are never overwritten: refuse a folder that already holds a frozen v1, and an ``--out``
    that is a file or lies under one (it could never hold the task set)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError.one(str(out), "", "out-folder", "--out is a file, not a folder: give a new folder for the "
                             "task set (it is created)")
    parent = nearest_existing(out.parent)
    if parent.exists() and not parent.is_dir():
        raise InputError.one(str(out), "", "out-folder", f"--out cannot be made: {parent} is a file, not a folder")
    if not os.access(parent if not out.exists() else out, os.W_OK):
        raise InputError.one(str(out), "", "out-folder", f"--out is not writable: no permission to write in "
                             f"{parent if not out.exists() else out}; choose another folder")
    manifest = out / f"{VERSION}.manifest.json"
    if manifest.exists():
        raise InputError.one(
            str(manifest), "", "version-immutable",
            f"{out} already holds a frozen {VERSION}; import into a new folder (task-set versions are never "
            "overwritten).",
        )


DEFAULT_PROMPT = """\
You route a user's request to a tool. Read the conversation and the tools offered, then call the one
tool that fits the user's last request best. If none of the offered tools fits, call no tool and say so
briefly. Call at most one tool.
"""


MODEL_FILE = "models/hybrid.json"
"""Where the imported set's trained decision model goes (``tooleval train``), relative to the task-set folder."""


OFFLINE_EXPERIMENT = "offline.yaml"
"""The experiment that runs straight after the import: the two offline routers, nothing to train first."""
TRAINED_EXPERIMENT = "offline-trained.yaml"
"""The same experiment plus the ``trained`` arm: it runs once ``tooleval train`` has written ``MODEL_FILE``
(before, ``tooleval run`` refuses it with ``[router-files]``, naming the command)."""


def data_name(*stems: str) -> str:
    """An experiment name made of the data it reads: ``('BFCL_v4_live_multiple',)`` -> ``bfcl-v4-live-multiple``;
    lower case, runs of other characters as one '-'."""
    return "-".join(filter(None, (re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-") for stem in stems))) or "data"


def offline_experiment_yaml(name: str, description: str, catalogue: str, *, trained: bool = False) -> str:
    """An experiment of the set read by the offline selectors (BM25 and MiniLM cosine; with ``trained``,
    also the decision model trained on the set, cross-fitted), validated as an SelectionExperimentFile."""
    trained_arm = f"""\
  # the decision model learned from this set (`tooleval train`, cross-fitted: each request is scored by a
  # fold model that never saw it); it must be trained before this file runs
  - {{name: trained, selector: trained, model: tooleval-hybrid, options: {{model_file: ../{MODEL_FILE}}}}}
""" if trained else ""
    trained_comparison = "  - {from: embedding, to: trained, declare: [model]}\n" if trained else ""
    text = f"""\
name: {json.dumps(name + ("-trained" if trained else ""))}
description: {json.dumps(description, ensure_ascii=False)}
taskset: ..          # the task-set folder, relative to this file
version: {VERSION}
seeds: [1, 2, 3]
batch_size: 200
defaults: {{catalogue: {catalogue}, prompt: default}}
arms:
  - {{name: lexical, selector: lexical, model: bm25-okapi}}
  - {{name: embedding, selector: embedding, model: sentence-transformers/all-MiniLM-L6-v2}}
{trained_arm}comparisons:
  - {{from: lexical, to: embedding, declare: [model]}}   # selector and model change together
{trained_comparison}"""
    SelectionExperimentFile.model_validate(yaml.safe_load(text))
    return text


def offline_experiments(name: str, description: str, catalogue: str) -> dict[str, str]:
    """File name -> text of the two experiments an importer writes: ``OFFLINE_EXPERIMENT``, which runs as
    written, and ``TRAINED_EXPERIMENT``, which adds the decision model. Two files rather than one whose
    ``trained`` arm fails until trained: the import is instant and never trains (training takes seconds to
    minutes), and the model file cannot exist yet in the new folder the import writes."""
    return {OFFLINE_EXPERIMENT: offline_experiment_yaml(name, description, catalogue),
            TRAINED_EXPERIMENT: offline_experiment_yaml(name, description, catalogue, trained=True)}


def write_taskset(
    out: Path,
    requests: list[LabelledRequest],
    *,
    slices: list[str],
    notes: str,
    experiments: dict[str, str],
    catalogues: tuple[CatalogueFile, ...] = (),
) -> VersionManifest:
    """Write a new task-set folder; the manifest comes last, so a crash leaves no frozen version behind."""
    out = Path(out)
    refuse_frozen(out)
    (out / "experiments").mkdir(parents=True, exist_ok=True)
    (out / "prompts").mkdir(exist_ok=True)
    if catalogues:
        (out / "catalogues").mkdir(exist_ok=True)
    for catalogue in catalogues:
        (out / "catalogues" / f"{catalogue.name}.json").write_text(
            catalogue.model_dump_json(indent=2, exclude_none=True) + "\n"
        )
    (out / "prompts" / "default.md").write_text(DEFAULT_PROMPT)
    for file_name, text in experiments.items():
        (out / "experiments" / file_name).write_text(text)
    write_jsonl(out / f"{VERSION}.jsonl", requests)
    return freeze_version(out, VERSION, slices, notes=notes)
