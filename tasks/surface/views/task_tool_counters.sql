-- task_tool_counters: one row per (run, arm, tool), tool = the name the agent called (as offered; an
-- unknown name the agent made up is its own row, backend_tool null).
-- calls: every call that counted against the budget (calls skipped because the budget was spent are left
-- out); invalid: rejected by schema validation, never executed; as_text: of invalid, calls written as text
-- in a reply (tool-call markup the server did not return as a call; as_text_rate its share of the tool's
-- calls; a markup naming no tool is its own row, tool = the markup); errors: executed and refused by the
-- backend; invalid_rate and error_rate are shares of the tool's calls (error_rate_executed: of those that
-- reached the backend); retries: calls repeating an earlier call's tool and arguments in the same run;
-- runs_with_tool: runs (seed x task) in which the tool was called at least once, and calls_per_run_with_tool
-- = calls / that; share_of_calls: the tool's share of the arm's calls (how much it weighs in the aggregate
-- invalid rate of task_call_totals). n_seeds: the arm's seeds; calls_per_seed and invalid_per_seed: over one
-- pass of the task set (a seed replaying the same tasks is not new evidence: what the broken-tool gate's
-- min_calls counts); tasks_with_tool: distinct tasks in which the tool was called under any seed.
-- unfilled: of invalid, calls the agent made without an argument it could not fill (the agent's missing
-- input, not the tool's schema: invalid_reason 'the agent could not fill argument ...'); invalid_rate_filled:
-- the other invalid calls over the calls the agent could fill (null when it could fill none), what the
-- broken-tool gate judges.
with calls as (
    select * from task_calls where not skipped_budget
),
arm_totals as (
    select run_id, arm, count(*) as arm_calls from calls group by run_id, arm
),
per_tool as (
    select run_id, arm, name as tool,
           min(tool) as backend_tool,
           count(*) as calls,
           count(*) filter (where not valid) as invalid,
           count(*) filter (where not valid and starts_with(invalid_reason, 'the agent could not fill argument '))
               as unfilled,
           count(*) filter (where as_text) as as_text,
           count(*) filter (where executed) as executed,
           count(*) filter (where error) as errors,
           count(*) filter (where is_retry) as retries,
           count(distinct (seed, taskset_version, task_id)) as runs_with_tool,
           count(distinct (taskset_version, task_id)) as tasks_with_tool,
           sum(upstream_reads)::bigint as upstream_reads,
           count(*) filter (where irreversible) as irreversible_actions
    from calls
    group by run_id, arm, name
)
select p.run_id, p.arm, r.rung, p.tool, p.backend_tool, p.calls, p.invalid,
       p.invalid / p.calls as invalid_rate,
       p.unfilled,
       case when p.calls > p.unfilled then (p.invalid - p.unfilled) / (p.calls - p.unfilled) end
           as invalid_rate_filled,
       p.as_text, p.as_text / p.calls as as_text_rate,
       p.executed, p.errors,
       p.errors / p.calls as error_rate,
       case when p.executed > 0 then p.errors / p.executed end as error_rate_executed,
       p.retries, p.runs_with_tool,
       p.calls / p.runs_with_tool as calls_per_run_with_tool,
       p.calls / a.arm_calls as share_of_calls,
       p.upstream_reads, p.irreversible_actions,
       r.n_seeds, p.calls / r.n_seeds as calls_per_seed, p.invalid / r.n_seeds as invalid_per_seed,
       p.tasks_with_tool
from per_tool p
join arm_totals a using (run_id, arm)
join (select run_id, arm, min(rung) as rung, count(distinct seed) as n_seeds from task_runs group by run_id, arm) r
    using (run_id, arm)
order by p.run_id, r.rung, p.calls desc, p.tool
