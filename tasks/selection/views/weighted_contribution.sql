-- weighted_contribution: one row per (run, arm, baseline, tool) for runs with a weights window: each tool's
-- part in the arm's volume-weighted accuracy and in its change from the arm it is compared with (the
-- comparisons table; baseline is NULL for an arm compared with none). traffic_share = the tool's production
-- weight over the weights of the tools the arm has rows for; contribution = traffic_share x accuracy (rows
-- expecting the tool, all seeds and slices), so an arm's contributions sum to its weighted_accuracy.
-- contribution_change = contribution - baseline_contribution (a tool one side has no rows for counts 0 there)
-- and sums to the change of weighted_accuracy between the two arms; it splits into change_from_accuracy
-- (traffic_share x the tool's accuracy change, when both sides have it) and change_from_share (the rest: the
-- tool's share moved because the arms cover different tools). The report's contribution table pairs
-- label-stable requests instead (tooleval compare too); this view is the arithmetic of weighted_accuracy.
with per_tool as (
    select run_id, arm, coalesce(label, expected) as tool, min(rung) as rung,
           count(*) as n,
           count(*) filter (where correct) as correct
    from selection_rows
    group by run_id, arm, coalesce(label, expected)
),
weights as (
    select r.run_id, w.tool, w.weight
    from runs r
    join production_weights w on w.taskset = r.taskset and w.window_id = r.weights_window
    where w.tool <> 'none'
),
levels as (
    select t.run_id, t.arm, t.tool, t.rung, w.weight, t.n, t.correct, t.correct / t.n as accuracy,
           w.weight / sum(w.weight) over (partition by t.run_id, t.arm) as traffic_share
    from per_tool t
    join weights w using (run_id, tool)
),
sides as (
    select run_id, arm, baseline from comparisons
    union all
    select distinct l.run_id, l.arm, cast(null as varchar) as baseline
    from levels l
    where not exists (select 1 from comparisons c where c.run_id = l.run_id and c.arm = l.arm)
),
pair_tools as (
    select s.run_id, s.arm, s.baseline, l.tool
    from sides s join levels l on l.run_id = s.run_id and l.arm = s.arm
    union
    select s.run_id, s.arm, s.baseline, l.tool
    from sides s join levels l on l.run_id = s.run_id and l.arm = s.baseline
),
arm_rungs as (
    select run_id, arm, min(rung) as rung from levels group by run_id, arm
)
select p.run_id, p.arm, m.rung, p.baseline, p.tool,
       coalesce(a.weight, b.weight) as weight,
       a.traffic_share, a.n, a.correct, a.accuracy,
       a.traffic_share * a.accuracy as contribution,
       b.traffic_share as baseline_traffic_share, b.accuracy as baseline_accuracy,
       b.traffic_share * b.accuracy as baseline_contribution,
       case when p.baseline is not null
            then coalesce(a.traffic_share * a.accuracy, 0) - coalesce(b.traffic_share * b.accuracy, 0) end
           as contribution_change,
       case when p.baseline is not null and a.tool is not null and b.tool is not null
            then a.traffic_share * (a.accuracy - b.accuracy) end as change_from_accuracy,
       case when p.baseline is not null
            then coalesce(a.traffic_share * a.accuracy, 0) - coalesce(b.traffic_share * b.accuracy, 0)
                 - coalesce(a.traffic_share * (a.accuracy - b.accuracy), 0) end as change_from_share
from pair_tools p
join arm_rungs m on m.run_id = p.run_id and m.arm = p.arm
left join levels a on a.run_id = p.run_id and a.arm = p.arm and a.tool = p.tool
left join levels b on b.run_id = p.run_id and b.arm = p.baseline and b.tool = p.tool
order by p.run_id, m.rung, p.baseline, weight desc, p.tool
