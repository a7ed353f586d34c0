-- hallucinated_parameter_share: one row per (run, arm, slice, tool, parameter) for each parameter sent in a
-- scored call of the tool that its schema does not have (outcome 'hallucinated'; scored rows: see
-- argument_accuracy). tool is the label as the arm offers it (expected). hallucinated = scored rows of the tool
-- that sent the parameter; scored = every scored row of the tool (the same run, arm and slice); share =
-- hallucinated / scored; n_requests = the tool's scored requests. ci_low / ci_high: 95% interval with the request
-- as the unit (Wilson on n_effective, as per_tool_accuracy). A tool with scored rows and no hallucinated
-- parameter has no row here (per_tool_argument_accuracy holds its scored rows).
with scored as (
    select run_id, arm, slice, expected as tool, request_id, argument_outcomes
    from selection_rows
    where arguments_correct is not null
),
per_request as (
    select run_id, arm, slice, tool, request_id, count(*) as scored
    from scored
    group by run_id, arm, slice, tool, request_id
),
hits as (
    select run_id, arm, slice, tool, request_id, o.parameter as parameter, count(*) as hallucinated
    from (select run_id, arm, slice, tool, request_id, unnest(argument_outcomes) as o from scored)
    where o.outcome = 'hallucinated'
    group by run_id, arm, slice, tool, request_id, o.parameter
),
parameters as (
    select distinct run_id, arm, slice, tool, parameter from hits
),
totals as (
    select p.run_id, p.arm, p.slice, p.tool, p.parameter,
           sum(coalesce(h.hallucinated, 0))::bigint as hallucinated,
           sum(r.scored)::bigint as scored,
           count(*) as n_requests,
           clustered_sums(coalesce(h.hallucinated, 0), r.scored) as sums
    from parameters p
    join per_request r using (run_id, arm, slice, tool)
    left join hits h on h.run_id = r.run_id and h.arm = r.arm and h.slice = r.slice and h.tool = r.tool
                    and h.request_id = r.request_id and h.parameter = p.parameter
    group by p.run_id, p.arm, p.slice, p.tool, p.parameter
),
effective as (
    select *, clustered_n_star_from(sums, moments) as n_effective
    from (select *, clustered_moments(sums) as moments from totals)
)
select run_id, arm, slice, tool, parameter, hallucinated, scored, n_requests,
       hallucinated / scored as share,
       wilson_low(hallucinated / scored, n_effective) as ci_low,
       wilson_high(hallucinated / scored, n_effective) as ci_high,
       n_effective
from effective
order by run_id, arm, slice, tool, parameter
