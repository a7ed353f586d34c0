-- paired_requests: one row per (run, comparison, request) for requests both arms of a declared
-- comparison answered (the `comparisons` table: baseline -> arm).
-- Each side's trials and correct seeds, its majority verdict and its label; label_stable says the
-- request expects the same tool in both arms, as the version labels it (`label`: a prefix or rename
-- is not a relabel); per-tool comparisons use only those, slice comparisons use all. worse = right on
-- a smaller share of its seeds in the arm than in the baseline; better = the reverse (with one seed or
-- seeds that agree: right -> wrong and wrong -> right). right_* = by majority.

-- outcomes holds request_outcomes' figures, grouped here from the rows (request_outcomes sorts its
-- output, which a join does not need); it is read twice, computed once, and a run filter reaches the rows.
with outcomes as (
    select run_id, arm, request_id,
           min(slice) as slice,
           min(expected) as expected,
           min(coalesce(label, expected)) as label,
           count(*) as trials,
           count(*) filter (where correct) as correct,
           majority_right(count(*) filter (where correct), count(*)) as majority_right
    from selection_rows
    group by run_id, arm, request_id
)
select c.run_id, c.baseline, c.arm, b.request_id, b.slice,
       b.expected as expected_baseline, a.expected as expected_arm,
       b.label = a.label as label_stable,
       b.trials as trials_baseline, b.correct as correct_baseline,
       a.trials as trials_arm, a.correct as correct_arm,
       b.majority_right as right_baseline, a.majority_right as right_arm,
       share_fell(b.correct, b.trials, a.correct, a.trials) as worse,
       share_fell(a.correct, a.trials, b.correct, b.trials) as better
from comparisons c
join outcomes b on b.run_id = c.run_id and b.arm = c.baseline
join outcomes a on a.run_id = c.run_id and a.arm = c.arm and a.request_id = b.request_id
order by c.run_id, c.baseline, c.arm, b.request_id
