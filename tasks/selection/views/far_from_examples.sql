-- far_from_examples: one row per (run, arm) whose rows record a nearest-example cosine (arms whose
-- selector or router is a trained decision model).
-- How far the arm's requests are from the labelled examples its model learned from: a request is far when
-- the cosine of its nearest example (any label) is below the model file's far cut-off (arms.far_cutoff, a
-- low quantile of the training requests' own held-out nearest-example cosines). Counted per request (a
-- request's nearest example is the same under every seed): n_requests measured, n_far of them far, and
-- their share; the quartiles of the nearest-example cosine beside them. A high far_share says the model is
-- out of its domain: its kNN features are near zero there, and it decides on cosine and BM25 alone.
-- far_cutoff is null for a model file that records none (written before it was): n_far is then null.
with per_request as (
    select run_id, arm, request_id, max(nearest_example_cos) as nearest
    from selection_rows
    where nearest_example_cos is not null
    group by run_id, arm, request_id
),
counted as (
    select p.run_id, p.arm,
           any_value(a.far_cutoff) as far_cutoff,
           count(*) as n_requests,
           count(*) filter (where p.nearest < a.far_cutoff) as below,
           quantile_cont(p.nearest, 0.25) as nearest_q25,
           median(p.nearest) as nearest_median,
           quantile_cont(p.nearest, 0.75) as nearest_q75
    from per_request p
    left join arms a using (run_id, arm)
    group by p.run_id, p.arm
)
select run_id, arm, far_cutoff, n_requests,
       case when far_cutoff is null then null else below end as n_far,
       case when far_cutoff is null then null else below / n_requests end as far_share,
       nearest_q25, nearest_median, nearest_q75
from counted
