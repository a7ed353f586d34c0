-- weighted_accuracy: one row per (run, arm).
-- Volume-weighted accuracy: each tool's accuracy (rows expecting it, all seeds and slices) weighted by
-- its share of production traffic in the run's weights window, over the tools the arm has rows for (a tool
-- named as the version labels it, selection_rows.label: weights name it so under any prefix or rename);
-- weight_covered says how much traffic that is. accuracy_unweighted pools the same rows unweighted.
-- seed_min / seed_max / seed_spread: the weighted accuracy of each seed alone (the noise floor).
-- Its interval (each tool's clustered Wilson interval combined by MOVER; no resampling) is computed
-- for the report by tasks/stats/weighted.py.
-- Runs without a weights window have no row here.

-- One grouping of the rows, by (run, arm, seed, tool); the per-tool figures are sums of the per-seed ones.
-- 'none' rows are left out by the weights (no weight for 'none'), not by a WHERE on the rows: `weighted` is
-- read twice, so DuckDB computes it once (materialises it), and then turns a run filter into a scan filter
-- (skipping other runs' row groups) only when that scan has no filter of its own.
with per_tool_seed as (
    select run_id, arm, seed, coalesce(label, expected) as tool, min(rung) as rung,
           count(*) as n,
           count(*) filter (where correct) as correct
    from selection_rows
    group by run_id, arm, seed, coalesce(label, expected)
),
weights as (
    select r.run_id, w.tool, w.weight
    from runs r
    join production_weights w on w.taskset = r.taskset and w.window_id = r.weights_window
    where w.tool <> 'none'
),
weighted as (
    select t.*, w.weight
    from per_tool_seed t
    join weights w using (run_id, tool)
),
per_seed as (
    select run_id, arm, seed,
           sum(weight * correct / n) / nullif(sum(weight), 0) as weighted_accuracy
    from weighted
    group by run_id, arm, seed
),
seed_spread as (
    select run_id, arm, min(weighted_accuracy) as seed_min, max(weighted_accuracy) as seed_max
    from per_seed
    group by run_id, arm
),
per_tool as (
    select run_id, arm, tool, min(rung) as rung,
           sum(n) as n,
           sum(correct) as correct,
           min(weight) as weight
    from weighted
    group by run_id, arm, tool
)
select t.run_id, t.arm, min(t.rung) as rung,
       sum(t.weight * t.correct / t.n) / nullif(sum(t.weight), 0) as weighted_accuracy,
       sum(t.correct) / sum(t.n) as accuracy_unweighted,
       sum(t.weight) as weight_covered,
       count(*) as n_tools,
       sum(t.n) as n,
       min(s.seed_min) as seed_min,
       min(s.seed_max) as seed_max,
       min(s.seed_max) - min(s.seed_min) as seed_spread
from per_tool t
join seed_spread s using (run_id, arm)
group by t.run_id, t.arm
order by t.run_id, rung
