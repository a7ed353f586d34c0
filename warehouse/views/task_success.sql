-- task_success: one row per (run, arm, task-set version, slice).
-- Task success over every seed of the arm: runs, tasks, successes and the success rate; per-seed success
-- min / max and the spread between them (the noise floor). Slices are never averaged together and each
-- task-set version is its own instrument (a new version is calibrated by running the baseline arm on it).
-- ci_low / ci_high: 95% interval with the task as the unit (Wilson on n_effective, the Kish effective
-- number of trials, as in aggregate_accuracy). Stops: runs ended by the task's budget (max_calls,
-- max_turns, max_tokens, max_wall) and runs that could not be carried out (provider error, run budget).
with per_seed as (
    select run_id, arm, taskset_version, slice, seed,
           count(*) filter (where success) / count(*) as seed_success
    from task_runs
    group by run_id, arm, taskset_version, slice, seed
),
seed_spread as (
    select run_id, arm, taskset_version, slice,
           count(*) as n_seeds,
           min(seed_success) as seed_min,
           max(seed_success) as seed_max,
           list(seed_success order by seed) as seed_successes
    from per_seed
    group by run_id, arm, taskset_version, slice
),
totals as (
    select run_id, arm, min(rung) as rung, taskset_version, slice,
           count(*) as n,
           count(distinct task_id) as n_tasks,
           count(*) filter (where success) as successes,
           count(*) filter (where stop_reason in ('max_calls', 'max_turns', 'max_tokens', 'max_wall')) as budget_stops,
           count(*) filter (where stop_reason in ('error', 'run_budget')) as failed_runs,
           avg(n_calls) as calls_per_run
    from task_runs
    group by run_id, arm, taskset_version, slice
),
clustered as (
    select t.run_id, t.arm, t.taskset_version, t.slice,
           sum(power(o.successes - t.successes / t.n * o.trials, 2)) / (t.n * t.n) as variance
    from totals t
    join task_outcomes o
      on o.run_id = t.run_id and o.arm = t.arm and o.taskset_version = t.taskset_version and o.slice = t.slice
    group by t.run_id, t.arm, t.taskset_version, t.slice, t.successes, t.n
),
effective as (
    select t.*, t.successes / t.n as p,
           case when t.successes = 0 or t.successes = t.n then t.n_tasks
                when c.variance <= 0 then t.n
                else least(t.n, (t.successes / t.n) * (1 - t.successes / t.n) / c.variance) end as n_effective
    from totals t
    join clustered c using (run_id, arm, taskset_version, slice)
),
wilson as (
    select *,
           (p + 3.841458820694124 / (2 * n_effective)) / (1 + 3.841458820694124 / n_effective) as centre,
           1.959963984540054 * sqrt(p * (1 - p) / n_effective + 3.841458820694124 / (4 * n_effective * n_effective))
               / (1 + 3.841458820694124 / n_effective) as half
    from effective
)
select t.run_id, t.arm, t.rung, t.taskset_version, t.slice, t.n, t.n_tasks, t.successes,
       t.successes / t.n as success_rate,
       greatest(0.0, t.centre - t.half) as ci_low,
       least(1.0, t.centre + t.half) as ci_high,
       t.n_effective,
       s.n_seeds, s.seed_min, s.seed_max, s.seed_max - s.seed_min as seed_spread, s.seed_successes,
       t.budget_stops, t.failed_runs, t.calls_per_run
from wilson t
join seed_spread s using (run_id, arm, taskset_version, slice)
order by t.run_id, t.rung, t.taskset_version, t.slice
