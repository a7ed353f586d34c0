-- paired_tool_changes: one row per (run, comparison, slice, tool) where tool is the label a request
-- carries in both arms (label-stable requests only: a request relabelled between arms compares nothing).
-- Requests, rows and accuracy on each side, the change in points as a fraction, and the discordant
-- requests (worse: right -> wrong, better: wrong -> right, by majority of seeds) an exact McNemar test
-- reads. The change's interval and the test's p-value are computed in tasks/stats/paired.py.
select run_id, baseline, arm, slice, expected_baseline as tool,
       count(*) as n_requests,
       sum(trials_baseline) as rows_baseline,
       sum(trials_arm) as rows_arm,
       sum(correct_baseline) / sum(trials_baseline) as accuracy_baseline,
       sum(correct_arm) / sum(trials_arm) as accuracy_arm,
       sum(correct_arm) / sum(trials_arm) - sum(correct_baseline) / sum(trials_baseline) as change,
       count(*) filter (where worse) as worse,
       count(*) filter (where better) as better
from paired_requests
where label_stable
group by run_id, baseline, arm, slice, expected_baseline
order by run_id, baseline, arm, slice, tool
