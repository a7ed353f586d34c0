-- position_accuracy: one row per (run, arm, slice, expected_position).
-- Accuracy by where the expected tool stood in the seed's permuted order (1 = offered first). Rows
-- expecting 'none' have no position and are left out. position_third: 1 = first third of the offered
-- tools, 2 = middle, 3 = last (from expected_position and n_tools). ci_low / ci_high: Wilson on the rows
-- (a request stands at one position per seed, so rows of one position rarely share a request).
with totals as (
    select run_id, arm, min(rung) as rung, slice, expected_position,
           position_third(expected_position, max(n_tools)) as position_third,
           count(*) as n,
           count(distinct request_id) as n_requests,
           count(*) filter (where correct) as correct
    from selection_rows
    where expected_position is not null
    group by run_id, arm, slice, expected_position
)
select run_id, arm, rung, slice, expected_position, position_third, n, n_requests, correct,
       correct / n as accuracy,
       wilson_low(correct / n, n) as ci_low,
       wilson_high(correct / n, n) as ci_high
from totals
order by run_id, rung, slice, expected_position
