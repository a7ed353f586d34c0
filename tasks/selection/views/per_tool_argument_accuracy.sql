-- per_tool_argument_accuracy: one row per (run, arm, slice, tool), tool = the expected label ('none' included).
-- Argument accuracy of each tool over the rows whose arguments were scored (arguments_correct not null, as
-- argument_accuracy counts them: the expected tool was called and the request has expected arguments); n = rows
-- expecting the tool, not_scored = those not scored (another tool chosen, no arguments given, or no expected
-- arguments), never counted right. scored, arguments_right, accuracy = arguments_right / scored over every seed;
-- tool_right_arguments_wrong = scored - arguments_right; n_requests = requests with a scored row.
-- seed_min / seed_max: argument accuracy of each seed's scored rows (seeds with none left out).
-- ci_low / ci_high: 95% interval with the request as the unit (Wilson on n_effective, as per_tool_accuracy;
-- both from the table macro clustered_accuracy_per_tool).
-- accuracy, its interval and the seed figures are null where nothing was scored: NOT JUDGED, never 0%.
with trials as (
    select run_id, arm, rung, slice, expected as tool, request_id, seed,
           arguments_correct is not null as scored, arguments_correct as "right"
    from selection_rows
)
select run_id, arm, rung, slice, tool, n,
       coalesce(scored, 0) as scored, n - coalesce(scored, 0) as not_scored,
       coalesce(n_requests, 0) as n_requests, coalesce("right", 0) as arguments_right,
       coalesce(scored - "right", 0) as tool_right_arguments_wrong,
       "right" / scored as accuracy,
       seed_min, seed_max,
       case when scored > 0 then wilson_low("right" / scored, n_effective) end as ci_low,
       case when scored > 0 then wilson_high("right" / scored, n_effective) end as ci_high,
       n_effective,
       seed_max - seed_min as seed_spread
from clustered_accuracy_per_tool(trials)
order by run_id, rung, slice, tool
