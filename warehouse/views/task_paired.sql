-- task_paired: one row per (run, comparison, task-set version, task) for tasks both arms of a declared
-- comparison (the task_comparisons table: baseline -> arm) ran on the same version.
-- Each side's trials and successes and its majority verdict. worse = succeeded (by majority of seeds) in
-- the baseline and not in the arm; better = the reverse. Only the discordant tasks carry the paired test
-- (exact McNemar, tasks/stats/paired.py): tasks trivially easy or impossible for both add no variance.
select c.run_id, c.baseline, c.arm, a.taskset_version, a.task_id, a.slice, a.intent,
       a.trials as trials_from, a.successes as successes_from, a.majority_success as success_from,
       b.trials as trials_to, b.successes as successes_to, b.majority_success as success_to,
       a.majority_success and not b.majority_success as worse,
       b.majority_success and not a.majority_success as better
from task_comparisons c
join task_outcomes a on a.run_id = c.run_id and a.arm = c.baseline
join task_outcomes b on b.run_id = c.run_id and b.arm = c.arm
                     and b.taskset_version = a.taskset_version and b.task_id = a.task_id
order by c.run_id, c.baseline, c.arm, a.taskset_version, a.task_id
