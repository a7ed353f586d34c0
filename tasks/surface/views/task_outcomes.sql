-- task_outcomes: one row per (run, arm, task-set version, task).
-- The task as the statistical unit: how many of its seeds were run (trials) and succeeded (successes),
-- and whether it succeeded by majority (under more than half of its seeds). Task-success intervals
-- cluster on these rows, and paired comparisons and the interaction table join them across arms. failed:
-- runs that could not be carried out: a provider error, the run's budget, a failed tool surface (counted
-- as not successful).
select run_id, arm, min(rung) as rung, taskset_version, task_id,
       min(slice) as slice,
       min(intent) as intent,
       count(*) as trials,
       count(*) filter (where success) as successes,
       count(*) filter (where success) * 2 > count(*) as majority_success,
       count(*) filter (where stop_reason in ('error', 'run_budget', 'surface_error')) as failed
from task_runs
group by run_id, arm, taskset_version, task_id
order by run_id, rung, taskset_version, task_id
