-- task_call_totals: one row per (run, arm).
-- The aggregate over every call of the arm, to be read beside task_tool_counters: calls, invalid calls
-- and the aggregate invalid rate (invalid / calls: it weights each tool by how often it is called, so one
-- badly broken tool averaged with healthy ones gives a rate that describes no tool), with the lowest and
-- highest per-tool invalid rate it averages over; as_text: of invalid, calls written as text in a reply
-- (as_text_rate: their share of the calls); errors and error rate; retries; runs and calls_per_run (over
-- every run, a run with no call included); runs_with_call: runs (seed x task) with at least one call, and
-- calls_per_run_with_call = calls / that (what the per-tool counters' calls_per_run_with_tool is for a tool).
-- Every figure counts the calls that counted against the budget; skipped_budget: the calls recorded after the
-- budget was spent (never executed, in no other column), so calls + skipped_budget = the arm's task_calls rows.
with calls as (
    select * from task_calls where not skipped_budget
),
totals as (
    select run_id, arm,
           count(*) as calls,
           count(*) filter (where not valid) as invalid,
           count(*) filter (where as_text) as as_text,
           count(*) filter (where error) as errors,
           count(*) filter (where is_retry) as retries,
           count(distinct name) as tools_called,
           count(distinct (seed, taskset_version, task_id)) as runs_with_call
    from calls
    group by run_id, arm
),
runs as (
    select run_id, arm, min(rung) as rung, count(*) as runs from task_runs group by run_id, arm
),
skipped as (
    select run_id, arm, count(*) as skipped_budget from task_calls where skipped_budget group by run_id, arm
),
per_tool as (
    select run_id, arm, min(invalid_rate) as tool_invalid_min, max(invalid_rate) as tool_invalid_max
    from task_tool_counters
    group by run_id, arm
)
select r.run_id, r.arm, r.rung, r.runs,
       coalesce(t.calls, 0) as calls,
       coalesce(t.invalid, 0) as invalid,
       t.invalid / t.calls as invalid_rate,
       p.tool_invalid_min, p.tool_invalid_max,
       coalesce(t.as_text, 0) as as_text,
       t.as_text / t.calls as as_text_rate,
       coalesce(t.errors, 0) as errors,
       t.errors / t.calls as error_rate,
       coalesce(t.retries, 0) as retries,
       coalesce(t.tools_called, 0) as tools_called,
       coalesce(t.calls, 0) / r.runs as calls_per_run,
       coalesce(t.runs_with_call, 0) as runs_with_call,
       t.calls / t.runs_with_call as calls_per_run_with_call,
       coalesce(s.skipped_budget, 0) as skipped_budget
from runs r
left join totals t using (run_id, arm)
left join skipped s using (run_id, arm)
left join per_tool p using (run_id, arm)
order by r.run_id, r.rung
