-- per_tool_argument_accuracy: one row per (run, arm, slice, tool), tool = the expected label ('none' included).
-- Argument accuracy of each tool over the rows whose arguments were scored (arguments_correct not null, as
-- argument_accuracy counts them: the expected tool was called and the request has expected arguments); n = rows
-- expecting the tool, not_scored = those not scored (another tool chosen, no arguments given, or no expected
-- arguments), never counted right. scored, arguments_right, accuracy = arguments_right / scored over every seed;
-- tool_right_arguments_wrong = scored - arguments_right; n_requests = requests with a scored row.
-- seed_min / seed_max: argument accuracy of each seed's scored rows (seeds with none left out).
-- ci_low / ci_high: 95% interval with the request as the unit (Wilson on n_effective, as per_tool_accuracy).
-- accuracy, its interval and the seed figures are null where nothing was scored: NOT JUDGED, never 0%.
with all_rows as (
    select run_id, arm, slice, expected as tool, min(rung) as rung, count(*) as n
    from selection_rows
    group by run_id, arm, slice, expected
),
per_request as (
    select run_id, arm, slice, expected as tool, request_id,
           count(*) as scored,
           count(*) filter (where arguments_correct) as arguments_right
    from selection_rows
    where arguments_correct is not null
    group by run_id, arm, slice, expected, request_id
),
totals as (
    select run_id, arm, slice, tool,
           sum(scored)::bigint as scored,
           count(*) as n_requests,
           sum(arguments_right)::bigint as arguments_right,
           clustered_sums(arguments_right, scored) as sums
    from per_request
    group by run_id, arm, slice, tool
),
effective as (
    select *, clustered_n_star_from(sums, moments) as n_effective
    from (select *, clustered_moments(sums) as moments from totals)
),
per_seed as (
    select run_id, arm, slice, expected as tool, seed,
           count(*) filter (where arguments_correct) / count(*) as seed_accuracy
    from selection_rows
    where arguments_correct is not null
    group by run_id, arm, slice, expected, seed
),
seed_spread as (
    select run_id, arm, slice, tool, min(seed_accuracy) as seed_min, max(seed_accuracy) as seed_max
    from per_seed
    group by run_id, arm, slice, tool
)
select a.run_id, a.arm, a.rung, a.slice, a.tool, a.n,
       coalesce(e.scored, 0) as scored, a.n - coalesce(e.scored, 0) as not_scored,
       coalesce(e.n_requests, 0) as n_requests, coalesce(e.arguments_right, 0) as arguments_right,
       coalesce(e.scored - e.arguments_right, 0) as tool_right_arguments_wrong,
       e.arguments_right / e.scored as accuracy,
       s.seed_min, s.seed_max,
       case when e.scored > 0 then wilson_low(e.arguments_right / e.scored, e.n_effective) end as ci_low,
       case when e.scored > 0 then wilson_high(e.arguments_right / e.scored, e.n_effective) end as ci_high,
       e.n_effective,
       s.seed_max - s.seed_min as seed_spread
from all_rows a
left join effective e using (run_id, arm, slice, tool)
left join seed_spread s using (run_id, arm, slice, tool)
order by a.run_id, a.rung, a.slice, a.tool
