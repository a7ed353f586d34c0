-- per_tool_accuracy: one row per (run, arm, slice, tool), tool = the expected label ('none' included).
-- Rows and requests expecting the tool, how many were right, accuracy, and the per-seed min / max.
-- ci_low / ci_high: 95% interval with the request as the unit (Wilson on n_effective, as in
-- aggregate_accuracy); seed_spread = seed_max - seed_min.
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
),
clustered as (
    select t.run_id, t.arm, t.slice, t.tool,
           sum(power(r.correct - t.correct / t.n * r.trials, 2)) / (t.n * t.n) as variance
    from totals t
    join request_outcomes r
      on r.run_id = t.run_id and r.arm = t.arm and r.slice = t.slice and r.expected = t.tool
    group by t.run_id, t.arm, t.slice, t.tool, t.correct, t.n
),
effective as (
    select t.*, t.correct / t.n as p,
           case when t.correct = 0 or t.correct = t.n then t.n_requests
                when c.variance <= 0 then t.n
                else least(t.n, (t.correct / t.n) * (1 - t.correct / t.n) / c.variance) end as n_effective
    from totals t
    join clustered c using (run_id, arm, slice, tool)
),
wilson as (
    select *,
           (p + 3.841458820694124 / (2 * n_effective)) / (1 + 3.841458820694124 / n_effective) as centre,
           1.959963984540054 * sqrt(p * (1 - p) / n_effective + 3.841458820694124 / (4 * n_effective * n_effective))
               / (1 + 3.841458820694124 / n_effective) as half
    from effective
)
select t.run_id, t.arm, t.rung, t.slice, t.tool, t.n, t.n_requests, t.correct,
       t.correct / t.n as accuracy,
       s.seed_min, s.seed_max,
       greatest(0.0, t.centre - t.half) as ci_low,
       least(1.0, t.centre + t.half) as ci_high,
       t.n_effective,
       s.seed_max - s.seed_min as seed_spread
from wilson t
join seed_spread s using (run_id, arm, slice, tool)
order by t.run_id, t.rung, t.slice, t.tool
