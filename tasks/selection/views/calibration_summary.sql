-- calibration_summary: one row per (run, arm) for arms whose selector gives a confidence.
-- Rows with a confidence, their accuracy and mean confidence, the expected calibration error (ECE: the
-- row-weighted mean |accuracy - mean confidence| over the ten bins of calibration_bins) and the Brier
-- score of the confidence in the pick (mean of (confidence - correct)^2; 0 is perfect).

-- One grouping of the rows, by calibration_bins' bins; the arm's figures are sums over its bins.
with bins as (
    select run_id, arm, confidence_bin(confidence) as bin, min(rung) as rung,
           count(*) as n,
           count(*) filter (where correct) as correct,
           sum(confidence) as confidence_sum,
           sum(power(confidence - (case when correct then 1.0 else 0.0 end), 2)) as squares
    from selection_rows
    where confidence is not null
    group by run_id, arm, confidence_bin(confidence)
)
select run_id, arm, min(rung) as rung,
       sum(n)::bigint as n,
       sum(correct) / sum(n) as accuracy,
       sum(confidence_sum) / sum(n) as mean_confidence,
       sum(n * abs(correct / n - confidence_sum / n)) / sum(n) as ece,
       sum(squares) / sum(n) as brier
from bins
group by run_id, arm
order by run_id, rung
