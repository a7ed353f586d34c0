-- weighted_accuracy: one row per (run, arm).
-- Volume-weighted accuracy: each tool's accuracy (rows expecting it, all seeds and slices) weighted by
-- its share of production traffic in the run's weights window, over the tools the arm has rows for;
-- weight_covered says how much traffic that is. accuracy_unweighted pools the same rows unweighted.
-- seed_min / seed_max / seed_spread: the weighted accuracy of each seed alone (the noise floor).
-- Its interval needs a stratified request bootstrap: tasks/stats/weighted.py computes it for the report.
-- Runs without a weights window have no row here.
with per_tool as (
    select run_id, arm, min(rung) as rung, expected as tool,
           count(*) as n,
           count(*) filter (where correct) as correct
    from selection_rows
    where expected <> 'none'
    group by run_id, arm, expected
),
per_tool_seed as (
    select run_id, arm, seed, expected as tool,
           count(*) filter (where correct) / count(*) as accuracy
    from selection_rows
    where expected <> 'none'
    group by run_id, arm, seed, expected
),
weights as (
    select r.run_id, w.tool, w.weight
    from runs r
    join production_weights w on w.taskset = r.taskset and w.window_id = r.weights_window
),
per_seed as (
    select t.run_id, t.arm, t.seed,
           sum(w.weight * t.accuracy) / nullif(sum(w.weight), 0) as weighted_accuracy
    from per_tool_seed t
    join weights w using (run_id, tool)
    group by t.run_id, t.arm, t.seed
),
seed_spread as (
    select run_id, arm, min(weighted_accuracy) as seed_min, max(weighted_accuracy) as seed_max
    from per_seed
    group by run_id, arm
)
select t.run_id, t.arm, min(t.rung) as rung,
       sum(w.weight * t.correct / t.n) / nullif(sum(w.weight), 0) as weighted_accuracy,
       sum(t.correct) / sum(t.n) as accuracy_unweighted,
       sum(w.weight) as weight_covered,
       count(*) as n_tools,
       sum(t.n) as n,
       min(s.seed_min) as seed_min,
       min(s.seed_max) as seed_max,
       min(s.seed_max) - min(s.seed_min) as seed_spread
from per_tool t
join weights w using (run_id, tool)
join seed_spread s using (run_id, arm)
group by t.run_id, t.arm
order by t.run_id, rung
