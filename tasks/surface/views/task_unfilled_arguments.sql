-- task_unfilled_arguments: one row per (run, arm, argument) the arm's agent could not fill.
-- A call the agent made without a required argument it had no value for (the offline baseline says so:
-- tasks/surface/baseline_agent.py) is invalid, its reason 'the agent could not fill argument NAME[,NAME]: ...'.
-- calls: such calls lacking this argument (calls skipped because the budget was spent are left out); tools: the
-- tools they called; runs: task runs (seed x task) with one. Per arm, the same on every row of it: arm_runs, its
-- task runs, and runs_only_unfilled, the task runs that made at least one call, every one of them failing for an
-- argument the agent could not fill, and that did not stop for a failure of their own (error, run_budget,
-- surface_error: counted as not carried out already). Such a run measured the agent's missing input, not the
-- surface: the report counts it as not carried out (tasks/surface/gates.py).
with calls as (
    select *,
           regexp_extract(invalid_reason, '^the agent could not fill argument ([^:]+):', 1) as unfilled
    from task_calls
    where not skipped_budget
),
lacking as (
    select run_id, arm, seed, taskset_version, task_id, name, unnest(string_split(unfilled, ',')) as argument
    from calls
    where not valid and unfilled <> ''
),
per_argument as (
    select run_id, arm, argument,
           count(*) as calls,
           list(distinct name order by name) as tools,
           count(distinct (seed, taskset_version, task_id)) as runs
    from lacking
    group by run_id, arm, argument
),
run_calls as (
    select run_id, arm, seed, taskset_version, task_id,
           bool_and(not valid and unfilled <> '') as only_unfilled
    from calls
    group by run_id, arm, seed, taskset_version, task_id
),
per_arm as (
    select r.run_id, r.arm, min(r.rung) as rung, count(*) as arm_runs,
           count(*) filter (where c.only_unfilled
                            and r.stop_reason not in ('error', 'run_budget', 'surface_error')) as runs_only_unfilled
    from task_runs r
    left join run_calls c using (run_id, arm, seed, taskset_version, task_id)
    group by r.run_id, r.arm
)
select a.run_id, a.arm, m.rung, a.argument, a.calls, a.tools, a.runs, m.arm_runs, m.runs_only_unfilled
from per_argument a
join per_arm m using (run_id, arm)
order by a.run_id, m.rung, a.calls desc, a.argument
