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
),
wilson as (
    select *, correct / n as p,
           (correct / n + 3.841458820694124 / (2 * n)) / (1 + 3.841458820694124 / n) as centre,
           1.959963984540054 * sqrt((correct / n) * (1 - correct / n) / n + 3.841458820694124 / (4 * n * n))
               / (1 + 3.841458820694124 / n) as half
    from totals
)
select run_id, arm, rung, tercile, n, correct, p as accuracy,
       greatest(0.0, centre - half) as ci_low,
       least(1.0, centre + half) as ci_high,
       confidence_min, confidence_max
from wilson
order by run_id, rung, tercile
