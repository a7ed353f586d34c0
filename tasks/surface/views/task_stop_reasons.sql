-- task_stop_reasons: one row per (run, arm, stop reason).
-- How runs ended: the agent stopped (model_stop), it wrote a tool call as text instead of making one
-- (text_call: the call is an invalid, as_text row of task_calls), a task budget was spent (max_calls, max_turns,
-- max_tokens, max_wall), or the run could not go on (error: the provider failed after its retries;
-- empty_reply; run_budget: the run's spend or call cap; surface_error: an MCP server could not start,
-- crashed or hung). n and its share of the arm's runs, and how many of those runs still met their
-- assertion. drifted: of those runs, the ones stopped because an MCP server pinned to a catalogue listed other
-- tools when it started (the server changed mid-run: tasks/surface/catalogue_drift.py), with the first such
-- detail (drift_detail; null when none).
select run_id, arm, min(rung) as rung, stop_reason,
       count(*) as n,
       count(*) / sum(count(*)) over (partition by run_id, arm) as share,
       count(*) filter (where success) as successes,
       count(*) filter (where detail like '%lists tools that differ from catalogue%') as drifted,
       min(detail) filter (where detail like '%lists tools that differ from catalogue%') as drift_detail
from task_runs
group by run_id, arm, stop_reason
order by run_id, rung, n desc, stop_reason
