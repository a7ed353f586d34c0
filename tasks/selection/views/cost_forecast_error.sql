-- cost_forecast_error: one row per (run, arm) that had a cost forecast (an arm with hosted-model calls).
-- The forecast made before the run's first call (table cost_forecasts) against what the arm's rows were
-- billed: the chat call with its decision model (cost_usd) and the judge (judge_cost_usd). The forecast
-- assumed every row is sent; rows answered from the result cache cost nothing again, so it is taken per
-- row, for the rows sent: at its batch price for rows sent in a provider batch (sent_as = 'batch'), at
-- its call price for the others. error is (billed - forecast) / forecast: +0.10 = 10% more than forecast.
with billed as (
    select run_id, arm,
           count(*) filter (where not cache_hit and sent_as = 'batch') as batch_rows,
           count(*) filter (where not cache_hit and sent_as is distinct from 'batch') as call_rows,
           coalesce(sum(coalesce(cost_usd, 0) + coalesce(judge_cost_usd, 0)) filter (where not cache_hit), 0)
               as billed_usd
    from selection_rows
    group by run_id, arm
),
forecast as (
    select f.run_id, f.arm, f.model_id, f.source, f.past_rows, f.rows, f.price_version,
           b.batch_rows + b.call_rows as called_rows, b.billed_usd,
           (f.usd * b.call_rows + coalesce(f.batch_usd, f.usd) * b.batch_rows) / nullif(f.rows, 0)
               as forecast_usd
    from cost_forecasts f
    join billed b on b.run_id = f.run_id and b.arm = f.arm
)
select run_id, arm, model_id, source, past_rows, rows, called_rows, price_version, forecast_usd, billed_usd,
       (billed_usd - forecast_usd) / nullif(forecast_usd, 0) as error
from forecast
