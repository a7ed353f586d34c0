"""The report of a task run, as the core's report tables (tasks/report: the verdict first, then these, in the
terminal, markdown and HTML): task success per slice and arm with intervals, each arm over every task with
its tokens and cost, the paired comparisons, the interaction table, the per-tool counters beside the aggregate
they hide, the first-call intent cross-tab, the counters allowed to get worse (and their split into the
actions the task asked for and the rest), and how runs ended."""

from __future__ import annotations

from typing import Any

from schemas.criteria import Verdict
from tasks.report.format import change_span, p_value, pct, pct_with_fraction, points, seeds_text
from tasks.report.version_calibration import version_calibration_table
from tasks.report_types import Report, ReportTable
from tasks.run.unpinned_cache import report_notes
from tasks.surface.coverage_table import coverage_lines, coverage_tables
from tasks.surface.figures import RESPECT_WORDS, SurfaceFigures
from tasks.surface.gates import arms_met_drift, arms_not_judged, task_runs_not_carried_out

BASELINE_NOTE = ("{arms} run{s} the offline baseline agent: a lexical router and schema-guided argument filling, "
                 "not an LLM. It does not read prompts, so a comparison that changes only the prompt "
                 "({pairs}) measures nothing for it; point the same arms at a hosted model to measure the prompt.")


def _n(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else ("—" if value is None else f"{value:.2f}")


def _rate_cells(unjudged: dict[str, str], r: dict[str, Any]) -> list[str]:
    """The success, 95% CI, per-seed and spread cells of a row; 'NOT JUDGED' and '—' for an arm no gate can judge
    (``arms_not_judged``: most of its runs not carried out, or a server that changed mid-run): what it did not
    measure is never a rate, a per-seed 0.0 or a spread."""
    if r["arm"] in unjudged:
        return [f"NOT JUDGED ({r['successes']:,}/{r['n']:,})", "—", "—", "—"]
    return [pct_with_fraction(r["successes"], r["n"]), f"{pct(r['ci_low'])}–{pct(r['ci_high'])}",
            seeds_text(r["seed_successes"]), f"{100 * r['seed_spread']:.1f}"]


def drift_lines(figures: SurfaceFigures) -> list[str]:
    """'NOT JUDGED A: ...' for each arm whose MCP server changed during the run, with its reason (first screen)."""
    return [f"NOT JUDGED {arm}: {reason}" for arm, reason in arms_met_drift(figures).items()]


def success_table(figures: SurfaceFigures) -> ReportTable:
    unjudged = arms_not_judged(figures)
    return ReportTable(
        "Task success by slice and arm (slices are never averaged together)",
        ["version", "slice", "arm", "tasks×seeds", "success", "95% CI", "per seed", "spread"],
        [[r["taskset_version"], r["slice"], r["arm"], f"{r['n_tasks']}×{r['n_seeds']}", *_rate_cells(unjudged, r)]
         for r in figures.success],
        note="95% CI: Wilson on the effective number of tasks (seeds of one task are correlated); spread = max - "
             "min over seeds, the noise floor.", key="success", summary=True)


def _tokens(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _usd(value: float | None) -> str:
    return "—" if value is None else f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def _unbilled_words(figures: SurfaceFigures, unbilled: list[str]) -> str:
    """Why each arm billed no tokens: the offline baseline calls no model; a hosted arm's model answered no call
    (a dead server, a refused key), said with the task runs that could not be carried out."""
    agents = {a["arm"]: a["agent"] for a in figures.arms}
    offline = [arm for arm in unbilled if agents.get(arm) == "baseline"]
    words = [f"{', '.join(offline)}: no tokens billed (—): the offline baseline calls no model."] if offline else []
    failed = task_runs_not_carried_out(figures)
    for arm in (arm for arm in unbilled if arm not in offline):
        n_failed, n = failed.get(arm, (0, 0))
        words.append(f"{arm}: no tokens billed (—): no call to its model ({agents.get(arm)}) was answered with a "
                     f"bill; {n_failed:,} of {n:,} task runs could not be carried out.")
    return " ".join(words)


def arm_success_table(figures: SurfaceFigures) -> ReportTable:
    """Each arm over every task of its version, with the slice table's interval, and what it cost."""
    unjudged = arms_not_judged(figures)
    rows = [[r["taskset_version"], r["arm"], f"{r['n_tasks']}×{r['n_seeds']}",
             *_rate_cells(unjudged, r), _tokens(r["input_tokens_per_turn"]),
             _tokens(r["input_tokens_per_run"]), _tokens(r["output_tokens_per_run"]), _usd(r["cost_usd_per_run"]),
             _usd(r["cost_usd"])] for r in figures.arm_success]
    unbilled = [r["arm"] for r in figures.arm_success if not r["runs_billed"]]
    note = ("Every task of the version counted once (a slice weighs by its number of tasks): not an average of "
            "the slice figures above, which are what a change is judged on. 95% CI as for a slice: Wilson on the "
            "effective number of tasks. Tokens (input per turn and per run, output per run) and cost as billed over "
            "every turn of a run.")
    if unbilled:
        note += " " + _unbilled_words(figures, unbilled)
    return ReportTable(
        "Task success, tokens and cost per arm, over every task",
        ["version", "arm", "tasks×seeds", "success", "95% CI", "per seed", "spread", "input/turn", "input/run",
         "output/run", "cost/run", "cost"], rows, note=note, key="arm-success",
        summary=True)


def comparison_table(figures: SurfaceFigures) -> ReportTable:
    rows = []
    unjudged = arms_not_judged(figures)
    for c in figures.comparisons:
        p = c.paired
        flag = " (instrument)" if c.calibration else (" (measures nothing)" if c.measures_nothing else "")
        named = [arm for arm in (c.baseline, c.arm) if arm in unjudged]
        if named:  # a change with an arm that measured nothing is not a measured change
            rows.append([f"{c.baseline} -> {c.arm}", ", ".join(c.changed) + flag, c.slice,
                         f"NOT JUDGED ({', '.join(named)})", "—", "—", "—"])
            continue
        rows.append([f"{c.baseline} -> {c.arm}", ", ".join(c.changed) + flag, c.slice,
                     f"{pct(p.accuracy_from)} -> {pct(p.accuracy_to)}",
                     f"{points(p.change.estimate) or '0.0'} ({change_span(p.change)})",
                     f"{p.worse} / {p.better} of {p.n_requests}", p_value(p.p_value)])
    return ReportTable(
        "Paired comparisons on the same tasks (over every seed of each task)",
        ["comparison", "changed", "slice", "from -> to", "change (95% CI)", "worse / better", "p"], rows,
        note="worse / better = tasks that succeeded under fewer / more of their seeds after than before; CI: paired "
             "score interval over every seed of every task (the task is the cluster); p: the score test that CI "
             "inverts (below 0.05 exactly when the CI excludes 0). A comparison that changes only the version calibrates the new version (a change of "
             "instrument, not of the agent).", key="comparisons", summary=True)


VERSION_NOTE = (" The version measures nothing here: the table is computed on the tasks all four arms ran, the same "
                "tasks under both versions, so the version's effect is 0 but for noise, and the interval around the "
                "gap says nothing about how the version interacts with the other change. The version calibration "
                "table reads each version over its own tasks.")


def _respect_words(respect: str, prompt_measures_nothing: bool) -> str:
    """A factor of a 2x2 that cannot move the figures is marked so: a prompt the agents do not read, and a
    version, whose 2x2 is read on the tasks every arm ran (the tasks both versions share)."""
    word = RESPECT_WORDS.get(respect, respect)
    nothing = respect == "taskset_version" or (respect == "prompt_hash" and prompt_measures_nothing)
    return f"{word} (measures nothing)" if nothing else word


def _versions(figures: SurfaceFigures, arms: list[str]) -> str:
    """The task-set versions the arms of a 2x2 run, each with its arms when they differ."""
    by_version: dict[str, list[str]] = {}
    for arm in arms:
        by_version.setdefault(figures.arm(arm)["taskset_version"], []).append(arm)
    if len(by_version) == 1:
        return f"version {next(iter(by_version))}"
    return "versions " + "; ".join(f"{v}: {', '.join(names)}" for v, names in sorted(by_version.items()))


def interaction_tables(figures: SurfaceFigures) -> list[ReportTable]:
    tables: list[ReportTable] = []
    for found in figures.interactions:
        f, t = found.factorial, found.table
        nothing = figures.prompt_measures_nothing(f.baseline, f.first, f.second, f.both)
        title = (f"Interaction: {_respect_words(f.first_respect, nothing)} x "
                 f"{_respect_words(f.second_respect, nothing)} "
                 f"({_versions(figures, [f.baseline, f.first, f.second, f.both])}), "
                 f"{f.baseline} / {f.first} / {f.second} / {f.both}")
        if not tables or tables[-1].title != title:
            note = ("additive prediction = baseline + each change's own effect; a negative gap means the two "
                    "changes repair an overlapping share of the same failures (sub-additive).")
            if nothing and "prompt_hash" in (f.first_respect, f.second_respect):
                note += (" The prompt measures nothing here: the agents of these arms do not read it, so its effect "
                         "and the gap are 0 by construction, and the interval around the gap says nothing about how "
                         "the two changes interact.")
            if "taskset_version" in (f.first_respect, f.second_respect):
                note += VERSION_NOTE
            tables.append(ReportTable(
                title, ["slice", "tasks", "baseline", "effects", "additive prediction", "measured", "gap (95% CI)"], [],
                note=note, key=f"interaction-{len(tables) + 1}"))
        table = tables[-1]
        table.rows.append([found.slice, str(t.n_requests), pct(t.baseline),
                           f"{points(t.first_effect) or '0.0'} / {points(t.second_effect) or '0.0'}",
                           pct(t.additive_prediction), pct(t.both),
                           f"{points(t.gap.estimate) or '0.0'} ({change_span(t.gap)})"])
    return tables


def _same_as_earlier(tables: list[ReportTable], table: ReportTable) -> ReportTable:
    """An arm whose table equals an earlier arm's, cell for cell, is printed as one line saying so."""
    for earlier in tables:
        if earlier.rows and earlier.rows == table.rows and earlier.columns == table.columns:
            arm = earlier.title.rsplit("arm ", 1)[-1]
            return ReportTable(table.title, [], [], note=f"the same as arm {arm}, row for row", key=table.key)
    return table


def tool_tables(figures: SurfaceFigures) -> list[ReportTable]:
    tables: list[ReportTable] = []
    totals = {r["arm"]: r for r in figures.call_totals}
    for arm in [a["arm"] for a in figures.arms]:
        rows = [r for r in figures.tool_counters if r["arm"] == arm]
        total = totals.get(arm)
        table = ReportTable(f"Per-tool counters, arm {arm}",
                            ["tool", "calls", "invalid", "invalid rate", "as text", "errors", "error rate", "retries",
                             "calls/run where it appears"], [], key=f"tools-{arm}")
        for r in rows:
            table.rows.append([r["tool"], _n(r["calls"]), _n(r["invalid"]), pct(r["invalid_rate"]), _n(r["as_text"]),
                               _n(r["errors"]), pct(r["error_rate"]), _n(r["retries"]),
                               f"{r['calls_per_run_with_tool']:.2f}"])
        if total and total["calls"]:
            table.rows.append(["(all tools)", _n(total["calls"]), _n(total["invalid"]), pct(total["invalid_rate"]),
                               _n(total["as_text"]), _n(total["errors"]), pct(total["error_rate"]), _n(total["retries"]),
                               f"{total['calls_per_run_with_call']:.2f}"])
            table.note = (
                f"aggregate invalid rate {total['invalid']:,}/{total['calls']:,} = {pct(total['invalid_rate'])}, an "
                f"average over per-tool rates from {pct(total['tool_invalid_min'])} to {pct(total['tool_invalid_max'])}: "
                "it weights each tool by how often it is called and describes none of them. Calls/run where it "
                f"appears: over the runs with a call of the tool; for (all tools), the {total['runs_with_call']:,} "
                f"runs with any call ({total['calls_per_run']:.2f} over all {total['runs']:,} runs).")
        tables.append(_same_as_earlier(tables, table))
    return tables


def first_call_tables(figures: SurfaceFigures) -> list[ReportTable]:
    tables: list[ReportTable] = []
    for arm in [a["arm"] for a in figures.arms]:
        table = ReportTable(f"First call by declared intent, arm {arm}",
                            ["intent", "first tool", "runs", "share of intent"], [], key=f"first-calls-{arm}")
        for r in figures.first_calls:
            if r["arm"] == arm:
                table.rows.append([r["intent"], r["first_tool"], f"{r['n']} of {int(r['intent_runs'])}",
                                   pct(r["share_of_intent"])])
        tables.append(_same_as_earlier(tables, table))
    if tables:
        tables[0].note = ("An intent split close to evenly between two tools means they are interchangeable from "
                          "where the agent stands; a tool taking nearly all of its intent routes.")
    return tables


def side_effect_table(figures: SurfaceFigures) -> ReportTable:
    table = ReportTable("Counters allowed to get worse (gateable in the criteria file)",
                        ["arm", "attempted", "completed", "irreversible", "per 100 attempted", "per 100 completed",
                         "upstream reads", "per run", "per executed call", "handed to a human"], [], key="side-effects")
    unjudged = arms_not_judged(figures)
    for r in figures.side_effects:
        if r["arm"] in unjudged:  # most of its runs were never carried out: no counter of it is a measurement
            table.rows.append([r["arm"], _n(r["attempted"]), _n(r["completed"]), "NOT JUDGED", *["—"] * 6])
            continue
        table.rows.append([r["arm"], _n(r["attempted"]), _n(r["completed"]), _n(r["irreversible_actions"]),
                           f"{r['irreversible_per_100_attempted']:.1f}", _fixed(r["irreversible_per_100_completed"]),
                           _n(r["upstream_reads"]), f"{r['upstream_reads_per_run']:.2f}",
                           _fixed(r["upstream_reads_per_call"], 2),
                           pct_with_fraction(r["handed_to_human"], r["attempted"])])
    table.note = ("Irreversible actions per 100 completed runs divide by the runs that met their assertion: an arm "
                  "that completes more tasks reaches more actions legitimately. Upstream reads per executed call "
                  "(calls rejected as invalid never reach a backend and are left out) show calls that got heavier "
                  "even when runs got shorter; the upstream_reads gate's per: call reads this figure.")
    return table


WANTED_RULE = ("Wanted = the task asked for it: an action matching the task's `wants`, or, for a task that "
               "declares neither `wants` nor `forbids`, any action of a run that met its assertion. Unwanted = the "
               "rest: matching `forbids` or `not_called`, a `wants` tool with other arguments, another irreversible "
               "action of a task that declares `wants`, any action of a failed run of a task that declares nothing "
               "(a $120 refund in a run asked to refund $500). The unwanted actions are the ones a human has to read.")


def _fixed(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def wanted_table(figures: SurfaceFigures) -> ReportTable:
    """The counters allowed to get worse, split into what the task asked for and the rest."""
    table = ReportTable("Irreversible actions and upstream reads: wanted and unwanted (gateable)",
                        ["arm", "wanted", "per 100 attempted", "per 100 completed", "unwanted", "per 100 attempted",
                         "per 100 completed", "unwanted reads", "per run", "share of reads"], [],
                        key="side-effects-wanted")
    declaring = 0
    unjudged = arms_not_judged(figures)
    for r in figures.side_effects:
        declaring += r["runs_declaring"] or 0
        if r["arm"] in unjudged:
            table.rows.append([r["arm"], "NOT JUDGED", *["—"] * 8])
            continue
        reads = r["upstream_reads"]
        unwanted_reads = r["upstream_reads_unwanted"]
        table.rows.append([r["arm"], _n(r["irreversible_wanted"]), _fixed(r["irreversible_wanted_per_100_attempted"]),
                           _fixed(r["irreversible_wanted_per_100_completed"]), _n(r["irreversible_unwanted"]),
                           _fixed(r["irreversible_unwanted_per_100_attempted"]),
                           _fixed(r["irreversible_unwanted_per_100_completed"]), _n(unwanted_reads),
                           _fixed(r["upstream_reads_unwanted_per_run"], 2),
                           pct(unwanted_reads / reads if reads and unwanted_reads is not None else None)])
    declared = ("no task of this run declares `wants` or `forbids`: the run's outcome decided every action."
                if not declaring else f"{declaring:,} of the runs are of tasks that declare `wants` or `forbids`.")
    table.note = f"{WANTED_RULE} Here {declared}"
    return table


def stop_table(figures: SurfaceFigures) -> ReportTable:
    reasons = sorted({r["stop_reason"] for r in figures.stop_reasons})
    table = ReportTable("How runs ended", ["arm", *reasons], [], key="stops")
    for arm in [a["arm"] for a in figures.arms]:
        counts = {r["stop_reason"]: r["n"] for r in figures.stop_reasons if r["arm"] == arm}
        table.rows.append([arm, *(_n(counts.get(reason, 0)) for reason in reasons)])
    table.note = unfilled_words(figures)
    return table


def unfilled_lines(figures: SurfaceFigures) -> list[str]:
    """A headline line per argument the agent could not fill (every report format prints the headline):
    'Calls failed because the agent could not fill argument target: A-plain 15, C-focused 15 (How runs ended)'."""
    by_argument: dict[str, list[str]] = {}
    for r in figures.unfilled_arguments:
        by_argument.setdefault(r["argument"], []).append(f"{r['arm']} {r['calls']:,}")
    return [f"Calls failed because the agent could not fill argument {argument}: {', '.join(arms)} (invalid, never "
            "executed; see How runs ended)" for argument, arms in by_argument.items()]


def unfilled_words(figures: SurfaceFigures) -> str:
    """'Calls failed because the agent could not fill argument target: A-plain 15 (git_diff; in 15 task runs), ...',
    and the task runs that made no other call (not carried out), or '' when no call did."""
    if not figures.unfilled_arguments:
        return ""
    by_argument: dict[str, list[str]] = {}
    only: dict[str, tuple[int, int]] = {}
    for r in figures.unfilled_arguments:
        by_argument.setdefault(r["argument"], []).append(
            f"{r['arm']} {r['calls']:,} ({', '.join(r['tools'])}; in {r['runs']:,} task runs)")
        only[r["arm"]] = (r["runs_only_unfilled"], r["arm_runs"])
    counted = ", ".join(f"{arm} {n:,} of {total:,}" for arm, (n, total) in only.items() if n)
    return (" ".join(f"Calls failed because the agent could not fill argument {argument}: {', '.join(arms)}."
                     for argument, arms in by_argument.items())
            + " Such a call is invalid and never executed: it measures the agent's missing input, not the surface."
            + (f" Task runs that made no other call are counted as not carried out ({counted}): not a measured "
               "failure." if counted else ""))


def _calls_counted(figures: SurfaceFigures) -> str:
    """The calls the per-tool tables total, and the calls recorded past a run's budget (never executed) apart."""
    calls = sum(t["calls"] for t in figures.call_totals)
    skipped = sum(t["skipped_budget"] for t in figures.call_totals)
    return f"{calls:,} calls" + (f" ({skipped:,} more skipped: over budget)" if skipped else "")


def results_unseen_lines(figures: SurfaceFigures) -> list[str]:
    """A 'Warning:' line per arm some of whose task runs had a prompt that did not grow by the tool results fed
    to it (task_arm_success.runs_results_unseen)."""
    return [f"Warning: arm {a['arm']} ({a['taskset_version']}): in {a['runs_results_unseen']:,} of {a['n']:,} task "
            "runs a prompt did not grow by the tool results sent before it: the server seems to drop tool results "
            "(a chat template with no role: tool branch), so the model answered without them and multi-step "
            "figures measure nothing (docs/selection/hosted-models.md)"
            for a in figures.arm_success if a.get("runs_results_unseen")]


def surface_warning_lines(arms: list[dict[str, Any]]) -> list[str]:
    """A 'Warning:' line per surface warning (an MCP server without annotations), naming the arms it concerns."""
    by_warning: dict[tuple[str, str], list[str]] = {}
    for arm in arms:
        for warning in arm.get("surface_warnings") or []:
            by_warning.setdefault((arm["surface"], warning), []).append(arm["arm"])
    return [f"Warning: surface {surface} (arm{'s' if len(names) > 1 else ''} {', '.join(names)}): {warning}"
            for (surface, warning), names in by_warning.items()]


def build_surface_report(figures: SurfaceFigures, verdict: Verdict | None) -> Report:
    run = figures.run
    headline = [
        f"run {figures.run_id} · experiment {run['experiment']} · task set {run['taskset']} "
        f"{', '.join(sorted({a['taskset_version'] for a in figures.arms}))} · {run['n_runs']:,} task runs, "
        f"{_calls_counted(figures)}",
        *[f"  arm {a['rung']}. {a['arm']}: surface {a['surface']} ({a['n_tools']} tools), {a['agent']} "
          f"{a['model_id']}, prompt {a['prompt']}, {len(a['seeds'])} seeds" for a in figures.arms],
        *report_notes(figures.arms, "task runs"),
        *coverage_lines(figures),
        "95% intervals treat the task as the unit (seeds of one task are correlated); changes are paired on the "
        "same tasks.",
    ]
    baseline = figures.baseline_arms
    if baseline:
        pairs = sorted({f"{c.baseline} -> {c.arm}" for c in figures.comparisons if c.measures_nothing})
        headline.append("Note: " + BASELINE_NOTE.format(arms=", ".join(baseline), s="" if len(baseline) > 1 else "s",
                                                        pairs=", ".join(pairs) or "none here"))
    headline += surface_warning_lines(figures.arms)
    headline += results_unseen_lines(figures)
    headline += unfilled_lines(figures)
    headline += drift_lines(figures)
    tables = [success_table(figures), arm_success_table(figures), comparison_table(figures),
              *interaction_tables(figures), *tool_tables(figures), *first_call_tables(figures),
              *coverage_tables(figures),
              side_effect_table(figures), wanted_table(figures), stop_table(figures)]
    if figures.version_calibrations:  # beside the paired comparisons: each version's own tasks, and the shared ones
        after = next((i + 1 for i, t in enumerate(tables) if t.key == "comparisons"), len(tables))
        tables.insert(after, version_calibration_table(figures.version_calibrations, unit="task"))
    return Report(run_id=figures.run_id, headline=headline, tables=tables, verdict=verdict, figures=figures,
                  title="tooleval tasks")
