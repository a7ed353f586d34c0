"""The trained decision model against plain MiniLM cosine and plain BM25, through the pipeline.

    PYTHONPATH=. .venv/bin/python benchmarks/decision_models.py [--bench ../shared/bench] [--workdir DIR]
        [--sets support,bfcl,metatool] [--metatool-limit N]

For each set (the bundled support set on its 30-tool catalogue; BFCL v4 "multiple" and MetaTool dev10 from
``--bench``, imported with ``tooleval import``):

1. ``tooleval train`` learns the decision model from the set's own version, cross-fitted on 5 folds: when
   the experiment runs that version, every request is scored by a fold model that never saw it;
2. ``tooleval fit`` fits the 'none' cut-off of the embedding router on a hash half of the requests and
   confirms it on the other half (sets with 'none' labels only; the others never abstain);
3. ``tooleval run`` of an experiment with three arms on the same tools, 3 seeds: ``lexical`` (BM25),
   ``embedding`` (MiniLM cosine), ``trained``; the report's figures give accuracy with 95% intervals, ECE,
   the confidence gate's threshold fitted on one half of the requests (lowest confidence whose kept
   decisions are >= 90% right) with accuracy and coverage on the other half, and the paired change of
   ``trained`` against each plain router (Tango's interval, exact McNemar).

Prints a markdown table (the one in docs/routing/decision-models.md). ``--metatool-limit N`` keeps the first N MetaTool queries (a
deterministic subsample: the file's order) to fit a small time budget; the default keeps all 2,079.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BENCH = ROOT.parent / "shared" / "bench"


def experiment_yaml(path: Path, taskset: Path, catalogue: str, *, cutoff: str | None) -> Path:
    embedding_fitted = ([{"name": "embedding-fitted", "selector": "embedding",
                          "model": "sentence-transformers/all-MiniLM-L6-v2", "options": {"abstain_cutoff": cutoff}}]
                        if cutoff else [])
    spec = {
        "name": f"decision-models-{taskset.name}", "taskset": str(taskset), "version": "v1", "seeds": [1, 2, 3],
        "batch_size": 500, "defaults": {"catalogue": catalogue, "prompt": "default"},
        "arms": [{"name": "lexical", "selector": "lexical", "model": "bm25-okapi"},
                 {"name": "embedding", "selector": "embedding", "model": "sentence-transformers/all-MiniLM-L6-v2"},
                 *embedding_fitted,
                 {"name": "trained", "selector": "trained", "model": "tooleval-hybrid",
                  "options": {"model_file": str(path.parent / "hybrid.json")}}],
        "comparisons": [{"from": "lexical", "to": "trained", "declare": ["model"]},
                        {"from": "embedding", "to": "trained", "declare": ["model"]}],
    }
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def prepare_sets(bench: Path, workdir: Path, sets: list[str], metatool_limit: int | None) -> dict[str, tuple[Path, str]]:
    """set name -> (task-set folder, catalogue name)."""
    from tasks.importers.bfcl import import_bfcl
    from tasks.importers.metatool import import_metatool

    out: dict[str, tuple[Path, str]] = {}
    if "support" in sets:
        out["support"] = (ROOT / "tasksets" / "support", "giftcards")
    if "bfcl" in sets:
        target = workdir / "bfcl"
        if not (target / "v1.manifest.json").exists():
            import_bfcl(bench / "bfcl" / "BFCL_v4_multiple.json",
                        bench / "bfcl" / "possible_answer" / "BFCL_v4_multiple.json", target)
        out["bfcl"] = (target, "per_request")
    if "metatool" in sets:
        target = workdir / "metatool"
        if not (target / "v1.manifest.json").exists():
            queries = bench / "metatool" / "all_clean_data.dev10.csv"
            if metatool_limit:
                subset = workdir / "metatool-subset.csv"
                with open(queries, newline="") as src, open(subset, "w", newline="") as dst:
                    rows = list(csv.reader(src))
                    csv.writer(dst).writerows(rows[: metatool_limit + 1])
                queries = subset
            import_metatool(bench / "metatool" / "plugin_des.json", queries, target)
        out["metatool"] = (target, "metatool")
    return out


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/tooleval-decision-models"))
    parser.add_argument("--sets", default="support,bfcl,metatool")
    parser.add_argument("--metatool-limit", type=int, default=None)
    args = parser.parse_args(argv)
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PREFECT_HOME", str(workdir / "prefect-home"))
    from flows import api
    from tasks.selection.figures import ROUTER_TARGET_ACCURACY

    sets = prepare_sets(args.bench.resolve(), workdir, args.sets.split(","), args.metatool_limit)
    lines = ["| set | arm | accuracy % (95% CI) | ECE | gate threshold | gate confirm: accuracy % (95% CI), coverage % | trained − arm, pts (95% CI), McNemar p |",
             "|---|---|---|---|---|---|---|"]
    notes = []
    for name, (taskset, catalogue) in sets.items():
        folder = workdir / "runs" / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        started = time.perf_counter()
        catalogues = None if catalogue == "per_request" else [catalogue]
        trained = api.train(taskset / "v1.jsonl", folder / "hybrid.json", catalogues)
        train_s = time.perf_counter() - started
        cv = trained.model.cross_fitted
        notes.append(f"{name}: trained on {len(trained.model.example_ids)} requests in {train_s:.0f} s; "
                     f"cross-fitted accuracy {pct(cv['accuracy'])}%, ECE {cv['ece']:.3f}")
        experiment = experiment_yaml(folder / "experiment.yaml", taskset, catalogue, cutoff=None)
        has_none = trained.model.full_model.none is not None
        if has_none:
            fitted = api.fit_cutoff(experiment, "embedding", folder / "embedding-cutoff.json")
            c = fitted.cutoff.confirm
            notes.append(f"{name}: embedding 'none' cut-off fitted on {fitted.cutoff.fit.n_requests} requests: "
                         f"{fitted.cutoff.threshold}; on the other {c.n_requests}: {pct(c.correct_with_cutoff / c.n_requests)}% "
                         f"(never abstaining {pct(c.correct_never_abstaining / c.n_requests)}%, default 0.25 "
                         f"{pct(c.correct_default / c.n_requests)}%)")
            experiment = experiment_yaml(folder / "experiment.yaml", taskset, catalogue, cutoff="embedding-cutoff.json")
        started = time.perf_counter()
        outcome = api.run_experiment(experiment, warehouse=folder / "warehouse")
        run_s = time.perf_counter() - started
        figures = outcome.report.figures
        notes.append(f"{name}: run {figures.run_id}, {figures.run.get('n_rows')} rows in {run_s:.0f} s")
        calibration = {c.arm: c for c in figures.calibration}
        changes = {(c.baseline, c.slice): c.paired for c in figures.slice_changes if c.arm == "trained" and c.tool is None}
        levels: dict[str, list] = {}
        for level in figures.slices:
            levels.setdefault(level.arm, []).append(level)
        for arm in figures.arm_order:
            for level in levels.get(arm, []):
                cal = calibration.get(arm)
                fit = cal.threshold if cal else None
                gate = "-"
                if fit and fit.threshold is not None and fit.confirm_accuracy is not None:
                    ci = fit.confirm_accuracy
                    gate = f"{pct(ci.estimate)} ({pct(ci.low)}–{pct(ci.high)}), {pct(fit.confirm_coverage)}"
                paired = changes.get((arm, level.slice))
                if paired is not None:
                    ch = paired.change
                    change = f"{100 * ch.estimate:+.1f} ({100 * ch.low:+.1f} to {100 * ch.high:+.1f}), p={paired.p_value:.2g}"
                else:
                    change = "-"
                slice_name = f" / {level.slice}" if len(levels[arm]) > 1 else ""
                lines.append(f"| {name}{slice_name} | {arm} | {pct(level.accuracy)} ({pct(level.ci_low)}–{pct(level.ci_high)}) "
                             f"| {cal.ece:.3f} | {'-' if not fit or fit.threshold is None else f'{fit.threshold:.2f}'} "
                             f"| {gate} | {change} |")
    print("\n".join(lines))
    print()
    print(f"gate: the lowest confidence whose kept decisions are >= {ROUTER_TARGET_ACCURACY:.0%} right on the fit half"
          " of the requests (sha256 of the id), judged on the other half")
    for note in notes:
        print(f"- {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
