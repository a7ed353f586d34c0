-- position_band_accuracy: one row per (run, arm, slice, position_third).
-- Accuracy when the expected tool stood in the first, middle or last third of the permuted order, with a
-- 95% interval that clusters rows on the request (Wilson on n_effective, as in aggregate_accuracy): a
-- request can fall in different thirds under different seeds. Rows expecting 'none' are left out.
with banded as (
    select run_id, arm, rung, slice, request_id, correct,
           least(3, 1 + floor(3 * (expected_position - 1) / n_tools))::integer as position_third
    from selection_rows
    where expected_position is not null and n_tools > 0
),
per_request as (
    select run_id, arm, slice, position_third, request_id,
           count(*) as trials, count(*) filter (where correct) as correct
    from banded
    group by all
),
totals as (
    select run_id, arm, min(rung) as rung, slice, position_third,
           count(*) as n, count(distinct request_id) as n_requests,
           count(*) filter (where correct) as correct
    from banded
    group by run_id, arm, slice, position_third
),
clustered as (
    select t.run_id, t.arm, t.slice, t.position_third,
           sum(power(r.correct - t.correct / t.n * r.trials, 2)) / (t.n * t.n) as variance
    from totals t
    join per_request r using (run_id, arm, slice, position_third)
    group by t.run_id, t.arm, t.slice, t.position_third, t.correct, t.n
),
effective as (
    select t.*, t.correct / t.n as p,
           case when t.correct = 0 or t.correct = t.n then t.n_requests
                when c.variance <= 0 then t.n
                else least(t.n, (t.correct / t.n) * (1 - t.correct / t.n) / c.variance) end as n_effective
    from totals t
    join clustered c using (run_id, arm, slice, position_third)
),
wilson as (
    select *,
           (p + 3.841458820694124 / (2 * n_effective)) / (1 + 3.841458820694124 / n_effective) as centre,
           1.959963984540054 * sqrt(p * (1 - p) / n_effective + 3.841458820694124 / (4 * n_effective * n_effective))
               / (1 + 3.841458820694124 / n_effective) as half
    from effective
)
select run_id, arm, rung, slice, position_third, n, n_requests, correct, p as accuracy,
       greatest(0.0, centre - half) as ci_low,
       least(1.0, centre + half) as ci_high,
       n_effective
from wilson
order by run_id, rung, slice, position_third
