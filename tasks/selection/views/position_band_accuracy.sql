-- position_band_accuracy: one row per (run, arm, slice, position_third).
-- Accuracy when the expected tool stood in the first, middle or last third of the permuted order, with a
-- 95% interval that clusters rows on the request (Wilson on n_effective, as in aggregate_accuracy): a
-- request can fall in different thirds under different seeds. Rows expecting 'none' are left out.
with per_request as (
    select run_id, arm, slice, position_third(expected_position, n_tools) as position_third, request_id,
           min(rung) as rung,
           count(*) as trials,
           count(*) filter (where correct) as correct
    from selection_rows
    where expected_position is not null and n_tools > 0
    group by run_id, arm, slice, position_third(expected_position, n_tools), request_id
),
totals as (
    select run_id, arm, slice, position_third, min(rung) as rung,
           sum(trials)::bigint as n,
           count(*) as n_requests,
           sum(correct)::bigint as correct,
           clustered_sums(correct, trials) as sums
    from per_request
    group by run_id, arm, slice, position_third
),
effective as (
    select *, clustered_n_star_from(sums, moments) as n_effective
    from (select *, clustered_moments(sums) as moments from totals)
)
select run_id, arm, rung, slice, position_third, n, n_requests, correct, correct / n as accuracy,
       wilson_low(correct / n, n_effective) as ci_low,
       wilson_high(correct / n, n_effective) as ci_high,
       n_effective
from effective
order by run_id, rung, slice, position_third
