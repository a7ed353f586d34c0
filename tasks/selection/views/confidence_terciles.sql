-- confidence_terciles: one row per (run, arm, tercile) for arms whose selector gives a confidence.
-- Rows ranked by confidence (ties broken by request id, then seed) and cut in three equal parts:
-- tercile 1 = least confident third, 3 = most confident. Accuracy per third with a 95% Wilson interval
-- on the rows, and the confidence range of the third. A router worth gating on shows a clear gap.
with ranked as (
    select run_id, arm, rung, correct, confidence,
           ntile(3) over (partition by run_id, arm order by confidence, request_id, seed) as tercile
    from selection_rows
    where confidence is not null
),
totals as (
    select run_id, arm, min(rung) as rung, tercile, count(*) as n,
           count(*) filter (where correct) as correct,
           min(confidence) as confidence_min, max(confidence) as confidence_max
    from ranked
    group by run_id, arm, tercile
)
select run_id, arm, rung, tercile, n, correct, correct / n as accuracy,
       wilson_low(correct / n, n) as ci_low,
       wilson_high(correct / n, n) as ci_high,
       confidence_min, confidence_max
from totals
order by run_id, rung, tercile
