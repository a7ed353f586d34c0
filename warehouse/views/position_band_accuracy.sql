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
           sum(correct * correct) as sum_cc,
           sum(correct * trials) as sum_ct,
           sum(trials * trials) as sum_tt,
           sum(correct * correct * correct * correct) as sum_c4,
           sum(correct * correct * correct * trials) as sum_c3t,
           sum(correct * correct * trials * trials) as sum_c2t2,
           sum(correct * trials * trials * trials) as sum_ct3,
           sum(trials * trials * trials * trials) as sum_t4
    from per_request
    group by run_id, arm, slice, position_third
),
effective as (
    select *, correct / n as p,
           clustered_n_star(correct, n, n_requests, sum_cc, sum_ct, sum_tt, sum_c4, sum_c3t, sum_c2t2, sum_ct3, sum_t4) as n_effective
    from totals
)
select run_id, arm, rung, slice, position_third, n, n_requests, correct, p as accuracy,
       wilson_low(p, n_effective) as ci_low,
       wilson_high(p, n_effective) as ci_high,
       n_effective
from effective
order by run_id, rung, slice, position_third
