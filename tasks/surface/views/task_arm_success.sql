-- task_arm_success: one row per (run, arm, task-set version).
-- The arm over every task of the version, and what it cost: task success over all its runs (each task counts
-- once, so a slice weighs by its number of tasks: not an average of task_success's slice figures, which stay
-- the reading a change is judged on), with the 95% interval task_success gives a slice: Wilson on
-- n_effective, the small-sample corrected Kish effective number of trials over the tasks of task_outcomes
-- (the macros clustered_sums, clustered_moments, clustered_n_star_from); per-seed success, min / max and
-- spread (the noise floor). Tokens and cost as billed over every turn (task_runs.input_tokens, output_tokens,
-- cost_usd; null for an agent billed nothing, the offline baseline): totals, per run, input tokens per turn
-- (a prompt trimmed by 680 tokens shows here), cost per run and per completed task; runs_billed /
-- runs_costed: runs that carry token counts / a cost. runs_results_unseen: runs with a turn whose prompt did not
-- grow by the tool results fed before it (task_runs.results_unseen_turns: the server may drop them).
with per_seed as (
    select run_id, arm, taskset_version, seed,
           count(*) filter (where success) / count(*) as seed_success
    from task_runs
    group by run_id, arm, taskset_version, seed
),
seed_spread as (
    select run_id, arm, taskset_version,
           count(*) as n_seeds,
           min(seed_success) as seed_min,
           max(seed_success) as seed_max,
           list(seed_success order by seed) as seed_successes
    from per_seed
    group by run_id, arm, taskset_version
),
totals as (
    select run_id, arm, min(rung) as rung, taskset_version,
           count(*) as n,
           count(distinct task_id) as n_tasks,
           count(distinct slice) as n_slices,
           count(*) filter (where success) as successes,
           sum(n_turns)::bigint as turns,
           count(input_tokens) as runs_billed,
           sum(input_tokens)::bigint as input_tokens,
           sum(output_tokens)::bigint as output_tokens,
           sum(n_turns) filter (where input_tokens is not null) as billed_turns,
           count(cost_usd) as runs_costed,
           sum(cost_usd) as cost_usd,
           count(*) filter (where results_unseen_turns > 0) as runs_results_unseen
    from task_runs
    group by run_id, arm, taskset_version
),
effective as (
    select run_id, arm, taskset_version, clustered_n_star_from(sums, moments) as n_effective
    from (select *, clustered_moments(sums) as moments
          from (select run_id, arm, taskset_version, clustered_sums(successes, trials) as sums
                from task_outcomes
                group by run_id, arm, taskset_version))
)
select t.run_id, t.arm, t.rung, t.taskset_version, t.n, t.n_tasks, t.n_slices, t.successes,
       t.successes / t.n as success_rate,
       wilson_low(t.successes / t.n, e.n_effective) as ci_low,
       wilson_high(t.successes / t.n, e.n_effective) as ci_high,
       e.n_effective,
       s.n_seeds, s.seed_min, s.seed_max, s.seed_max - s.seed_min as seed_spread, s.seed_successes,
       t.turns, t.runs_billed, t.input_tokens, t.output_tokens, t.cost_usd,
       t.input_tokens / nullif(t.runs_billed, 0) as input_tokens_per_run,
       t.input_tokens / nullif(t.billed_turns, 0) as input_tokens_per_turn,
       t.output_tokens / nullif(t.runs_billed, 0) as output_tokens_per_run,
       t.cost_usd / nullif(t.runs_costed, 0) as cost_usd_per_run,
       case when t.successes > 0 then t.cost_usd / t.successes end as cost_usd_per_completed,
       t.runs_results_unseen
from totals t
join effective e using (run_id, arm, taskset_version)
join seed_spread s using (run_id, arm, taskset_version)
order by t.run_id, t.rung, t.taskset_version
