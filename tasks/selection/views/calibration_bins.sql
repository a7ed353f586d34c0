-- calibration_bins: one row per (run, arm, bin) for arms whose selector gives a confidence.
-- The reliability table: ten equal-width confidence bins (bin 1 = [0, 0.1), ..., bin 10 = [0.9, 1.0]),
-- rows in the bin, their mean confidence and their accuracy, and the gap between the two.
-- Calibration describes the router's confidence over every request it sees, so slices are pooled here.
with binned as (
    select run_id, arm, rung, correct, confidence,
           confidence_bin(confidence) as bin
    from selection_rows
    where confidence is not null
)
select run_id, arm, min(rung) as rung, bin,
       (bin - 1) / 10 as bin_low,
       bin / 10 as bin_high,
       count(*) as n,
       count(*) filter (where correct) as correct,
       avg(confidence) as mean_confidence,
       count(*) filter (where correct) / count(*) as accuracy,
       count(*) filter (where correct) / count(*) - avg(confidence) as gap
from binned
group by run_id, arm, bin
order by run_id, rung, bin
