-- argument_accuracy: one row per (run, arm, slice).
-- Argument accuracy over the rows whose arguments were scored (arguments_correct not null: the expected tool
-- was called, also by a call breaking its schema (outcome invalid), with arguments, and the request has
-- expected arguments); rows not scored are counted apart (not_scored), never as right. scored,
-- arguments_right and accuracy = arguments_right / scored over every seed of the arm;
-- tool_right_arguments_wrong: calls of the expected tool with wrong arguments; n_requests:
-- requests with a scored row. ci_low / ci_high: 95% interval with the request as the unit, as
-- aggregate_accuracy computes it (Wilson's interval on n_effective from the macros clustered_sums,
-- clustered_moments, clustered_n_star_from). Accuracy and its interval are null where nothing was scored.
-- Slices are never averaged together.
with all_rows as (
    select run_id, arm, slice, min(rung) as rung, count(*) as n
    from selection_rows
    group by run_id, arm, slice
),
per_request as (
    select run_id, arm, slice, request_id,
           count(*) as scored,
           count(*) filter (where arguments_correct) as arguments_right
    from selection_rows
    where arguments_correct is not null
    group by run_id, arm, slice, request_id
),
totals as (
    select run_id, arm, slice,
           sum(scored)::bigint as scored,
           count(*) as n_requests,
           sum(arguments_right)::bigint as arguments_right,
           clustered_sums(arguments_right, scored) as sums
    from per_request
    group by run_id, arm, slice
),
effective as (
    select *, clustered_n_star_from(sums, moments) as n_effective
    from (select *, clustered_moments(sums) as moments from totals)
)
select a.run_id, a.arm, a.rung, a.slice, a.n,
       coalesce(e.scored, 0) as scored, a.n - coalesce(e.scored, 0) as not_scored,
       coalesce(e.n_requests, 0) as n_requests, coalesce(e.arguments_right, 0) as arguments_right,
       coalesce(e.scored - e.arguments_right, 0) as tool_right_arguments_wrong,
       e.arguments_right / e.scored as accuracy,
       case when e.scored > 0 then wilson_low(e.arguments_right / e.scored, e.n_effective) end as ci_low,
       case when e.scored > 0 then wilson_high(e.arguments_right / e.scored, e.n_effective) end as ci_high,
       e.n_effective
from all_rows a
left join effective e using (run_id, arm, slice)
order by a.run_id, a.rung, a.slice
