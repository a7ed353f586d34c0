-- macros: the SQL expressions the views share, one definition each (DuckDB macros, created before the views
-- by warehouse/views.py and stored in the DuckDB file beside them, so an analyst's connection has them too).
-- Macros expand where they are called (at bind time): they cost nothing at run time and group nothing.

-- wilson_centre / wilson_half / wilson_low / wilson_high: Wilson's score interval for a proportion p on n
-- trials (n may be an effective, non-integer n). z is the two-sided quantile: the default is the normal
-- quantile of a 95% interval (1.959963984540054 = scipy.stats.norm.ppf(0.975), as tasks/stats/wilson.py
-- uses); pass another (`z := ...`, e.g. a t quantile on n - 1) for another interval. Bounds are clipped to
-- [0, 1].
CREATE OR REPLACE MACRO wilson_centre(p, n, z := 1.959963984540054) AS
    (p + z * z / (2 * n)) / (1 + z * z / n);

CREATE OR REPLACE MACRO wilson_half(p, n, z := 1.959963984540054) AS
    z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n);

CREATE OR REPLACE MACRO wilson_low(p, n, z := 1.959963984540054) AS
    greatest(0.0, wilson_centre(p, n, z := z) - wilson_half(p, n, z := z));

CREATE OR REPLACE MACRO wilson_high(p, n, z := 1.959963984540054) AS
    least(1.0, wilson_centre(p, n, z := z) + wilson_half(p, n, z := z));

-- clustered_variance: the variance of a pooled accuracy whose rows cluster in requests (the ratio
-- estimator's sandwich variance sum_i (c_i - p t_i)^2 / n^2, p = correct / n), from the sums one GROUP BY
-- over per-request rows gives: correct = sum c_i, n = sum t_i, sum_cc = sum c_i^2, sum_ct = sum c_i t_i,
-- sum_tt = sum t_i^2 (c_i: correct rows of request i, t_i: its rows). Expanded,
-- sum_i (c_i - p t_i)^2 = sum_cc - 2 p sum_ct + p^2 sum_tt; times n^2 it is an integer, computed exactly
-- (HUGEINT), so a group whose requests all sit at p has variance 0, not a rounding residue.
-- Arguments are counts (integers).
CREATE OR REPLACE MACRO clustered_variance(correct, n, sum_cc, sum_ct, sum_tt) AS
    (sum_cc::hugeint * n * n - 2 * correct::hugeint * n * sum_ct + correct::hugeint * correct * sum_tt)::double
        / power(n::double, 4);

-- clustered_n_effective: Kish's effective number of trials, p(1 - p) / clustered_variance, capped at the
-- rows n (never more informative than independent rows); at p = 0 or 1 it is the number of requests, and a
-- variance of 0 gives n (tasks/stats/wilson.py: clustered_effective_trials, clustered_wilson_from_sums).
CREATE OR REPLACE MACRO clustered_n_effective(correct, n, n_requests, sum_cc, sum_ct, sum_tt) AS
    case when correct = 0 or correct = n then n_requests
         when clustered_variance(correct, n, sum_cc, sum_ct, sum_tt) <= 0 then n
         else least(n, (correct / n) * (1 - correct / n) / clustered_variance(correct, n, sum_cc, sum_ct, sum_tt))
    end;

-- position_third: which third of the offered tools a 1-based position falls in (1 = first third,
-- 2 = middle, 3 = last third) when n_tools were offered; NULL without a position or with no tools (the
-- explicit test matters: least() ignores a NULL argument).
CREATE OR REPLACE MACRO position_third(expected_position, n_tools) AS
    case when expected_position is not null and n_tools > 0
         then least(3, 1 + floor(3 * (expected_position - 1) / n_tools))::integer end;

-- majority_right: a request is right by majority when more than half of its trials (seeds) were correct.
CREATE OR REPLACE MACRO majority_right(correct, trials) AS
    correct * 2 > trials;

-- share_fell: a request (or task) is right on a smaller share of its seeds in the second arm than in the first
-- (the 'worse' of a paired comparison; 'better' is share_fell with the arms swapped). Cross-multiplied, exact.
CREATE OR REPLACE MACRO share_fell(correct_from, trials_from, correct_to, trials_to) AS
    correct_to * trials_from < correct_from * trials_to;

-- confidence_bin: which of ten equal-width confidence bins a confidence falls in (1 = [0, 0.1), ...,
-- 10 = [0.9, 1.0]).
CREATE OR REPLACE MACRO confidence_bin(confidence) AS
    least(10, 1 + floor(confidence * 10))::integer;

-- t_quantile_975: the two-sided 95% Student t quantile on df degrees of freedom (Cornish-Fisher series in
-- 1/df: within 1e-4 of the exact quantile from df = 3 up; tasks/stats/distributions.py has the same).
CREATE OR REPLACE MACRO t_quantile_975(df) AS
    1.959963984540054 + 2.372271230298562 / df + 2.8224986157396112 / (df * df)
        + 2.555849679507722 / (df * df * df) + 1.5895340533938225 / (df * df * df * df);

-- clustered_fourth_moment: sum_i (c_i - p t_i)^4 from the group's sums of c^4, c^3 t, c^2 t^2, c t^3, t^4
-- (exact in HUGEINT, divided by n^4), for the Welch-Satterthwaite degrees of freedom of the clustered
-- variance.
CREATE OR REPLACE MACRO clustered_fourth_moment(correct, n, sum_c4, sum_c3t, sum_c2t2, sum_ct3, sum_t4) AS
    (sum_c4::hugeint * n * n * n * n - 4 * correct::hugeint * n * n * n * sum_c3t
     + 6 * correct::hugeint * correct * n * n * sum_c2t2 - 4 * correct::hugeint * correct * correct * n * sum_ct3
     + correct::hugeint * correct * correct * correct * sum_t4)::double / power(n::double, 4);

-- clustered_sums: an aggregate over per-unit rows (a request, a task) that each give their correct count and
-- their trials (seeds): the group's sums the clustered interval needs, as one struct (correct, n, n_requests,
-- sum_cc, sum_ct, sum_tt, sum_c4, sum_c3t, sum_c2t2, sum_ct3, sum_t4), written once for every view that
-- reports an accuracy or a success rate with its interval (aggregate_accuracy, per_tool_accuracy,
-- position_band_accuracy, task_success, task_arm_success). Use it in a GROUP BY over those rows, then
-- clustered_moments and clustered_n_star_from in two selects over the groups (see clustered_n_star_from).
CREATE OR REPLACE MACRO clustered_sums(correct, trials) AS
    struct_pack(correct := sum(correct)::bigint, n := sum(trials)::bigint, n_requests := count(*),
                sum_cc := sum(correct * correct), sum_ct := sum(correct * trials), sum_tt := sum(trials * trials),
                sum_c4 := sum(correct * correct * correct * correct),
                sum_c3t := sum(correct * correct * correct * trials),
                sum_c2t2 := sum(correct * correct * trials * trials),
                sum_ct3 := sum(correct * trials * trials * trials),
                sum_t4 := sum(trials * trials * trials * trials));

-- clustered_df: the Welch-Satterthwaite degrees of freedom of the clustered variance from its own spread
-- (3 (variance n^2)^2 / fourth_moment - 1), kept between (n_r - 1) / 2 and n_r - 1 (n_r: requests).
CREATE OR REPLACE MACRO clustered_df(n, n_requests, variance, fourth_moment) AS
    least(n_requests - 1.0, greatest((n_requests - 1.0) / 2,
          case when fourth_moment > 0 then 3 * power(variance * n * n, 2) / fourth_moment - 1
               else n_requests - 1.0 end));

-- clustered_moments: from a clustered_sums struct, the struct (variance, df): clustered_variance and
-- clustered_df, each computed once for the group.
CREATE OR REPLACE MACRO clustered_moments(s) AS
    struct_pack(variance := clustered_variance(s.correct, s.n, s.sum_cc, s.sum_ct, s.sum_tt),
                df := clustered_df(s.n, s.n_requests,
                                   clustered_variance(s.correct, s.n, s.sum_cc, s.sum_ct, s.sum_tt),
                                   clustered_fourth_moment(s.correct, s.n, s.sum_c4, s.sum_c3t, s.sum_c2t2,
                                                           s.sum_ct3, s.sum_t4)));

-- clustered_n_star_from: the effective n the views' clustered Wilson interval uses (tasks/stats/wilson.py:
-- clustered_effective_trials), from a clustered_sums struct s and its clustered_moments struct m: Kish's n
-- from the small-sample corrected clustered variance (x n_r/(n_r-1)), shrunk by (z / t_df)^2, and kept
-- between the requests and the rows; the requests at p = 0 or 1 or with fewer than 10 requests.
-- Staged so that each quantity is bound once: a macro expands its arguments at every reference (at bind
-- time), so n* written over the sums' aggregates directly expands to hundreds of sum() calls and costs
-- ~80 ms to bind. In a view:
--     totals as (select keys, ..., clustered_sums(correct, trials) as sums from per_unit group by keys),
--     effective as (select *, clustered_n_star_from(sums, moments) as n_effective
--                   from (select *, clustered_moments(sums) as moments from totals))
CREATE OR REPLACE MACRO clustered_n_star_from(s, m) AS
    case when s.correct = 0 or s.correct = s.n or s.n_requests < 10 then s.n_requests::double
    else least(s.n::double, greatest(s.n_requests::double,
        (case when m.variance * s.n_requests / (s.n_requests - 1) <= 1e-15
              then s.n::double
              else least(s.n::double, (s.correct / s.n) * (1 - s.correct / s.n)
                   / (m.variance * s.n_requests / (s.n_requests - 1))) end)
        * power(1.959963984540054 / t_quantile_975(m.df), 2)))
    end;

-- clustered_n_star: clustered_n_star_from on the group's sums given one by one (a check or an analyst's
-- one-off query; the views stage it as above, this form is slow to bind).
CREATE OR REPLACE MACRO clustered_n_star(correct, n, n_requests, sum_cc, sum_ct, sum_tt,
                                         sum_c4, sum_c3t, sum_c2t2, sum_ct3, sum_t4) AS
    clustered_n_star_from(
        struct_pack(correct := correct, n := n, n_requests := n_requests, sum_cc := sum_cc, sum_ct := sum_ct,
                    sum_tt := sum_tt, sum_c4 := sum_c4, sum_c3t := sum_c3t, sum_c2t2 := sum_c2t2,
                    sum_ct3 := sum_ct3, sum_t4 := sum_t4),
        clustered_moments(struct_pack(correct := correct, n := n, n_requests := n_requests, sum_cc := sum_cc,
                                      sum_ct := sum_ct, sum_tt := sum_tt, sum_c4 := sum_c4, sum_c3t := sum_c3t,
                                      sum_c2t2 := sum_c2t2, sum_ct3 := sum_ct3, sum_t4 := sum_t4)));

-- text_tool_call: an invalid row whose reply held tool-call markup as text (``functions.NAME:``,
-- ``<tool_call>{...}</tool_call>``, ...) instead of a structured call: its detail starts with the words
-- tasks/selectors/providers/text_tool_calls.py writes (TEXT_CALL_DETAIL). Counted apart in the report's failure table.
CREATE OR REPLACE MACRO text_tool_call(outcome, detail) AS
    coalesce(outcome = 'invalid' and starts_with(detail, 'tool call written as text'), false);

-- clustered_accuracy_per_tool: a table macro, one row per (run_id, arm, slice, tool) of the relation
-- ``trials`` (a view's CTE or a table: one row per trial with run_id, arm, rung, slice, tool, request_id,
-- seed, scored (the trial counts toward the accuracy) and right (it was right)). Gives rung, n (every
-- trial), scored, right and n_requests (requests with a scored trial), the clustered interval's n_effective
-- and seed_min / seed_max (the accuracy of each seed's scored trials; seeds with none left out); the figures
-- of scored trials are null for a group with none. Written once for per_tool_accuracy (every trial scored:
-- is the tool chosen right) and per_tool_argument_accuracy (the trials whose arguments were scored).
CREATE OR REPLACE MACRO clustered_accuracy_per_tool(trials) AS TABLE
with all_trials as (
    select run_id, arm, slice, tool, min(rung) as rung, count(*) as n
    from query_table(trials)
    group by run_id, arm, slice, tool
),
per_request as (
    select run_id, arm, slice, tool, request_id,
           count(*) as scored,
           count(*) filter (where "right") as "right"
    from query_table(trials)
    where scored
    group by run_id, arm, slice, tool, request_id
),
totals as (
    select run_id, arm, slice, tool,
           sum(scored)::bigint as scored,
           count(*) as n_requests,
           sum("right")::bigint as "right",
           clustered_sums("right", scored) as sums
    from per_request
    group by run_id, arm, slice, tool
),
effective as (
    select *, clustered_n_star_from(sums, moments) as n_effective
    from (select *, clustered_moments(sums) as moments from totals)
),
per_seed as (
    select run_id, arm, slice, tool, seed,
           count(*) filter (where "right") / count(*) as seed_accuracy
    from query_table(trials)
    where scored
    group by run_id, arm, slice, tool, seed
),
seed_spread as (
    select run_id, arm, slice, tool, min(seed_accuracy) as seed_min, max(seed_accuracy) as seed_max
    from per_seed
    group by run_id, arm, slice, tool
)
select a.run_id, a.arm, a.rung, a.slice, a.tool, a.n, e.scored, e.n_requests, e."right", e.n_effective,
       s.seed_min, s.seed_max
from all_trials a
left join effective e using (run_id, arm, slice, tool)
left join seed_spread s using (run_id, arm, slice, tool);
