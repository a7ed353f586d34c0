-- version_calibration: one row per (run, comparison whose only change is the task-set version, tool).
-- The same arm measured on an old and a new version of the task set: per expected tool ('none' included)
-- the requests and accuracy (all seeds) on each version and the difference new - old. A difference here
-- is a change in the instrument, not in the agent. Tools present in one version only have nulls on the
-- other side.

-- per_tool groups only the rows of arms in a version comparison (most arms of most runs are not).
with version_pairs as (
    select run_id, baseline as old_arm, arm as new_arm
    from comparisons
    where changed = ['version']
),
per_tool as (
    select run_id, arm, min(taskset_version) as taskset_version, expected as tool,
           count(distinct request_id) as n_requests,
           count(*) as n,
           count(*) filter (where correct) as correct
    from selection_rows
    where (run_id, arm) in (select run_id, old_arm from version_pairs union select run_id, new_arm from version_pairs)
    group by run_id, arm, expected
),
tools as (
    select p.run_id, p.old_arm, p.new_arm, t.tool
    from version_pairs p
    join per_tool t on t.run_id = p.run_id and t.arm in (p.old_arm, p.new_arm)
    group by all
)
select t.run_id, t.old_arm, t.new_arm, t.tool,
       o.taskset_version as old_version, o.n_requests as old_requests, o.n as old_rows,
       o.correct / o.n as old_accuracy,
       n.taskset_version as new_version, n.n_requests as new_requests, n.n as new_rows,
       n.correct / n.n as new_accuracy,
       n.correct / n.n - o.correct / o.n as difference
from tools t
left join per_tool o on o.run_id = t.run_id and o.arm = t.old_arm and o.tool = t.tool
left join per_tool n on n.run_id = t.run_id and n.arm = t.new_arm and n.tool = t.tool
order by t.run_id, t.old_arm, t.new_arm, t.tool
