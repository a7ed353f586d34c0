-- per_tool_accuracy: one row per (run, arm, slice, tool), tool = the expected label ('none' included).
-- Rows and requests expecting the tool, how many were right, accuracy, and the per-seed min / max.
with per_seed as (
    select run_id, arm, slice, expected as tool, seed,
           count(*) filter (where correct) / count(*) as seed_accuracy
    from selection_rows
    group by run_id, arm, slice, expected, seed
),
seed_spread as (
    select run_id, arm, slice, tool,
           min(seed_accuracy) as seed_min,
           max(seed_accuracy) as seed_max
    from per_seed
    group by run_id, arm, slice, tool
),
totals as (
    select run_id, arm, min(rung) as rung, slice, expected as tool,
           count(*) as n,
           count(distinct request_id) as n_requests,
           count(*) filter (where correct) as correct
    from selection_rows
    group by run_id, arm, slice, expected
)
select t.run_id, t.arm, t.rung, t.slice, t.tool, t.n, t.n_requests, t.correct,
       t.correct / t.n as accuracy,
       s.seed_min, s.seed_max
from totals t
join seed_spread s using (run_id, arm, slice, tool)
order by t.run_id, t.rung, t.slice, t.tool
