-- task_success: one row per (run, arm, task-set version, slice).
-- Task success over every seed of the arm: runs, tasks, successes and the success rate; per-seed success min
-- / max and the spread between them (the noise floor). Slices are never averaged together and each task-set
-- version is its own instrument (a new version is calibrated by running the baseline arm on it). ci_low /
-- ci_high: 95% interval with the task as the unit: Wilson on n_effective, the small-sample corrected Kish
-- effective number of trials over the tasks of task_outcomes (the macros clustered_sums, clustered_moments,
-- clustered_n_star_from, as in aggregate_accuracy). Stops: runs ended by the task's budget (max_calls,
-- max_turns, max_tokens, max_wall) and runs that could not be carried out (provider error, run budget, a
-- failed tool surface).
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
           count(*) filter (where stop_reason in ('error', 'run_budget', 'surface_error')) as failed_runs,
           avg(n_calls) as calls_per_run
    from task_runs
    group by run_id, arm, taskset_version, slice
),
effective as (
    select run_id, arm, taskset_version, slice, clustered_n_star_from(sums, moments) as n_effective
    from (select *, clustered_moments(sums) as moments
          from (select run_id, arm, taskset_version, slice, clustered_sums(successes, trials) as sums
                from task_outcomes
                group by run_id, arm, taskset_version, slice))
)
select t.run_id, t.arm, t.rung, t.taskset_version, t.slice, t.n, t.n_tasks, t.successes,
       t.successes / t.n as success_rate,
       wilson_low(t.successes / t.n, e.n_effective) as ci_low,
       wilson_high(t.successes / t.n, e.n_effective) as ci_high,
       e.n_effective,
       s.n_seeds, s.seed_min, s.seed_max, s.seed_max - s.seed_min as seed_spread, s.seed_successes,
       t.budget_stops, t.failed_runs, t.calls_per_run
from totals t
join effective e using (run_id, arm, taskset_version, slice)
join seed_spread s using (run_id, arm, taskset_version, slice)
order by t.run_id, t.rung, t.taskset_version, t.slice
