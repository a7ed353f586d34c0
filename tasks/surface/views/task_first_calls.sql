-- task_first_calls: one row per (run, arm, intent, first tool).
-- The first-call intent cross-tab: for every run (seed x task), the intent the task file declares against
-- the first tool the agent called ('(no call)' when it called none), with the count and its share of the
-- intent's runs. An intent split close to evenly between two tools (47 / 37) means the two are
-- interchangeable from where the agent stands; a tool taking nearly all of its intent (57 of 64) routes.
with runs as (
    select run_id, arm, rung, coalesce(intent, '(none)') as intent, coalesce(first_tool, '(no call)') as first_tool
    from task_runs
)
select run_id, arm, min(rung) as rung, intent, first_tool,
       count(*) as n,
       count(*) / sum(count(*)) over (partition by run_id, arm, intent) as share_of_intent,
       sum(count(*)) over (partition by run_id, arm, intent) as intent_runs
from runs
group by run_id, arm, intent, first_tool
order by run_id, rung, intent, n desc, first_tool
