-- paired_tool_changes: one row per (run, comparison, slice, tool) where tool is the label a request
-- carries in both arms, as the version names it (selection_rows.label: a prefix or rename is no relabel;
-- label-stable requests only: a request relabelled between arms compares nothing).
-- Requests, rows and accuracy on each side, the change in points as a fraction, and the requests that
-- carry it (worse: right on a smaller share of their seeds after, better: on a larger share). The change's
-- interval and its p-value (one score test over every seed of every request) are computed in
-- tasks/stats/paired.py.

-- The pairs of paired_requests (label-stable ones), joined here from per-request outcomes grouped from the
-- rows: paired_requests sorts its output, which this grouping does not need.
with outcomes as (
    select run_id, arm, request_id,
           min(slice) as slice,
           min(coalesce(label, expected)) as label,
           count(*) as trials,
           count(*) filter (where correct) as correct
    from selection_rows
    group by run_id, arm, request_id
),
label_stable_pairs as (
    select c.run_id, c.baseline, c.arm, b.slice, b.label as tool,
           b.trials as trials_baseline, b.correct as correct_baseline,
           a.trials as trials_arm, a.correct as correct_arm,
           share_fell(b.correct, b.trials, a.correct, a.trials) as worse,
           share_fell(a.correct, a.trials, b.correct, b.trials) as better
    from comparisons c
    join outcomes b on b.run_id = c.run_id and b.arm = c.baseline
    join outcomes a on a.run_id = c.run_id and a.arm = c.arm and a.request_id = b.request_id
    where b.label = a.label
)
select run_id, baseline, arm, slice, tool,
       count(*) as n_requests,
       sum(trials_baseline) as rows_baseline,
       sum(trials_arm) as rows_arm,
       sum(correct_baseline) / sum(trials_baseline) as accuracy_baseline,
       sum(correct_arm) / sum(trials_arm) as accuracy_arm,
       sum(correct_arm) / sum(trials_arm) - sum(correct_baseline) / sum(trials_baseline) as change,
       count(*) filter (where worse) as worse,
       count(*) filter (where better) as better
from label_stable_pairs
group by run_id, baseline, arm, slice, tool
order by run_id, baseline, arm, slice, tool
