-- task_paired: one row per (run, comparison, task-set version, task) for tasks both arms of a declared
-- comparison (the task_comparisons table: baseline -> arm) ran on the same version.
-- Each side's trials and successes and its majority verdict. worse = succeeded on a smaller share of its
-- seeds in the arm than in the baseline; better = the reverse. The change's interval and p-value (one score
-- test over every seed of every task) are computed in tasks/stats/paired.py.
select c.run_id, c.baseline, c.arm, a.taskset_version, a.task_id, a.slice, a.intent,
       a.trials as trials_from, a.successes as successes_from, a.majority_success as success_from,
       b.trials as trials_to, b.successes as successes_to, b.majority_success as success_to,
       share_fell(a.successes, a.trials, b.successes, b.trials) as worse,
       share_fell(b.successes, b.trials, a.successes, a.trials) as better
from task_comparisons c
join task_outcomes a on a.run_id = c.run_id and a.arm = c.baseline
join task_outcomes b on b.run_id = c.run_id and b.arm = c.arm
                     and b.taskset_version = a.taskset_version and b.task_id = a.task_id
order by c.run_id, c.baseline, c.arm, a.taskset_version, a.task_id
