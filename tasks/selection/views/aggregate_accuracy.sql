-- aggregate_accuracy: one row per (run, arm, slice).
-- Rows, requests, correct and accuracy over every seed of the arm; per-seed accuracy min / max and the spread
-- between them (the noise floor); failure flags counted apart, never folded into wrong answers. Slices are
-- never averaged together: there is no all-slices row. ci_low / ci_high: 95% interval with the request as the
-- unit (Wilson's interval on n_effective, the small-sample corrected Kish effective number of trials from the
-- between-request variance: the macros clustered_sums, clustered_moments, clustered_n_star_from; one seed =
-- plain Wilson; see tasks/stats/wilson.py and warehouse/macros.sql). invalid_rate and failure_rate
-- (invalid + error + empty) are shares of rows; text_calls: the invalid rows whose reply wrote a tool call as
-- text (macro text_tool_call).
with per_request as (
    select run_id, arm, slice, request_id, min(rung) as rung,
           count(*) as trials,
           count(*) filter (where correct) as correct,
           count(*) filter (where outcome = 'wrong_tool') as wrong_tool,
           count(*) filter (where outcome = 'no_tool') as no_tool,
           count(*) filter (where outcome = 'invalid') as invalid,
           count(*) filter (where outcome = 'error') as error,
           count(*) filter (where outcome = 'empty') as empty,
           count(*) filter (where text_tool_call(outcome, detail)) as text_calls
    from selection_rows
    group by run_id, arm, slice, request_id
),
totals as (
    select run_id, arm, slice, min(rung) as rung,
           sum(trials)::bigint as n,
           count(*) as n_requests,
           sum(correct)::bigint as correct,
           sum(wrong_tool)::bigint as wrong_tool,
           sum(no_tool)::bigint as no_tool,
           sum(invalid)::bigint as invalid,
           sum(error)::bigint as error,
           sum(empty)::bigint as empty,
           sum(text_calls)::bigint as text_calls,
           clustered_sums(correct, trials) as sums
    from per_request
    group by run_id, arm, slice
),
effective as (
    select *, clustered_n_star_from(sums, moments) as n_effective
    from (select *, clustered_moments(sums) as moments from totals)
),
per_seed as (
    select run_id, arm, slice, seed,
           count(*) filter (where correct) / count(*) as seed_accuracy
    from selection_rows
    group by run_id, arm, slice, seed
),
seed_spread as (
    select run_id, arm, slice,
           count(*) as n_seeds,
           min(seed_accuracy) as seed_min,
           max(seed_accuracy) as seed_max,
           list(seed_accuracy order by seed) as seed_accuracies
    from per_seed
    group by run_id, arm, slice
)
select t.run_id, t.arm, t.rung, t.slice, t.n, t.n_requests, t.correct,
       t.correct / t.n as accuracy,
       s.n_seeds, s.seed_min, s.seed_max, s.seed_max - s.seed_min as seed_spread,
       t.wrong_tool, t.no_tool, t.invalid, t.error, t.empty, t.text_calls,
       wilson_low(t.correct / t.n, t.n_effective) as ci_low,
       wilson_high(t.correct / t.n, t.n_effective) as ci_high,
       t.n_effective,
       s.seed_accuracies,
       t.invalid / t.n as invalid_rate,
       (t.invalid + t.error + t.empty) / t.n as failure_rate
from effective t
join seed_spread s using (run_id, arm, slice)
order by t.run_id, t.rung, t.slice
