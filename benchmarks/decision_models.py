"""The trained decision model against plain MiniLM cosine and plain BM25, through the pipeline, with the goals.

    PYTHONPATH=. .venv/bin/python benchmarks/decision_models.py [--bench ../shared/bench] [--workdir DIR]
        [--sets support,bfcl,metatool,bfcl-live,pooled-live,metatool-3k,metatool-3k-rest] [--metatool-limit N]
        [--bfcl-live DIR] [--metatool-all FILE] [--sample 3000] [--shipped FILE]

The sets (each imported with the project's importers into ``--workdir``):

- ``support``: the bundled support set on its 30-tool catalogue;
- ``bfcl``: BFCL v4 "multiple" and ``metatool``: MetaTool dev10, both from ``--bench`` (../shared/bench);
- ``bfcl-live``: BFCL v4 ``live_multiple`` (1,053 requests, each offered its own tools) and ``pooled-live``:
  ``live_multiple`` (slice ``answerable``) and ``live_irrelevance`` (slice ``irrelevant``, every label
  'none') as two slices of one set, label conflicts dropped by the importer. ``--bfcl-live DIR`` is a folder
  holding ``BFCL_v4_live_multiple.json``, ``BFCL_v4_live_irrelevance.json`` and
  ``possible_answer/BFCL_v4_live_multiple.json``, e.g. from the gorilla repository
  (``berkeley-function-call-leaderboard/bfcl_eval/data/``; measured at gorilla 6ea5797);
- ``metatool-3k``: a sample of ``--sample`` (3,000) requests of the whole MetaTool ``all_clean_data.csv``
  (``--metatool-all FILE``, from the MetaTool repository's ``dataset/data/``; measured at 35e81bb): the
  rows with the lowest sha256 of their query text, so the sample is the same on every machine;
- ``metatool-3k-rest``: the same 3,000 requests, scored by a model trained on the rest of
  ``all_clean_data.csv`` (every row whose query text is not in the sample, imported as a task set of its
  own): a router learned from the traffic it has labels for and judged on requests it never saw. The
  ``metatool-3k`` model learns from the 3,000 alone (each fold from 2,400 requests, about 12 per tool).

For each set:

1. ``tooleval train`` learns the decision model from the set's own version, cross-fitted on 5 folds: when
   the experiment runs that version, every request is scored by a fold model that never saw it
   (``metatool-3k-rest``: from the rest of MetaTool, whose texts the sample does not share);
2. sets with 'none' labels: ``tooleval fit`` fits the 'none' cut-off of the embedding router and of the
   trained router on a hash half of the requests and confirms it on the other half; the arms
   ``embedding-fitted`` and ``trained-fitted`` run with them. A set with slices also prints the frontier:
   the trained model's best worst slice under any one margin over its learned 'none' (what ``fit`` fits for
   it) and under any one constant in its place, chosen on the same requests (an upper bound);
3. ``tooleval run`` of an experiment with the arms on the same tools, 3 seeds: ``lexical`` (BM25),
   ``embedding`` (MiniLM cosine), ``trained``, and ``shipped`` (the support set's shipped model, ``--shipped``,
   on every set but its own: how it transfers); the report's figures give accuracy with 95% intervals, ECE,
   the confidence gate's threshold fitted on one half of the requests (lowest confidence whose kept
   decisions are >= 90% right) with accuracy and coverage on the other half, and the paired change of
   ``trained`` against each plain router (Tango's interval, exact McNemar). On a set with slices, the
   margins over the shipped model's learned 'none' that put every slice at or above the embedding arm's
   accuracy as run (chosen on the same requests: whether its frontier passes MiniLM's point).

Prints a markdown table (the ones in docs/measured/decision-models.md), then the goals, each with the
figure measured and ``met`` / ``NOT met``: BFCL live_multiple >= 95%; MetaTool > 82% on the 3,000 sample;
the pooled live set >= 88% on each slice with a fitted cut-off; ECE <= 0.03 (the trained arm, every set);
the shipped model >= MiniLM on every public set. ``--metatool-limit N`` keeps the first N MetaTool dev10
queries (a deterministic subsample: the file's order); the default keeps all 2,079.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BENCH = ROOT.parent / "shared" / "bench"


DEFAULT_SHIPPED = ROOT / "tasksets" / "support" / "models" / "hybrid.json"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def experiment_yaml(path: Path, taskset: Path, catalogue: str, *, cutoffs: dict[str, str] | None = None,
                    shipped: Path | None = None) -> Path:
    """The experiment of one set; ``cutoffs``: arm -> fitted cut-off file (adds ``<arm>-fitted``)."""
    cutoffs = cutoffs or {}
    trained_options = {"model_file": str(path.parent / "hybrid.json")}
    fitted = []
    if "embedding" in cutoffs:
        fitted.append({"name": "embedding-fitted", "selector": "embedding", "model": MINILM,
                       "options": {"abstain_cutoff": cutoffs["embedding"]}})
    if "trained" in cutoffs:
        fitted.append({"name": "trained-fitted", "selector": "trained", "model": "tooleval-hybrid",
                       "options": {**trained_options, "abstain_cutoff": cutoffs["trained"]}})
    shipped_arm = ([{"name": "shipped", "selector": "trained", "model": "tooleval-hybrid",
                     "options": {"model_file": str(shipped)}}] if shipped else [])
    spec = {
        "name": f"decision-models-{taskset.name}", "taskset": str(taskset), "version": "v1", "seeds": [1, 2, 3],
        "batch_size": 500, "defaults": {"catalogue": catalogue, "prompt": "default"},
        "arms": [{"name": "lexical", "selector": "lexical", "model": "bm25-okapi"},
                 {"name": "embedding", "selector": "embedding", "model": MINILM},
                 {"name": "trained", "selector": "trained", "model": "tooleval-hybrid", "options": trained_options},
                 *fitted, *shipped_arm],
        "comparisons": [{"from": "lexical", "to": "trained", "declare": ["model"]},
                        {"from": "embedding", "to": "trained", "declare": ["model"]}],
    }
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def metatool_sample(all_queries: Path, out: Path, size: int) -> Path:
    """The ``size`` rows of ``all_queries`` with the lowest sha256 of their query text (header kept)."""
    with open(all_queries, newline="", encoding="utf-8-sig") as src:
        header, *rows = list(csv.reader(src))
    rows.sort(key=lambda row: hashlib.sha256(row[0].encode()).hexdigest() if row else "")
    with open(out, "w", newline="") as dst:
        csv.writer(dst).writerows([header, *rows[:size]])
    return out


def metatool_rest(all_queries: Path, sample: Path, out: Path) -> Path:
    """The rows of ``all_queries`` whose query text is not in ``sample`` (header kept)."""
    with open(sample, newline="", encoding="utf-8-sig") as src:
        taken = {row[0] for row in list(csv.reader(src))[1:] if row}
    with open(all_queries, newline="", encoding="utf-8-sig") as src:
        header, *rows = list(csv.reader(src))
    with open(out, "w", newline="") as dst:
        csv.writer(dst).writerows([header, *(row for row in rows if row and row[0] not in taken)])
    return out


def prepare_sets(args: argparse.Namespace, workdir: Path, sets: list[str]) -> dict[str, tuple[Path, str, Path]]:
    """set name -> (task-set folder, catalogue name, folder of the version the trained model learns from)."""
    from tasks.importers.bfcl import BfclSource, import_bfcl, import_bfcl_slices
    from tasks.importers.metatool import import_metatool

    bench = args.bench.resolve()
    out: dict[str, tuple[Path, str]] = {}
    if "support" in sets:
        out["support"] = (ROOT / "tasksets" / "support", "giftcards", ROOT / "tasksets" / "support")
    if "bfcl" in sets:
        target = workdir / "bfcl"
        if not (target / "v1.manifest.json").exists():
            import_bfcl(bench / "bfcl" / "BFCL_v4_multiple.json",
                        bench / "bfcl" / "possible_answer" / "BFCL_v4_multiple.json", target)
        out["bfcl"] = (target, "per_request", target)
    live = args.bfcl_live.resolve() if args.bfcl_live else None
    if {"bfcl-live", "pooled-live"} & set(sets) and (live is None or not live.is_dir()):
        raise SystemExit("bfcl-live and pooled-live need --bfcl-live DIR (the BFCL v4 live files: see the docstring)")
    multiple = BfclSource(slice="answerable", questions=live / "BFCL_v4_live_multiple.json",
                          answers=live / "possible_answer" / "BFCL_v4_live_multiple.json") if live else None
    if "bfcl-live" in sets:
        target = workdir / "bfcl-live"
        if not (target / "v1.manifest.json").exists():
            import_bfcl(multiple.questions, multiple.answers, target)
        out["bfcl-live"] = (target, "per_request", target)
    if "pooled-live" in sets:
        target = workdir / "pooled-live"
        if not (target / "v1.manifest.json").exists():
            import_bfcl_slices([multiple, BfclSource(slice="irrelevant", questions=live / "BFCL_v4_live_irrelevance.json",
                                                     label_none=True)], target)
        out["pooled-live"] = (target, "per_request", target)
    if "metatool" in sets:
        target = workdir / "metatool"
        if not (target / "v1.manifest.json").exists():
            queries = bench / "metatool" / "all_clean_data.dev10.csv"
            if args.metatool_limit:
                subset = workdir / "metatool-subset.csv"
                with open(queries, newline="") as src, open(subset, "w", newline="") as dst:
                    rows = list(csv.reader(src))
                    csv.writer(dst).writerows(rows[: args.metatool_limit + 1])
                queries = subset
            import_metatool(bench / "metatool" / "plugin_des.json", queries, target)
        out["metatool"] = (target, "metatool", target)
    if {"metatool-3k", "metatool-3k-rest"} & set(sets):
        if not args.metatool_all or not args.metatool_all.is_file():
            raise SystemExit("metatool-3k needs --metatool-all FILE (MetaTool's all_clean_data.csv: see the docstring)")
        target = workdir / "metatool-3k"
        sample = workdir / f"metatool-sample-{args.sample}.csv"
        if not sample.exists():
            metatool_sample(args.metatool_all, sample, args.sample)
        if not (target / "v1.manifest.json").exists():
            import_metatool(bench / "metatool" / "plugin_des.json", sample, target)
        if "metatool-3k" in sets:
            out["metatool-3k"] = (target, "metatool", target)
        if "metatool-3k-rest" in sets:
            rest = workdir / f"metatool-rest-{args.sample}"
            if not (rest / "v1.manifest.json").exists():
                csv_rest = metatool_rest(args.metatool_all, sample, workdir / f"metatool-rest-{args.sample}.csv")
                import_metatool(bench / "metatool" / "plugin_des.json", csv_rest, rest)
            out["metatool-3k-rest"] = (target, "metatool", rest)
    return out


MARGIN, CONSTANT = "margin over the learned 'none'", "constant in its place"


def _margin_sweep(version_path: Path, model_file: Path, catalogue: str, kinds_wanted=(MARGIN, CONSTANT)):
    """For each kind of cut-off wanted (``MARGIN``, ``CONSTANT``), the candidate cut-offs and a function from a
    cut-off to each slice's accuracy; the model's own utilities (cross-fitted on its training version), every
    request of the version. None without slices."""
    import numpy as np

    from schemas.catalogue import NONE_LABEL
    from tasks.selectors.decision_models.labelled_inputs import labelled_inputs
    from tasks.selectors.decision_models.trained import TrainedSelector
    from tasks.taskset.load_taskset import load_catalogue, load_version

    table = load_version(version_path.parent, version_path.stem).table
    if "slice" not in table.columns:
        return None
    shared = () if catalogue == "per_request" else load_catalogue(version_path.parent, catalogue).tools
    inputs, labels = labelled_inputs(table, shared)
    slices = np.array(table["slice"].to_list(), dtype=object)
    names = sorted(set(slices.tolist()))
    scorers = {MARGIN: lambda: TrainedSelector(options={"model_file": str(model_file)}).none_margins(inputs),
               CONSTANT: lambda: TrainedSelector(options={"model_file": str(model_file),
                                                          "abstain_threshold": "never"}).scores(inputs)}
    none = np.array([label == NONE_LABEL for label in labels])
    kinds = {}
    for kind in kinds_wanted:
        rows = scorers[kind]()
        best = np.array([float(np.max(r)) if r is not None and len(r) else -np.inf for r in rows])
        right = np.array([r is not None and len(r) > 0 and label != NONE_LABEL
                          and item.tools[int(np.argmax(r))].name == label
                          for item, label, r in zip(inputs, labels, rows)])

        def per_slice(cut: float, best=best, right=right) -> dict[str, float]:
            correct = np.where(best < cut, none, right & (best >= cut))
            return {name: float(correct[slices == name].mean()) for name in names}

        kinds[kind] = (np.unique(np.quantile(best[np.isfinite(best)], np.linspace(0, 1, 2001))), per_slice)
    return kinds


def cutoff_frontier(version_path: Path, model_file: Path, catalogue: str) -> list[str]:
    """For a set with 'none' labels and slices: the best the trained model can do on its worst slice under
    any one cut-off of each kind, and where, chosen on the same requests (an upper bound of what a fitted
    cut-off confirms): a margin over its learned 'none' (what ``tooleval fit`` fits) and a constant in place
    of it (what it fitted before). The model's own (cross-fitted) utilities, every request of the version."""
    kinds = _margin_sweep(version_path, model_file, catalogue)
    lines = []
    for kind, (candidates, per_slice) in (kinds or {}).items():
        worst, cut = max((min(per_slice(c).values()), float(c)) for c in candidates)
        shown = " / ".join(f"{name} {pct(acc)}%" for name, acc in per_slice(cut).items())
        lines.append(f"{version_path.parent.name}: trained, best worst slice over every {kind} (chosen on the same "
                     f"requests, an upper bound): {shown} at {cut:.3g}")
    return lines


def margins_at_least(version_path: Path, model_file: Path, catalogue: str, arm: str,
                     targets: dict[str, float]) -> list[str]:
    """Whether some margin over ``model_file``'s learned 'none' puts every slice at or above ``targets`` (another
    arm's accuracy per slice, as run): the margins that do (a range of the candidates), and the figures at the
    one with the widest lead on the worst slice. Chosen on the same requests: it says whether the model's
    frontier passes the other arm's point, not what a fitted cut-off would confirm."""
    kinds = _margin_sweep(version_path, model_file, catalogue, (MARGIN,)) if targets else None
    if not kinds:
        return []
    candidates, per_slice = kinds[MARGIN]
    leads = [(min(acc - targets.get(name, 0.0) for name, acc in per_slice(c).items()), float(c)) for c in candidates]
    above = [c for lead, c in leads if lead >= 0]
    lead, cut = max(leads)
    shown = " / ".join(f"{name} {pct(acc)}% ({pct(targets.get(name))}%)" for name, acc in per_slice(cut).items())
    where = (f"every slice at or above {arm} for margins {min(above):.3g} to {max(above):.3g} of "
             f"{len(candidates)} tried" if above else f"no margin puts every slice at or above {arm}")
    return [f"{version_path.parent.name}: {model_file.name}, {where}; the widest lead on the worst slice at "
            f"{cut:.3g}: {shown} (chosen on the same requests)"]


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


GOALS = ("BFCL live_multiple >= 95%", "MetaTool > 82% on the 3,000 sample",
         "pooled live set >= 88% on each slice with a fitted cut-off", "ECE <= 0.03", "shipped model >= MiniLM")


def goal_lines(levels: dict[tuple[str, str, str], float], eces: dict[tuple[str, str], float],
               floors: dict | None = None) -> list[str]:
    """The goals against the figures measured: (set, arm, slice) -> accuracy; (set, arm) -> ECE and
    (``floors``) the ECE a perfectly calibrated router would show there (tasks/stats/calibration.py)."""
    floors = floors or {}
    def verdict(ok: bool | None) -> str:
        return "not measured" if ok is None else ("met" if ok else "NOT met")

    lines = []
    live = levels.get(("bfcl-live", "trained", "all"))
    lines.append(f"- {GOALS[0]}: trained {pct(live)}% — {verdict(None if live is None else live >= 0.95)}")
    metas = {name: levels[(name, "trained", "all")] for name in ("metatool-3k", "metatool-3k-rest")
             if (name, "trained", "all") in levels}
    shown = ", ".join(f"{pct(acc)}% ({'learned from the rest of MetaTool' if name.endswith('rest') else 'cross-fitted on the 3,000'})"
                      for name, acc in metas.items())
    lines.append(f"- {GOALS[1]}: trained {shown or '-'} — "
                 f"{verdict(None if not metas else max(metas.values()) > 0.82)}")
    pooled = {sl: acc for (name, arm, sl), acc in levels.items() if name == "pooled-live" and arm == "trained-fitted"
              and sl != "all"}
    shown = ", ".join(f"{sl} {pct(acc)}%" for sl, acc in sorted(pooled.items()))
    lines.append(f"- {GOALS[2]}: trained-fitted {shown or '-'} — "
                 f"{verdict(None if not pooled else min(pooled.values()) >= 0.88)}")
    trained_eces = {name: ece for (name, arm), ece in eces.items() if arm == "trained"}
    shown = ", ".join(f"{name} {ece:.3f}" + (f" (a calibrated router: {floors[(name, arm)].median:.3f}, noise "
                                              f"<{floors[(name, arm)].high:.3f})" if (name, arm) in floors else "")
                      for (name, arm), ece in eces.items() if arm == "trained")
    lines.append(f"- {GOALS[3]}: trained {shown or '-'} — "
                 f"{verdict(None if not trained_eces else max(trained_eces.values()) <= 0.03)}")
    pairs = {}
    for (name, arm, sl), acc in levels.items():
        if arm == "shipped" and (name, "embedding", sl) in levels:
            pairs[f"{name}/{sl}" if sl != "all" else name] = (acc, levels[(name, "embedding", sl)])
    shown = ", ".join(f"{key} {pct(a)} vs {pct(b)}" for key, (a, b) in pairs.items())
    lines.append(f"- {GOALS[4]}: shipped vs MiniLM {shown or '-'} — "
                 f"{verdict(None if not pairs else all(a >= b for a, b in pairs.values()))}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/tooleval-decision-models"))
    parser.add_argument("--sets", default="support,bfcl,metatool")
    parser.add_argument("--metatool-limit", type=int, default=None)
    parser.add_argument("--bfcl-live", type=Path, default=None, metavar="DIR")
    parser.add_argument("--metatool-all", type=Path, default=None, metavar="FILE")
    parser.add_argument("--sample", type=int, default=3000)
    parser.add_argument("--shipped", type=Path, default=DEFAULT_SHIPPED, metavar="FILE")
    parser.add_argument("--encoder", default=None, metavar="DIR",
                        help="train the decision models on this local sentence-transformers directory "
                        "(`tooleval train --encoder`); the embedding arm stays MiniLM")
    parser.add_argument("--fine-tune", action="store_true",
                        help="train with `tooleval train --fine-tune` (a fine-tuned encoder per fold model, scoring "
                        "by the product of the logit and the fine-tuned cosine): about half an hour per 1,000 requests "
                        "on 2 CPU cores")
    parser.add_argument("--fine-tune-seed", type=int, default=0, metavar="S",
                        help="with --fine-tune: which draw of the fine-tuning (`tooleval train --fine-tune-seed`)")
    args = parser.parse_args(argv)
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PREFECT_HOME", str(workdir / "prefect-home"))
    from flows import api
    from tasks.selection.figures import ROUTER_TARGET_ACCURACY

    sets = prepare_sets(args, workdir, args.sets.split(","))
    lines = ["| set | arm | accuracy % (95% CI) | ECE | gate threshold | gate confirm: accuracy % (95% CI), coverage % | trained − arm, pts (95% CI), McNemar p |",
             "|---|---|---|---|---|---|---|"]
    notes = []
    levels_found: dict[tuple[str, str, str], float] = {}
    eces: dict[tuple[str, str], float] = {}
    floors: dict[tuple[str, str], object] = {}
    for name, (taskset, catalogue, learn_from) in sets.items():
        folder = workdir / "runs" / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        started = time.perf_counter()
        catalogues = None if catalogue == "per_request" else [catalogue]
        trained = api.train(learn_from / "v1.jsonl", folder / "hybrid.json", catalogues, encoder=args.encoder,
                            fine_tune=args.fine_tune, fine_tune_seed=args.fine_tune_seed,
                            progress=lambda line: print(f"{name}: {line}", flush=True))
        product = trained.model.full_model.expert is not None
        train_s = time.perf_counter() - started
        cv = trained.model.cross_fitted
        notes.append(f"{name}: trained on {len(trained.model.example_ids)} requests in {train_s:.0f} s; "
                     f"cross-fitted accuracy {pct(cv['accuracy'])}%, ECE {cv['ece']:.3f}"
                     + (f" (the logit alone {pct(trained.model.cross_fitted_logit['accuracy'])}%)" if product else ""))
        shipped = args.shipped.resolve() if name != "support" and args.shipped else None
        experiment = experiment_yaml(folder / "experiment.yaml", taskset, catalogue, shipped=shipped)
        cutoffs = {}
        if trained.model.full_model.none is not None:
            for arm in ("embedding", "trained"):
                fitted = api.fit_cutoff(experiment, arm, folder / f"{arm}-cutoff.json")
                c = fitted.cutoff.confirm
                notes.append(f"{name}: {arm} 'none' cut-off fitted on {fitted.cutoff.fit.n_requests} requests: "
                             f"{fitted.cutoff.threshold}; on the other {c.n_requests}: "
                             f"{pct(c.correct_with_cutoff / c.n_requests)}% (never abstaining "
                             f"{pct(c.correct_never_abstaining / c.n_requests)}%, default "
                             f"{pct(c.correct_default / c.n_requests)}%)")
                cutoffs[arm] = f"{arm}-cutoff.json"
            experiment = experiment_yaml(folder / "experiment.yaml", taskset, catalogue, cutoffs=cutoffs,
                                         shipped=shipped)
            if learn_from == taskset:
                notes.extend(cutoff_frontier(taskset / "v1.jsonl", folder / "hybrid.json", catalogue))
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
            cal = calibration.get(arm)
            if cal is not None:
                eces[(name, arm)] = cal.ece
                if cal.ece_if_calibrated is not None:
                    floors[(name, arm)] = cal.ece_if_calibrated
            for level in levels.get(arm, []):
                levels_found[(name, arm, level.slice if len(levels[arm]) > 1 else "all")] = level.accuracy
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
                             f"| {'-' if cal is None else f'{cal.ece:.3f}'}"
                             f"{f' (noise <{cal.ece_if_calibrated.high:.3f})' if cal and cal.ece_if_calibrated else ''} "
                             f"| {'-' if not fit or fit.threshold is None else f'{fit.threshold:.2f}'} "
                             f"| {gate} | {change} |")
        if shipped is not None:  # does the shipped model's frontier pass MiniLM's point on every slice?
            targets = {sl: acc for (n, arm, sl), acc in levels_found.items()
                       if n == name and arm == "embedding" and sl != "all"}
            notes.extend(margins_at_least(taskset / "v1.jsonl", shipped, catalogue, "MiniLM", targets))
    print("\n".join(lines))
    print()
    print(f"gate: the lowest confidence whose kept decisions are >= {ROUTER_TARGET_ACCURACY:.0%} right on the fit half"
          " of the requests (sha256 of the id), judged on the other half")
    for note in notes:
        print(f"- {note}")
    print()
    print("goals:")
    print("\n".join(goal_lines(levels_found, eces, floors)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
