-- arm_operations: one row per (run, arm).
-- How each arm's turns went and what they cost: first-match accuracy (the first tool call, or no call,
-- equals the label); empty / unfinished, invalid and error rows (budget stops counted apart); mean latency,
-- tokens and cost per turn over the turns that were sent (a routed turn's cost includes its decision model);
-- the run's own spend (cache hits cost nothing again); retries and HTTP requests (this run's: first requests
-- plus retries); the share of prompt tokens the provider served from its prompt cache (this run's calls);
-- for routed arms the share the decision model decided and the fallback rate; for judged arms how often the
-- judge agreed with the label check; the served-model evidence of the replies (reported / not reported /
-- a self-hosted server echoing the requested id) and the ids reported.
with turns as (
    select *,
           coalesce(outcome = 'error' and detail = 'budget reached', false) as budget_stopped
    from selection_rows
)
select run_id, arm,
       min(rung) as rung,
       any_value(selector) as selector,
       any_value(model_id) as model_id,
       any_value(route) as route,
       any_value(router) as router,
       count(*) as n,
       count(*) filter (where correct) as correct,
       count(*) filter (where correct) / count(*) as first_match_accuracy,
       count(*) filter (where outcome = 'empty') as empty,
       count(*) filter (where outcome = 'invalid') as invalid,
       count(*) filter (where outcome = 'error' and not budget_stopped) as error,
       count(*) filter (where budget_stopped) as budget_stopped,
       count(*) filter (where cache_hit) as cache_hits,
       avg(latency_ms) filter (where not budget_stopped) as mean_latency_ms,
       avg(input_tokens) filter (where not budget_stopped) as mean_input_tokens,
       avg(output_tokens) filter (where not budget_stopped) as mean_output_tokens,
       avg(cost_usd) filter (where not budget_stopped) as mean_cost_usd,
       sum(cost_usd) filter (where not cache_hit) as run_cost_usd,
       sum(retries) as retries,
       sum(http_attempts) as http_requests,
       sum(cached_input_tokens) filter (where not cache_hit)
           / nullif(sum(input_tokens) filter (where not cache_hit and cached_input_tokens is not null), 0)
           as cached_input_share,
       count(*) filter (where decided_by = 'router') as decided_by_router,
       count(*) filter (where fallback) as fallbacks,
       count(*) filter (where fallback) / nullif(count(*) filter (where fallback is not null), 0) as fallback_rate,
       count(*) filter (where judge_verdict is not null) as judged,
       count(*) filter (where (judge_verdict = 'right') = correct and judge_verdict != 'unsure') as judge_agrees,
       count(*) filter (where judge_verdict = 'right' and not correct) as judge_right_label_wrong,
       count(*) filter (where judge_verdict = 'wrong' and correct) as judge_wrong_label_right,
       count(*) filter (where served_model_evidence = 'reported') as served_reported,
       count(*) filter (where served_model_evidence = 'not_reported') as served_not_reported,
       count(*) filter (where served_model_evidence = 'echoes_request') as served_echoed,
       list(distinct served_model_id order by served_model_id)
           filter (where served_model_evidence = 'reported') as served_models
from turns
group by run_id, arm
order by run_id, rung
