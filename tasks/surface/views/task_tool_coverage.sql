-- task_tool_coverage: one row per (run, arm, surface tool): every tool of the arm's catalogue (the tools its
-- surface offers, names as offered: task_runs.tool_order), every tool a task needs that the surface does not
-- offer, and every name the agent called that it does not offer.
-- needed: the tools a task names as needed (task_runs.needed_tools: its assertion's required calls, its wants,
-- its intent when the intent names a tool; tasks/surface/tool_needs.py), as the arm's surface spells them.
-- tasks_needing: distinct tasks (version, task) that need the tool, of the arm's n_tasks; tasks_forbidding:
-- distinct tasks naming it as a negative case (task_runs.forbidden_tools: its assertion's not_called, its
-- forbids). calls: calls that counted against the budget (skipped_budget left out), tasks_calling: distinct
-- tasks with a call of it under any seed; calls_not_needed / tasks_calling_not_needed: of those, the calls made
-- in runs of tasks that do not need the tool (MCPJam's per-tool false positives). coverage: 'needed' (offered, some task needs it),
-- 'called, not needed' (offered, no task needs it, the agent called it anyway), 'negative case only' (offered,
-- no task needs it, some task forbids it, never called), 'untouched' (offered, no task needs or forbids it,
-- never called: the task set does not exercise it), 'not offered' (a task needs it or the agent called it,
-- but the arm's surface does not offer it). runs / runs_not_carried_out: the arm's task runs and
-- those that ended error / run_budget / surface_error (their calls were not measured: a tool they would have
-- called is not 'never called'); runs_without_needs: runs landed before task_runs recorded needed_tools and
-- forbidden_tools (null there): what their tasks need is not known, and the report does not read coverage.
with arm_runs as (
    select run_id, arm, min(rung) as rung, min(surface) as surface, count(*) as runs,
           count(*) filter (where stop_reason in ('error', 'run_budget', 'surface_error')) as runs_not_carried_out,
           count(*) filter (where needed_tools is null or forbidden_tools is null) as runs_without_needs,
           count(distinct (taskset_version, task_id)) as n_tasks
    from task_runs
    group by run_id, arm
),
catalogue as (
    select distinct run_id, arm, tool
    from (select run_id, arm, unnest(tool_order) as tool from task_runs)
),
needs as (
    select distinct run_id, arm, taskset_version, task_id, tool
    from (select run_id, arm, taskset_version, task_id, unnest(needed_tools) as tool from task_runs)
),
needed as (
    select run_id, arm, tool, count(*) as tasks_needing
    from needs
    group by run_id, arm, tool
),
forbidden as (
    select run_id, arm, tool, count(distinct (taskset_version, task_id)) as tasks_forbidding
    from (select run_id, arm, taskset_version, task_id, unnest(forbidden_tools) as tool from task_runs)
    group by run_id, arm, tool
),
calls as (
    select c.run_id, c.arm, c.name as tool, c.tool as backend_tool, c.taskset_version, c.task_id,
           n.tool is not null as task_needs
    from task_calls c
    left join needs n
        on n.run_id = c.run_id and n.arm = c.arm and n.taskset_version = c.taskset_version
       and n.task_id = c.task_id and n.tool = c.name
    where not c.skipped_budget
),
called as (
    select run_id, arm, tool, min(backend_tool) as backend_tool, count(*) as calls,
           count(*) filter (where not task_needs) as calls_not_needed,
           count(distinct (taskset_version, task_id)) as tasks_calling,
           count(distinct (taskset_version, task_id)) filter (where not task_needs) as tasks_calling_not_needed
    from calls
    group by run_id, arm, tool
),
tools as (
    select run_id, arm, tool from catalogue
    union
    select run_id, arm, tool from needed
    union
    select run_id, arm, tool from called
)
select t.run_id, t.arm, a.rung, a.surface, t.tool, k.backend_tool,
       g.tool is not null as offered,
       coalesce(n.tasks_needing, 0) as tasks_needing, a.n_tasks, coalesce(f.tasks_forbidding, 0) as tasks_forbidding,
       coalesce(k.calls, 0) as calls, coalesce(k.tasks_calling, 0) as tasks_calling,
       coalesce(k.calls_not_needed, 0) as calls_not_needed,
       coalesce(k.tasks_calling_not_needed, 0) as tasks_calling_not_needed,
       case when g.tool is null then 'not offered'
            when n.tool is not null then 'needed'
            when k.calls > 0 then 'called, not needed'
            when f.tool is not null then 'negative case only'
            else 'untouched' end as coverage,
       a.runs, a.runs_not_carried_out, a.runs_without_needs
from tools t
join arm_runs a using (run_id, arm)
left join catalogue g using (run_id, arm, tool)
left join needed n using (run_id, arm, tool)
left join called k using (run_id, arm, tool)
left join forbidden f using (run_id, arm, tool)
order by t.run_id, a.rung, t.tool
