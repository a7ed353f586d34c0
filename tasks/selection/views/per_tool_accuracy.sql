-- per_tool_accuracy: one row per (run, arm, slice, tool), tool = the expected label ('none' included).
-- Rows and requests expecting the tool, how many were right, accuracy, and the per-seed min / max.
-- ci_low / ci_high: 95% interval with the request as the unit (Wilson on n_effective, as in
-- aggregate_accuracy); seed_spread = seed_max - seed_min. The figures come from the table macro
-- clustered_accuracy_per_tool, every row scored on whether its tool was right.
with trials as (
    select run_id, arm, rung, slice, expected as tool, request_id, seed, true as scored, correct as "right"
    from selection_rows
)
select run_id, arm, rung, slice, tool, n, n_requests, "right" as correct,
       "right" / n as accuracy,
       seed_min, seed_max,
       wilson_low("right" / n, n_effective) as ci_low,
       wilson_high("right" / n, n_effective) as ci_high,
       n_effective,
       seed_max - seed_min as seed_spread
from clustered_accuracy_per_tool(trials)
order by run_id, rung, slice, tool
