-- confusion_matrix: one row per (run, arm, expected, answer) with at least one row.
-- answer = the tool chosen ('none' for no tool), or the failure kind in brackets when there was no
-- usable answer ('[invalid]', '[error]', '[empty]'). Diagonal cells (answer = expected) are the correct
-- rows. share_of_expected = n over the rows expecting that tool (the heatmap's colour).
with cells as (
    select run_id, arm, min(rung) as rung, expected,
           case when outcome in ('invalid', 'error', 'empty') then '[' || outcome || ']'
                else coalesce(chosen, '[empty]') end as answer,
           count(*) as n
    from selection_rows
    group by run_id, arm, expected, answer
)
select run_id, arm, rung, expected, answer, n,
       n / sum(n) over (partition by run_id, arm, expected) as share_of_expected
from cells
order by run_id, rung, expected, answer
