-- calibration_summary: one row per (run, arm) for arms whose selector gives a confidence.
-- Rows with a confidence, their accuracy and mean confidence, the expected calibration error (ECE: the
-- row-weighted mean |accuracy - mean confidence| over the ten bins of calibration_bins) and the Brier
-- score of the confidence in the pick (mean of (confidence - correct)^2; 0 is perfect).
with rows_ as (
    select run_id, arm, min(rung) as rung, count(*) as n,
           count(*) filter (where correct) / count(*) as accuracy,
           avg(confidence) as mean_confidence,
           avg(power(confidence - (case when correct then 1.0 else 0.0 end), 2)) as brier
    from selection_rows
    where confidence is not null
    group by run_id, arm
),
ece as (
    select run_id, arm, sum(n * abs(gap)) / sum(n) as ece
    from calibration_bins
    group by run_id, arm
)
select r.run_id, r.arm, r.rung, r.n, r.accuracy, r.mean_confidence, e.ece, r.brier
from rows_ r
join ece e using (run_id, arm)
order by r.run_id, r.rung
