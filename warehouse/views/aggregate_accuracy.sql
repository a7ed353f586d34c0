-- aggregate_accuracy: one row per (run, arm, slice).
-- Rows, requests, correct and accuracy over every seed of the arm; per-seed accuracy min / max and the
-- spread between them (the noise floor); failure flags counted apart, never folded into wrong answers.
-- Slices are never averaged together: there is no all-slices row.
-- ci_low / ci_high: 95% interval with the request as the unit (Wilson's interval on n_effective, the
-- Kish effective number of trials from the between-request variance; one seed = plain Wilson; see
-- tasks/stats/intervals.py). invalid_rate and failure_rate (invalid + error + empty) are shares of rows.
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
           max(seed_accuracy) as seed_max,
           list(seed_accuracy order by seed) as seed_accuracies
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
),
clustered as (
    select t.run_id, t.arm, t.slice,
           sum(power(r.correct - t.correct / t.n * r.trials, 2)) / (t.n * t.n) as variance
    from totals t
    join request_outcomes r on r.run_id = t.run_id and r.arm = t.arm and r.slice = t.slice
    group by t.run_id, t.arm, t.slice, t.correct, t.n
),
effective as (
    select t.*, t.correct / t.n as p,
           case when t.correct = 0 or t.correct = t.n then t.n_requests
                when c.variance <= 0 then t.n
                else least(t.n, (t.correct / t.n) * (1 - t.correct / t.n) / c.variance) end as n_effective
    from totals t
    join clustered c using (run_id, arm, slice)
),
wilson as (
    select *,
           (p + 3.841458820694124 / (2 * n_effective)) / (1 + 3.841458820694124 / n_effective) as centre,
           1.959963984540054 * sqrt(p * (1 - p) / n_effective + 3.841458820694124 / (4 * n_effective * n_effective))
               / (1 + 3.841458820694124 / n_effective) as half
    from effective
)
select t.run_id, t.arm, t.rung, t.slice, t.n, t.n_requests, t.correct,
       t.correct / t.n as accuracy,
       s.n_seeds, s.seed_min, s.seed_max, s.seed_max - s.seed_min as seed_spread,
       t.wrong_tool, t.no_tool, t.invalid, t.error, t.empty,
       greatest(0.0, t.centre - t.half) as ci_low,
       least(1.0, t.centre + t.half) as ci_high,
       t.n_effective,
       s.seed_accuracies,
       t.invalid / t.n as invalid_rate,
       (t.invalid + t.error + t.empty) / t.n as failure_rate
from wilson t
join seed_spread s using (run_id, arm, slice)
order by t.run_id, t.rung, t.slice
