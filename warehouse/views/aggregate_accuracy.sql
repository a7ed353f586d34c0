-- aggregate_accuracy: one row per (run, arm, slice).
-- Rows, requests, correct and accuracy over every seed of the arm; per-seed accuracy min / max and the
-- spread between them (the noise floor); failure flags counted apart, never folded into wrong answers.
-- Slices are never averaged together: there is no all-slices row.
with per_seed as (
    select run_id, arm, slice, seed,
           count(*) filter (where correct) / count(*) as seed_accuracy
    from selection_rows
    group by run_id, arm, slice, seed
),
seed_spread as (
    select run_id, arm, slice,
           count(*) as n_seeds,
           min(seed_accuracy) as seed_min,
           max(seed_accuracy) as seed_max
    from per_seed
    group by run_id, arm, slice
),
totals as (
    select run_id, arm, min(rung) as rung, slice,
           count(*) as n,
           count(distinct request_id) as n_requests,
           count(*) filter (where correct) as correct,
           count(*) filter (where outcome = 'wrong_tool') as wrong_tool,
           count(*) filter (where outcome = 'no_tool') as no_tool,
           count(*) filter (where outcome = 'invalid') as invalid,
           count(*) filter (where outcome = 'error') as error,
           count(*) filter (where outcome = 'empty') as empty
    from selection_rows
    group by run_id, arm, slice
)
select t.run_id, t.arm, t.rung, t.slice, t.n, t.n_requests, t.correct,
       t.correct / t.n as accuracy,
       s.n_seeds, s.seed_min, s.seed_max, s.seed_max - s.seed_min as seed_spread,
       t.wrong_tool, t.no_tool, t.invalid, t.error, t.empty
from totals t
join seed_spread s using (run_id, arm, slice)
order by t.run_id, t.rung, t.slice
