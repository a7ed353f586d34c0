-- argument_outcome_counts: one row per (run, arm, slice, tool, parameter, outcome).
-- How each parameter of each expected tool fared in the rows whose arguments were scored (argument_outcomes,
-- see argument_accuracy): rows = scored rows with that outcome for the parameter, n_requests = requests among
-- them; share = rows / the scored rows of the tool (the same run, arm and slice), so a parameter's
-- hallucination or wrong-value share reads directly. tool is the label as the arm offers it (expected).
with scored as (
    select run_id, arm, slice, expected as tool, request_id, argument_outcomes
    from selection_rows
    where arguments_correct is not null
),
tool_rows as (
    select run_id, arm, slice, tool, count(*) as scored_rows
    from scored
    group by run_id, arm, slice, tool
),
outcomes as (
    select run_id, arm, slice, tool, request_id, unnest(argument_outcomes) as o
    from scored
)
select o.run_id, o.arm, o.slice, o.tool, o.o.parameter as parameter, o.o.outcome as outcome,
       count(*) as rows, count(distinct o.request_id) as n_requests,
       count(*) / any_value(t.scored_rows) as share
from outcomes o
join tool_rows t using (run_id, arm, slice, tool)
group by o.run_id, o.arm, o.slice, o.tool, o.o.parameter, o.o.outcome
order by o.run_id, o.arm, o.slice, o.tool, parameter, outcome
