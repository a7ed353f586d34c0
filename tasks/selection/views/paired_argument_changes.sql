-- paired_argument_changes: one row per (run, comparison, slice, tool) with a request scored in either arm
-- (paired_argument_requests: label-stable requests both arms answered). tool is the label as the version
-- names it. n_requests = requests scored in both arms (the pairs); scored_* and right_* = their scored rows and
-- rows with right arguments on each side; accuracy_* = right / scored; change = accuracy_arm -
-- accuracy_baseline, as a fraction; worse / better = the pairs that carry it. one_side = requests scored in one
-- arm only, left out of the change. accuracy and change are null without a pair: NOT JUDGED, never 0.
-- The change's interval and its p-value (one score test over every scored seed of every pair) are computed in
-- tasks/stats/paired.py, as for paired_tool_changes.
select run_id, baseline, arm, slice, tool,
       count(*) filter (where paired) as n_requests,
       count(*) filter (where not paired) as one_side,
       coalesce(sum(scored_baseline) filter (where paired), 0) as scored_baseline,
       coalesce(sum(scored_arm) filter (where paired), 0) as scored_arm,
       coalesce(sum(right_baseline) filter (where paired), 0) as right_baseline,
       coalesce(sum(right_arm) filter (where paired), 0) as right_arm,
       sum(right_baseline) filter (where paired) / sum(scored_baseline) filter (where paired) as accuracy_baseline,
       sum(right_arm) filter (where paired) / sum(scored_arm) filter (where paired) as accuracy_arm,
       sum(right_arm) filter (where paired) / sum(scored_arm) filter (where paired)
           - sum(right_baseline) filter (where paired) / sum(scored_baseline) filter (where paired) as change,
       count(*) filter (where worse) as worse,
       count(*) filter (where better) as better
from paired_argument_requests
group by run_id, baseline, arm, slice, tool
order by run_id, baseline, arm, slice, tool
