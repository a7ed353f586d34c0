-- paired_argument_requests: one row per (run, comparison, request) for requests both arms of a declared
-- comparison answered, labelled with the same tool in both (label-stable, as paired_tool_changes pairs them),
-- whose arguments were scored in at least one arm (arguments_correct not null: see argument_accuracy).
-- Each side's scored rows and rows with right arguments; paired = scored in both arms (only those carry a
-- paired argument change: a request scored on one side only has no argument accuracy on the other). worse =
-- right arguments on a smaller share of its scored rows in the arm than in the baseline; better = the reverse.
-- tool is the label as the version names it.
with outcomes as (
    select run_id, arm, request_id,
           min(slice) as slice,
           min(coalesce(label, expected)) as label,
           count(*) filter (where arguments_correct is not null) as scored,
           count(*) filter (where arguments_correct) as arguments_right
    from selection_rows
    group by run_id, arm, request_id
)
select c.run_id, c.baseline, c.arm, b.request_id, b.slice, b.label as tool,
       b.scored as scored_baseline, b.arguments_right as right_baseline,
       a.scored as scored_arm, a.arguments_right as right_arm,
       b.scored > 0 and a.scored > 0 as paired,
       b.scored > 0 and a.scored > 0
           and share_fell(b.arguments_right, b.scored, a.arguments_right, a.scored) as worse,
       b.scored > 0 and a.scored > 0
           and share_fell(a.arguments_right, a.scored, b.arguments_right, b.scored) as better
from comparisons c
join outcomes b on b.run_id = c.run_id and b.arm = c.baseline
join outcomes a on a.run_id = c.run_id and a.arm = c.arm and a.request_id = b.request_id
where b.label = a.label and (b.scored > 0 or a.scored > 0)
order by c.run_id, c.baseline, c.arm, b.request_id
