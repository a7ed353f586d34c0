"""Speed of the report views on 10 million selection rows, beside plain hand-written SQL for the same figures.

    python benchmarks/report_views.py [--rows 10000000] [--runs 200] [--repeats 3] [--memory-limit 8GB]
        [--threads 2] [--workdir DIR] [--keep] [--views a,b] [--no-one-run] [--check-rows 120000]
        [--settings parquet,table] [--one-run-repeats N] [--compare-revision REV [--compare-rows 1000000]]
        [--only-checks] [--reuse]

While developing, keep the per-run size and shrink the rest: ``--rows 2000000 --runs 40`` (~50k rows a run,
as the default) does a fifth of the work.

1. Writes ``--rows`` synthetic rows shaped like SelectionRow (``benchmarks/synthetic.py``: 4 arms = the
   support ladder 18 -> 30 tools, 3 seeds, 2 slices, ~80% correct, confusions concentrated on a few
   neighbours per tool, probabilities NULL) to one Parquet file (zstd), in ``--runs`` runs, plus the
   records they join to (runs with a weights window, the ladder's comparisons, weights, tool sets).
2. Checks, on a small data set (``--check-rows``), that each plain query returns what its view returns
   (same columns, same rows; floats to 1e-9 relative). The request-clustered intervals' n_effective
   (aggregate_accuracy, per_tool_accuracy, position_band_accuracy) is the views' macros
   (``clustered_sums``, ``clustered_moments``, ``clustered_n_star_from``) written out in plain SQL
   (``_clustered``: the sums in the same GROUP BY, then the small-sample correction, the t-quantile shrink
   and the bounds in three thin CTEs over the groups).
   With ``--compare-revision REV``, also that each view returns what the same view returned at git
   revision REV (its views' .sql files, in ``warehouse/views/`` or the instruments' ``views/`` folders,
   and ``warehouse/macros.sql`` if any) on ``--compare-rows``
   rows: same columns and types, same rows (floats to 1e-9 relative), all runs and (views with a run_id
   column) one run. ``--only-checks`` stops there.
3. Times, best of ``--repeats``, each view in ``warehouse/views/`` (whatever is there when it runs:
   ``SELECT * FROM view``, every row fetched as Arrow batches) and its plain query, in two settings:
   a. views over the Parquet: in-memory DuckDB, ``warehouse.tables.create_tables``, ``landed_rows``
      replaced by a view over ``read_parquet``, ``warehouse.views.create_views``; the plain query reads
      ``read_parquet`` itself;
   b. views over a DuckDB table: a .duckdb file opened with ``warehouse.connect.connect`` (tables +
      views), the Parquet loaded into ``landed_rows`` as ``register_run`` does.
   With ``--one-run`` (default) also ``WHERE run_id = <one run>`` as the report reads them, for the views
   that have a run_id column; the others (run_comparison: it pairs runs, run_a and run_b) are timed over
   all runs only and listed as such under each table.
Prints wall and CPU seconds (CPU: this process, every DuckDB thread; it barely moves with other processes'
load, wall does), the ratios view / plain, the verdict against the 1.5x target on the CPU ratio, and the
load average beside them.

Measured figures, with the command, date and load of each: docs/measured/speed.md.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import run_ids, selection_row_batches, warehouse_records  # noqa: E402

from schemas.arrow import arrow_schema, to_arrow_table  # noqa: E402
from schemas.selection.rows import SelectionRow  # noqa: E402
from warehouse.connect import connect  # noqa: E402
from warehouse.tables import create_tables, tables  # noqa: E402
from warehouse.views import create_views, view_files  # noqa: E402

TARGET_RATIO = 1.5
Z, Z2 = "1.959963984540054", "3.841458820694124"


def _wilson(p: str, n: str) -> str:
    """ci_low, ci_high columns: Wilson's 95% interval for proportion ``p`` on ``n`` trials."""
    centre = f"(({p}) + {Z2} / (2 * ({n}))) / (1 + {Z2} / ({n}))"
    half = f"{Z} * sqrt(({p}) * (1 - ({p})) / ({n}) + {Z2} / (4 * ({n}) * ({n}))) / (1 + {Z2} / ({n}))"
    return f"greatest(0.0, {centre} - {half}) as ci_low, least(1.0, {centre} + {half}) as ci_high"


def _clustered(keys: str) -> str:
    """From a per-request CTE ``per_request`` (keys, request_id, trials, correct [, ...]): totals per ``keys``
    with the effective n the views use (macros ``clustered_sums``, ``clustered_moments``,
    ``clustered_n_star_from``, written out here without macros): the request-clustered variance's sums
    (c^2, c t, t^2) and its fourth moment's (c^4, c^3 t, c^2 t^2, c t^3, t^4) computed in the same GROUP BY
    (sums of powers expanded, no second join), then Kish's n from the
    small-sample corrected variance (x n_r / (n_r - 1)), shrunk by (z / t_df)^2 with Welch-Satterthwaite df
    (between (n_r - 1) / 2 and n_r - 1), kept between the requests and the rows; the requests when p is 0 or 1
    or there are fewer than 10 requests. c: correct rows of a request, t: its rows, n_r: requests."""
    z = "1.959963984540054"
    t_975 = (f"({z} + 2.372271230298562 / df + 2.8224986157396112 / (df * df) + 2.555849679507722 / (df * df * df)"
             " + 1.5895340533938225 / (df * df * df * df))")
    return f"""
totals as (
    select {keys}, min(rung) as rung, sum(trials)::bigint as n, count(*) as n_requests,
           sum(correct)::bigint as correct,
           sum(correct * correct) as cc, sum(correct * trials) as ct, sum(trials * trials) as tt,
           sum(correct * correct * correct * correct) as c4, sum(correct * correct * correct * trials) as c3t,
           sum(correct * correct * trials * trials) as c2t2, sum(correct * trials * trials * trials) as ct3,
           sum(trials * trials * trials * trials) as t4
           {{extra_sums}}
    from per_request
    group by {keys}
),
moments as (
    -- sum_i (c_i - p t_i)^2 / n^2 and sum_i (c_i - p t_i)^4 / n^4 (p = correct / n): each numerator, times
    -- a power of n, is an integer, computed exactly in HUGEINT
    select *, correct / n as p,
           (cc::hugeint * n * n - 2 * correct::hugeint * n * ct + correct::hugeint * correct * tt)::double
               / power(n::double, 4) as variance,
           (c4::hugeint * n * n * n * n - 4 * correct::hugeint * n * n * n * c3t
            + 6 * correct::hugeint * correct * n * n * c2t2 - 4 * correct::hugeint * correct * correct * n * ct3
            + correct::hugeint * correct * correct * correct * t4)::double / power(n::double, 4) as fourth
    from totals
),
shrink as (
    select *,
           case when variance * n_requests / (n_requests - 1) <= 1e-15 then n::double
                else least(n::double, p * (1 - p) / (variance * n_requests / (n_requests - 1))) end as kish,
           least(n_requests - 1.0, greatest((n_requests - 1.0) / 2,
                 case when fourth > 0 then 3 * power(variance * n * n, 2) / fourth - 1
                      else n_requests - 1.0 end)) as df
    from moments
),
effective as (
    select *,
           case when correct = 0 or correct = n or n_requests < 10 then n_requests::double
                else least(n::double, greatest(n_requests::double, kish * power({z} / {t_975}, 2)))
           end as n_effective
    from shrink
)"""


PLAIN: dict[str, str] = {
    "selection_rows": "select * from {rows}",

    "aggregate_accuracy": """
with per_request as materialized (
    select run_id, arm, slice, request_id, min(rung) as rung, count(*) as trials,
           count(*) filter (where correct) as correct,
           count(*) filter (where outcome = 'wrong_tool') as wrong_tool,
           count(*) filter (where outcome = 'no_tool') as no_tool,
           count(*) filter (where outcome = 'invalid') as invalid,
           count(*) filter (where outcome = 'error') as error,
           count(*) filter (where outcome = 'empty') as empty,
           count(*) filter (where outcome = 'invalid' and starts_with(detail, 'tool call written as text'))
               as text_calls
    from {rows}
    group by run_id, arm, slice, request_id
),
per_seed as (
    select run_id, arm, slice, seed, count(*) filter (where correct) / count(*) as accuracy
    from {rows}
    group by run_id, arm, slice, seed
),
seeds as (
    select run_id, arm, slice, count(*) as n_seeds, min(accuracy) as seed_min, max(accuracy) as seed_max,
           list(accuracy order by seed) as seed_accuracies
    from per_seed
    group by run_id, arm, slice
),""" + _clustered("run_id, arm, slice").replace(
        "{extra_sums}", ", sum(wrong_tool)::bigint as wrong_tool, sum(no_tool)::bigint as no_tool, "
        "sum(invalid)::bigint as invalid, sum(error)::bigint as error, sum(empty)::bigint as empty, "
        "sum(text_calls)::bigint as text_calls") + f"""
select t.run_id, t.arm, t.rung, t.slice, t.n, t.n_requests, t.correct, t.p as accuracy,
       s.n_seeds, s.seed_min, s.seed_max, s.seed_max - s.seed_min as seed_spread,
       t.wrong_tool, t.no_tool, t.invalid, t.error, t.empty, t.text_calls,
       {_wilson("t.p", "t.n_effective")}, t.n_effective, s.seed_accuracies,
       t.invalid / t.n as invalid_rate, (t.invalid + t.error + t.empty) / t.n as failure_rate
from effective t
join seeds s using (run_id, arm, slice)""",

    "per_tool_accuracy": """
with per_request as (
    select run_id, arm, slice, expected as tool, request_id, min(rung) as rung, count(*) as trials,
           count(*) filter (where correct) as correct
    from {rows}
    group by run_id, arm, slice, expected, request_id
),
per_seed as (
    select run_id, arm, slice, expected as tool, seed, count(*) filter (where correct) / count(*) as accuracy
    from {rows}
    group by run_id, arm, slice, expected, seed
),
seeds as (
    select run_id, arm, slice, tool, min(accuracy) as seed_min, max(accuracy) as seed_max
    from per_seed
    group by run_id, arm, slice, tool
),""" + _clustered("run_id, arm, slice, tool").replace("{extra_sums}", "") + f"""
select t.run_id, t.arm, t.rung, t.slice, t.tool, t.n, t.n_requests, t.correct, t.p as accuracy,
       s.seed_min, s.seed_max, {_wilson("t.p", "t.n_effective")}, t.n_effective,
       s.seed_max - s.seed_min as seed_spread
from effective t
join seeds s using (run_id, arm, slice, tool)""",

    "weighted_accuracy": """
with per_tool_seed as (
    select run_id, arm, seed, expected as tool, min(rung) as rung, count(*) as n,
           count(*) filter (where correct) as correct
    from {rows}
    where expected <> 'none'
    group by run_id, arm, seed, expected
),
joined as materialized (
    select t.*, w.weight
    from per_tool_seed t
    join runs r on r.run_id = t.run_id
    join production_weights w on w.taskset = r.taskset and w.window_id = r.weights_window and w.tool = t.tool
),
seeds as (
    select run_id, arm, min(weighted_accuracy) as seed_min, max(weighted_accuracy) as seed_max
    from (select run_id, arm, seed, sum(weight * correct / n) / nullif(sum(weight), 0) as weighted_accuracy
          from joined group by run_id, arm, seed)
    group by run_id, arm
),
per_tool as (
    select run_id, arm, tool, min(rung) as rung, sum(n) as n, sum(correct) as correct, min(weight) as weight
    from joined
    group by run_id, arm, tool
)
select t.run_id, t.arm, min(t.rung) as rung,
       sum(t.weight * t.correct / t.n) / nullif(sum(t.weight), 0) as weighted_accuracy,
       sum(t.correct) / sum(t.n) as accuracy_unweighted, sum(t.weight) as weight_covered,
       count(*) as n_tools, sum(t.n) as n,
       min(s.seed_min) as seed_min, min(s.seed_max) as seed_max, min(s.seed_max) - min(s.seed_min) as seed_spread
from per_tool t
join seeds s using (run_id, arm)
group by t.run_id, t.arm""",

    "confused_pairs": """
with cells as materialized (
    select run_id, arm, expected, chosen, tool_set_id, min(rung) as rung, count(*) as n_rows,
           count(*) filter (where outcome in ('wrong_tool', 'no_tool')) as n_pair,
           count(*) filter (where not correct) as n_failed
    from {rows}
    group by run_id, arm, expected, chosen, tool_set_id
),
failures as (select run_id, arm, sum(n_failed) as n_failures from cells group by run_id, arm),
pairs as (
    select run_id, arm, min(rung) as rung, expected, chosen, sum(n_pair)::bigint as n
    from cells where n_pair > 0
    group by run_id, arm, expected, chosen
),
by_set as (
    select run_id, arm, expected, tool_set_id, sum(n_rows) as n_rows
    from cells group by run_id, arm, expected, tool_set_id
),
offered as (
    select p.run_id, p.arm, p.expected, p.chosen, sum(e.n_rows) as n_offered_together
    from pairs p
    join by_set e using (run_id, arm, expected)
    left join offered_tools o on o.tool_set_id = e.tool_set_id and o.tool = p.chosen
    where p.chosen = 'none' or o.tool is not null
    group by p.run_id, p.arm, p.expected, p.chosen
)
select p.run_id, p.arm, p.rung, p.expected, p.chosen, p.n, p.n / f.n_failures as share_of_failures,
       o.n_offered_together, p.n / o.n_offered_together as pair_rate
from pairs p
join failures f using (run_id, arm)
left join offered o using (run_id, arm, expected, chosen)""",

    "calibration_bins": """
select run_id, arm, min(rung) as rung, least(10, 1 + floor(confidence * 10))::integer as bin,
       (bin - 1) / 10 as bin_low, bin / 10 as bin_high, count(*) as n,
       count(*) filter (where correct) as correct, avg(confidence) as mean_confidence,
       count(*) filter (where correct) / count(*) as accuracy,
       count(*) filter (where correct) / count(*) - avg(confidence) as gap
from {rows}
where confidence is not null
group by run_id, arm, bin""",

    "calibration_summary": """
with bins as (
    select run_id, arm, least(10, 1 + floor(confidence * 10))::integer as bin, min(rung) as rung,
           count(*) as n, count(*) filter (where correct) as correct, avg(confidence) as mean_confidence,
           sum(power(confidence - (case when correct then 1.0 else 0.0 end), 2)) as squares,
           sum(confidence) as confidence_sum
    from {rows}
    where confidence is not null
    group by run_id, arm, bin
)
select run_id, arm, min(rung) as rung, sum(n)::bigint as n, sum(correct) / sum(n) as accuracy,
       sum(confidence_sum) / sum(n) as mean_confidence,
       sum(n * abs(correct / n - mean_confidence)) / sum(n) as ece,
       sum(squares) / sum(n) as brier
from bins
group by run_id, arm""",

    "confidence_terciles": f"""
with totals as (
    select run_id, arm, min(rung) as rung, tercile, count(*) as n, count(*) filter (where correct) as correct,
           min(confidence) as confidence_min, max(confidence) as confidence_max
    from (select run_id, arm, rung, correct, confidence,
                 ntile(3) over (partition by run_id, arm order by confidence, request_id, seed) as tercile
          from {{rows}} where confidence is not null)
    group by run_id, arm, tercile
)
select run_id, arm, rung, tercile, n, correct, correct / n as accuracy, {_wilson("correct / n", "n")},
       confidence_min, confidence_max
from totals""",

    "confusion_matrix": """
select run_id, arm, min(rung) as rung, expected,
       case when outcome in ('invalid', 'error', 'empty') then '[' || outcome || ']'
            else coalesce(chosen, '[empty]') end as answer,
       count(*) as n,
       count(*) / sum(count(*)) over (partition by run_id, arm, expected) as share_of_expected
from {rows}
group by run_id, arm, expected, answer""",

    "request_outcomes": """
select run_id, arm, min(rung) as rung, request_id, min(slice) as slice, min(expected) as expected,
       min(coalesce(label, expected)) as label,
       count(*) as trials, count(*) filter (where correct) as correct,
       count(*) filter (where correct) * 2 > count(*) as majority_right,
       count(*) filter (where outcome in ('invalid', 'error', 'empty')) as failed
from {rows}
group by run_id, arm, request_id""",

    "paired_requests": """
with outcomes as materialized (
    select run_id, arm, request_id, min(slice) as slice, min(expected) as expected,
           min(coalesce(label, expected)) as label,
           count(*) as trials, count(*) filter (where correct) as correct,
           count(*) filter (where correct) * 2 > count(*) as majority_right
    from {rows}
    group by run_id, arm, request_id
)
select c.run_id, c.baseline, c.arm, b.request_id, b.slice,
       b.expected as expected_baseline, a.expected as expected_arm, b.label = a.label as label_stable,
       b.trials as trials_baseline, b.correct as correct_baseline, a.trials as trials_arm, a.correct as correct_arm,
       b.majority_right as right_baseline, a.majority_right as right_arm,
       a.correct * b.trials < b.correct * a.trials as worse, b.correct * a.trials < a.correct * b.trials as better
from comparisons c
join outcomes b on b.run_id = c.run_id and b.arm = c.baseline
join outcomes a on a.run_id = c.run_id and a.arm = c.arm and a.request_id = b.request_id""",

    "paired_tool_changes": """
with outcomes as materialized (
    select run_id, arm, request_id, min(slice) as slice, min(coalesce(label, expected)) as label,
           count(*) as trials, count(*) filter (where correct) as correct
    from {rows}
    group by run_id, arm, request_id
)
select c.run_id, c.baseline, c.arm, b.slice, b.label as tool, count(*) as n_requests,
       sum(b.trials) as rows_baseline, sum(a.trials) as rows_arm,
       sum(b.correct) / sum(b.trials) as accuracy_baseline, sum(a.correct) / sum(a.trials) as accuracy_arm,
       sum(a.correct) / sum(a.trials) - sum(b.correct) / sum(b.trials) as change,
       count(*) filter (where a.correct * b.trials < b.correct * a.trials) as worse,
       count(*) filter (where b.correct * a.trials < a.correct * b.trials) as better
from comparisons c
join outcomes b on b.run_id = c.run_id and b.arm = c.baseline
join outcomes a on a.run_id = c.run_id and a.arm = c.arm and a.request_id = b.request_id
where b.label = a.label
group by c.run_id, c.baseline, c.arm, b.slice, b.label""",

    "position_accuracy": f"""
select run_id, arm, rung, slice, expected_position, position_third, n, n_requests, correct, correct / n as accuracy,
       {_wilson("correct / n", "n")}
from (
    select run_id, arm, min(rung) as rung, slice, expected_position,
           least(3, 1 + floor(3 * (expected_position - 1) / max(n_tools)))::integer as position_third,
           count(*) as n, count(distinct request_id) as n_requests, count(*) filter (where correct) as correct
    from {{rows}}
    where expected_position is not null
    group by run_id, arm, slice, expected_position
)""",

    "position_band_accuracy": """
with per_request as (
    select run_id, arm, slice, least(3, 1 + floor(3 * (expected_position - 1) / n_tools))::integer as position_third,
           request_id, min(rung) as rung, count(*) as trials, count(*) filter (where correct) as correct
    from {rows}
    where expected_position is not null and n_tools > 0
    group by run_id, arm, slice, position_third, request_id
),""" + _clustered("run_id, arm, slice, position_third").replace("{extra_sums}", "") + f"""
select run_id, arm, rung, slice, position_third, n, n_requests, correct, p as accuracy,
       {_wilson("p", "n_effective")}, n_effective
from effective""",

    "arm_operations": """
select run_id, arm, min(rung) as rung, any_value(selector) as selector, any_value(model_id) as model_id,
       any_value(route) as route, any_value(router) as router,
       count(*) as n, count(*) filter (where correct) as correct,
       count(*) filter (where correct) / count(*) as first_match_accuracy,
       count(*) filter (where outcome = 'empty') as empty,
       count(*) filter (where outcome = 'invalid') as invalid,
       count(*) filter (where outcome = 'error' and not {stopped}) as error,
       count(*) filter (where {stopped}) as budget_stopped,
       count(*) filter (where cache_hit) as cache_hits,
       avg(latency_ms) filter (where not {stopped}) as mean_latency_ms,
       avg(input_tokens) filter (where not {stopped}) as mean_input_tokens,
       avg(output_tokens) filter (where not {stopped}) as mean_output_tokens,
       avg(cost_usd) filter (where not {stopped}) as mean_cost_usd,
       sum(cost_usd) filter (where not cache_hit) as run_cost_usd,
       sum(retries) as retries, sum(http_attempts) as http_requests,
       sum(cached_input_tokens) filter (where not cache_hit)
           / nullif(sum(input_tokens) filter (where not cache_hit and cached_input_tokens is not null), 0)
           as cached_input_share,
       count(*) filter (where decided_by = 'router') as decided_by_router,
       count(*) filter (where fallback) as fallbacks,
       count(*) filter (where fallback) / nullif(count(*) filter (where fallback is not null), 0) as fallback_rate,
       count(*) filter (where judge_verdict is not null) as judged,
       count(*) filter (where (judge_verdict = 'right') = correct and judge_verdict != 'unsure') as judge_agrees,
       count(*) filter (where judge_verdict = 'right' and not correct) as judge_right_label_wrong,
       count(*) filter (where judge_verdict = 'wrong' and correct) as judge_wrong_label_right,
       count(*) filter (where served_model_evidence = 'reported') as served_reported,
       count(*) filter (where served_model_evidence = 'not_reported') as served_not_reported,
       count(*) filter (where served_model_evidence = 'echoes_request') as served_echoed,
       list(distinct served_model_id order by served_model_id)
           filter (where served_model_evidence = 'reported') as served_models
from {{rows}}
group by run_id, arm""".format(stopped="coalesce(outcome = 'error' and detail = 'budget reached', false)"),

    "label_status_counts": """
select run_id, taskset, taskset_version, label_status, count(distinct request_id) as n_requests, count(*) as n_rows
from {rows}
group by run_id, taskset, taskset_version, label_status""",

    "version_calibration": """
with version_pairs as (
    select run_id, baseline as old_arm, arm as new_arm from comparisons where changed = ['version']
),
per_tool as materialized (
    select run_id, arm, min(taskset_version) as taskset_version, expected as tool,
           count(distinct request_id) as n_requests, count(*) as n, count(*) filter (where correct) as correct
    from {rows}
    where (run_id, arm) in (select run_id, old_arm from version_pairs union select run_id, new_arm from version_pairs)
    group by run_id, arm, expected
),
tools as (
    select distinct p.run_id, p.old_arm, p.new_arm, t.tool
    from version_pairs p join per_tool t on t.run_id = p.run_id and t.arm in (p.old_arm, p.new_arm)
)
select t.run_id, t.old_arm, t.new_arm, t.tool,
       o.taskset_version as old_version, o.n_requests as old_requests, o.n as old_rows, o.correct / o.n as old_accuracy,
       n.taskset_version as new_version, n.n_requests as new_requests, n.n as new_rows, n.correct / n.n as new_accuracy,
       n.correct / n.n - o.correct / o.n as difference
from tools t
left join per_tool o on o.run_id = t.run_id and o.arm = t.old_arm and o.tool = t.tool
left join per_tool n on n.run_id = t.run_id and n.arm = t.new_arm and n.tool = t.tool""",
}
"""Per view: a plain query computing the same figures straight from the rows (``{rows}``), with no view
stacked on another, one scan where one suffices, no ORDER BY (the report orders what it shows)."""


# --------------------------------------------------------------------------------------------------
# Setup
# --------------------------------------------------------------------------------------------------


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def write_parquet(path: Path, n_rows: int, n_runs: int) -> int:
    written = 0
    with pq.ParquetWriter(path, arrow_schema(SelectionRow), compression="zstd") as writer:
        for table in selection_row_batches(n_rows, n_runs):
            writer.write_table(table)
            written += table.num_rows
    return written


def insert_records(con: duckdb.DuckDBPyConnection, n_runs: int) -> None:
    for table, records in warehouse_records(n_runs).items():
        arrow = to_arrow_table(tables()[table], [r.model_dump() for r in records])
        con.register("_incoming", arrow)
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
        con.unregister("_incoming")


def configure(con: duckdb.DuckDBPyConnection, memory_limit: str, threads: int) -> None:
    con.execute(f"SET memory_limit = '{memory_limit}'")
    con.execute(f"SET threads = {threads}")


def parquet_connection(parquet: Path, n_runs: int, memory_limit: str, threads: int) -> duckdb.DuckDBPyConnection:
    """In-memory DuckDB whose landed_rows is a view over the Parquet file."""
    con = duckdb.connect(":memory:")
    configure(con, memory_limit, threads)
    create_tables(con)
    con.execute("DROP TABLE landed_rows")
    con.execute(f"CREATE VIEW landed_rows AS SELECT * FROM read_parquet('{parquet}')")
    create_views(con)
    insert_records(con, n_runs)
    return con


def table_connection(parquet: Path, db_path: Path, n_runs: int, memory_limit: str,
                     threads: int) -> tuple[duckdb.DuckDBPyConnection, float]:
    """A .duckdb file opened as the warehouse opens it, the Parquet loaded into landed_rows."""
    con = connect(db_path)
    configure(con, memory_limit, threads)
    started = time.perf_counter()
    con.execute("INSERT INTO landed_rows BY NAME SELECT * FROM read_parquet(?)", [str(parquet)])
    insert_records(con, n_runs)
    con.execute("CHECKPOINT")
    return con, time.perf_counter() - started


# --------------------------------------------------------------------------------------------------
# Timing and checking
# --------------------------------------------------------------------------------------------------


def has_run_id(con: duckdb.DuckDBPyConnection, view: str) -> bool:
    """Whether ``view`` has a run_id column, i.e. can be read for one run (``WHERE run_id = ?``): a view that
    compares runs (run_comparison: run_a, run_b) has none and is timed over all runs only."""
    return bool(con.execute("SELECT count(*) FROM information_schema.columns WHERE table_name = ? "
                            "AND column_name = 'run_id'", [view]).fetchall()[0][0])


def consume(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    """Run ``sql`` and fetch every row (as Arrow batches, dropped as they come): the row count."""
    reader = con.sql(sql).to_arrow_reader(1_000_000)
    return sum(batch.num_rows for batch in reader)


def best_of(con: duckdb.DuckDBPyConnection, sql: str, repeats: int) -> tuple[float, float, int]:
    """Best wall seconds, best CPU seconds (this process: every DuckDB thread) and rows of ``repeats`` runs.

    CPU seconds barely move with other processes' load, wall seconds do: on a shared machine both count."""
    walls, cpus, n = [], [], 0
    for _ in range(repeats):
        started, cpu = time.perf_counter(), time.process_time()
        n = consume(con, sql)
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus), n


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    return a == b


def _rows_sorted(rows: list[tuple]) -> list[tuple]:
    def key(row: tuple) -> tuple:
        return tuple("" if isinstance(v, (float, list)) else str(v) for v in row)
    return sorted(rows, key=key)


def _result(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[tuple[str, str]], list[tuple]]:
    """(column name, type) pairs and rows (sorted) of ``sql``."""
    cursor = con.execute(sql)
    columns = [(d[0], str(d[1])) for d in cursor.description]
    return columns, _rows_sorted(cursor.fetchall())


def _same_result(a: tuple[list[tuple[str, str]], list[tuple]], b: tuple[list[tuple[str, str]], list[tuple]],
                 types: bool = False, names: tuple[str, str] = ("view", "plain")) -> str:
    (a_columns, a_rows), (b_columns, b_rows) = a, b
    if [c[0] for c in a_columns] != [c[0] for c in b_columns]:
        return f"DIFFERENT COLUMNS: {names[0]} {[c[0] for c in a_columns]} vs {names[1]} {[c[0] for c in b_columns]}"
    if types and a_columns != b_columns:
        return f"DIFFERENT TYPES: {names[0]} {a_columns} vs {names[1]} {b_columns}"
    if len(a_rows) != len(b_rows):
        return f"DIFFERENT ROW COUNT: {len(a_rows)} vs {len(b_rows)}"
    for x, y in zip(a_rows, b_rows):
        if not all(_same_value(u, v) for u, v in zip(x, y)):
            return f"DIFFERENT ROWS, e.g. {names[0]} {x} vs {names[1]} {y}"
    return f"same ({len(a_rows)} rows)"


def compare(con: duckdb.DuckDBPyConnection, view: str, plain: str) -> str:
    return _same_result(_result(con, f"SELECT * FROM {view}"), _result(con, plain))


def check_plain_queries(workdir: Path, views: list[str], n_rows: int, memory_limit: str,
                        threads: int) -> dict[str, str]:
    parquet = workdir / "check.parquet"
    write_parquet(parquet, n_rows, max(2, n_rows // 60_000))
    con = parquet_connection(parquet, max(2, n_rows // 60_000), memory_limit, threads)
    rows_sql = f"read_parquet('{parquet}')"
    try:
        return {view: compare(con, view, PLAIN[view].format(rows=rows_sql)) for view in views if view in PLAIN}
    finally:
        con.close()


def sql_at_revision(revision: str) -> tuple[str | None, dict[str, str]]:
    """The macro file (None if the revision has none) and each view's SQL as git ``revision`` has them."""
    root = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout

    folders = ("warehouse/views/", "tasks/selection/views/", "tasks/surface/views/")  # where a revision kept them
    paths = [line for line in git("ls-tree", "--name-only", revision, *folders).splitlines()
             if line.endswith(".sql")]
    views = {Path(path).stem: git("show", f"{revision}:{path}") for path in paths}
    try:
        macros = git("show", f"{revision}:warehouse/macros.sql")
    except subprocess.CalledProcessError:
        macros = None
    return macros, views


def create_views_from(con: duckdb.DuckDBPyConnection, macros: str | None, views: dict[str, str]) -> None:
    """``create_views`` for SQL given as text (another revision's): macros first, views retried until all resolve."""
    if macros:
        con.execute(macros)
    pending = dict(views)
    while pending:
        created = 0
        for name, sql in list(pending.items()):
            try:
                con.execute(f"CREATE OR REPLACE VIEW {name} AS\n{sql}")
            except duckdb.CatalogException:
                continue
            del pending[name]
            created += 1
        if not created:
            raise RuntimeError(f"views of the other revision that cannot be created: {sorted(pending)}")


def check_against_revision(workdir: Path, revision: str, views: list[str], n_rows: int, memory_limit: str,
                           threads: int) -> dict[str, str]:
    """Each view as this checkout has it vs as git ``revision`` had it, on the same synthetic rows: same
    columns, same types, same rows (floats to 1e-9 relative), each once over all runs and once for one run."""
    n_runs = max(2, n_rows // 60_000)
    parquet = workdir / "revision-check.parquet"
    write_parquet(parquet, n_rows, n_runs)
    ours = parquet_connection(parquet, n_runs, memory_limit, threads)
    theirs = duckdb.connect(":memory:")
    configure(theirs, memory_limit, threads)
    create_tables(theirs)
    theirs.execute("DROP TABLE landed_rows")
    theirs.execute(f"CREATE VIEW landed_rows AS SELECT * FROM read_parquet('{parquet}')")
    insert_records(theirs, n_runs)
    macros, old_views = sql_at_revision(revision)
    create_views_from(theirs, macros, old_views)
    one_run = run_ids(n_runs)[n_runs // 2]
    verdicts = {}
    try:
        for view in views:
            if view not in old_views:
                verdicts[view] = f"new (not in {revision})"
                continue
            verdict = []
            wheres = ("", f" WHERE run_id = '{one_run}'") if has_run_id(ours, view) else ("",)
            for where in wheres:
                sql = f"SELECT * FROM {view}{where}"
                verdict.append(_same_result(_result(ours, sql), _result(theirs, sql), types=True,
                                            names=("this checkout", revision)))
            verdicts[view] = f"all runs {verdict[0]}; " + (f"one run {verdict[1]}" if len(verdict) > 1
                                                           else "one run — (no run_id column: all runs only)")
    finally:
        ours.close()
        theirs.close()
    return verdicts


def _ratio(view_s: float, plain_s: float | None) -> str:
    if not plain_s:
        return f"{'—':>6s}"
    return f"{view_s / plain_s:6.2f}"


def _verdict(view: tuple[float, float], plain: tuple[float, float] | None) -> str:
    """Against the target on CPU seconds: they barely move with other processes' load; wall seconds do."""
    if plain is None:
        return ""
    return "yes" if view[1] / plain[1] <= TARGET_RATIO else "NO"


def time_setting(con: duckdb.DuckDBPyConnection, label: str, rows_sql: str, views: list[str], repeats: int,
                 one_run: str | None, one_run_repeats: int | None = None) -> list[dict[str, Any]]:
    one_run_repeats = one_run_repeats or repeats
    print(f"\n== {label}   ({load_average()} before)", flush=True)
    header = (f"{'view':23s} {'rows out':>9s} | {'view s':>7s} {'plain s':>7s} {'ratio':>6s} {'cpu s':>6s} "
              f"{'cpu s':>6s} {'ratio':>6s} {'<=1.5':>5s}")
    if one_run:
        header += f" | {'view s':>6s} {'plain s':>7s} {'ratio':>6s} {'cpu r.':>6s} {'<=1.5':>5s}"
    print(f"{'':33s} | {'all runs: wall':^22s} {'CPU (view, plain)':^21s}" + (" | one run (WHERE run_id = ?)"
                                                                             if one_run else ""))
    print(header, flush=True)
    results = []
    all_runs_only = [view for view in views if not has_run_id(con, view)] if one_run else []
    for view in views:
        view_wall, view_cpu, n_out = best_of(con, f"SELECT * FROM {view}", repeats)
        plain_sql = PLAIN.get(view)
        plain = best_of(con, plain_sql.format(rows=rows_sql), repeats)[:2] if plain_sql else None
        record: dict[str, Any] = {"name": view, "rows": n_out, "view": (view_wall, view_cpu), "plain": plain}
        line = (f"{view:23s} {n_out:>9,d} | {view_wall:7.3f} " + (f"{plain[0]:7.3f}" if plain else f"{'—':>7s}")
                + f" {_ratio(view_wall, plain and plain[0])} {view_cpu:6.2f} "
                + (f"{plain[1]:6.2f}" if plain else f"{'—':>6s}")
                + f" {_ratio(view_cpu, plain and plain[1])} {_verdict((view_wall, view_cpu), plain):>5s}")
        if one_run and view in all_runs_only:
            line += f" | {'— all runs only (no run_id column)':>38s}"
        elif one_run:
            one_view = best_of(con, f"SELECT * FROM {view} WHERE run_id = '{one_run}'", one_run_repeats)[:2]
            one_rows = f"(SELECT * FROM {rows_sql} WHERE run_id = '{one_run}')"
            one_plain = best_of(con, plain_sql.format(rows=one_rows), one_run_repeats)[:2] if plain_sql else None
            record.update(one_view=one_view, one_plain=one_plain)
            line += (f" | {one_view[0]:6.3f} " + (f"{one_plain[0]:7.3f}" if one_plain else f"{'—':>7s}")
                     + f" {_ratio(one_view[0], one_plain and one_plain[0])}"
                     + f" {_ratio(one_view[1], one_plain and one_plain[1])} {_verdict(one_view, one_plain):>5s}")
        print(line, flush=True)
        results.append(record)
    if all_runs_only:
        print(f"all runs only (no run_id column, so no WHERE run_id = ?): {', '.join(all_runs_only)}"
              + (" (run_comparison compares runs: run_a, run_b)" if "run_comparison" in all_runs_only else ""))
    print(f"({load_average()} after)", flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=200,
                        help="runs the rows are spread over (default 200: ~50k rows a run)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--one-run-repeats", type=int, default=None,
                        help="repeats of the one-run queries (default: --repeats; they take milliseconds, so more "
                             "repeats steady them on a loaded machine)")
    parser.add_argument("--memory-limit", default="8GB")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the work directory (Parquet, .duckdb)")
    parser.add_argument("--views", default="", help="comma-separated subset of views (default: every view)")
    parser.add_argument("--no-one-run", dest="one_run", action="store_false",
                        help="skip the WHERE run_id = <one run> timings")
    parser.add_argument("--check-rows", type=int, default=120_000, help="rows of the plain-vs-view check (0: skip)")
    parser.add_argument("--settings", default="parquet,table", help="parquet, table or both")
    parser.add_argument("--compare-revision", default=None, metavar="REV",
                        help="first check every view against the same view at git revision REV (columns, types, "
                             "rows to 1e-9; all runs and one run) on --compare-rows rows")
    parser.add_argument("--compare-rows", type=int, default=1_000_000)
    parser.add_argument("--only-checks", action="store_true", help="run the checks, time nothing")
    parser.add_argument("--reuse", action="store_true",
                        help="with --workdir: time the rows.parquet already there (same --rows and --runs) instead "
                             "of writing it again")
    args = parser.parse_args()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tooleval-views-"))
    workdir.mkdir(parents=True, exist_ok=True)
    views = list(view_files())
    if args.views:
        views = [v for v in views if v in set(args.views.split(","))]
    print(f"duckdb {duckdb.__version__}; {os.cpu_count()} cores; DuckDB threads={args.threads} "
          f"memory_limit={args.memory_limit}; best of {args.repeats}; {load_average()}")
    print(f"views in warehouse/views/: {', '.join(view_files())}")
    missing = [v for v in views if v not in PLAIN]
    if missing:
        print(f"views without a plain query here (timed alone): {', '.join(missing)}")

    try:
        if args.check_rows:
            started = time.perf_counter()
            checks = check_plain_queries(workdir, views, args.check_rows, args.memory_limit, args.threads)
            print(f"\nplain query == view on {args.check_rows:,} rows ({time.perf_counter() - started:.1f} s):")
            for view, verdict in checks.items():
                print(f"  {view:24s} {verdict}")

        if args.compare_revision:
            started = time.perf_counter()
            checks = check_against_revision(workdir, args.compare_revision, views, args.compare_rows,
                                            args.memory_limit, args.threads)
            print(f"\nview here == view at {args.compare_revision} on {args.compare_rows:,} rows "
                  f"({time.perf_counter() - started:.1f} s):")
            for view, verdict in checks.items():
                print(f"  {view:24s} {verdict}")
        if args.only_checks:
            return

        parquet = workdir / "rows.parquet"
        started = time.perf_counter()
        reused = args.reuse and parquet.is_file()
        n = pq.ParquetFile(parquet).metadata.num_rows if reused else write_parquet(parquet, args.rows, args.runs)
        meta = pq.ParquetFile(parquet).metadata
        print(f"\n{'reused' if reused else 'wrote'} {n:,} rows ({args.runs} runs, {meta.num_row_groups} row groups, "
              f"{meta.num_columns} columns) to Parquet: {time.perf_counter() - started:.1f} s, {parquet.stat().st_size / 1e6:.0f} MB "
              f"({load_average()})")
        one_run = run_ids(args.runs)[args.runs // 2] if args.one_run else None
        settings = args.settings.split(",")

        if "parquet" in settings:
            con = parquet_connection(parquet, args.runs, args.memory_limit, args.threads)
            time_setting(con, "views over the Parquet (in-memory DuckDB, landed_rows = read_parquet view)",
                         f"read_parquet('{parquet}')", views, args.repeats, one_run,
                         args.one_run_repeats)
            con.close()

        if "table" in settings:
            db_path = workdir / "tooleval.duckdb"
            db_path.unlink(missing_ok=True)
            con, load_s = table_connection(parquet, db_path, args.runs, args.memory_limit, args.threads)
            print(f"\nloaded {n:,} rows into landed_rows of {db_path.name}: {load_s:.1f} s, "
                  f"file {db_path.stat().st_size / 1e6:.0f} MB")
            time_setting(con, "views over a DuckDB table (.duckdb file, as the warehouse stores rows)",
                         "landed_rows", views, args.repeats, one_run,
                         args.one_run_repeats)
            con.close()
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
        elif args.keep:
            print(f"\nkept {workdir}")


if __name__ == "__main__":
    main()
