-- per_tool_accuracy: one row per (run, arm, slice, tool), tool = the expected label ('none' included).
-- Rows and requests expecting the tool, how many were right, accuracy, and the per-seed min / max.
-- ci_low / ci_high: 95% interval with the request as the unit (Wilson on n_effective, as in
-- aggregate_accuracy); seed_spread = seed_max - seed_min.
with per_request as (
    select run_id, arm, slice, expected as tool, request_id, min(rung) as rung,
           count(*) as trials,
           count(*) filter (where correct) as correct
    from selection_rows
    group by run_id, arm, slice, expected, request_id
),
totals as (
    select run_id, arm, slice, tool, min(rung) as rung,
           sum(trials)::bigint as n,
           count(*) as n_requests,
           sum(correct)::bigint as correct,
           clustered_sums(correct, trials) as sums
    from per_request
    group by run_id, arm, slice, tool
),
effective as (
    select *, clustered_n_star_from(sums, moments) as n_effective
    from (select *, clustered_moments(sums) as moments from totals)
),
per_seed as (
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
)
select t.run_id, t.arm, t.rung, t.slice, t.tool, t.n, t.n_requests, t.correct,
       t.correct / t.n as accuracy,
       s.seed_min, s.seed_max,
       wilson_low(t.correct / t.n, t.n_effective) as ci_low,
       wilson_high(t.correct / t.n, t.n_effective) as ci_high,
       t.n_effective,
       s.seed_max - s.seed_min as seed_spread
from effective t
join seed_spread s using (run_id, arm, slice, tool)
order by t.run_id, t.rung, t.slice, t.tool
