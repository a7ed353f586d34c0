-- confused_pairs: one row per (run, arm, expected, chosen) where a wrong tool or no tool was chosen.
-- n: rows with that ordered pair (all seeds and slices); share_of_failures: n over the arm's rows that
-- were not correct (invalid, error and empty rows count as failures but form no pair);
-- n_offered_together: rows expecting `expected` in which `chosen` was offered too ('none' always is),
-- so per-request tool lists only count tools that were offered together; pair_rate = n / that.

-- One scan: every CTE below reads `cells`, so a run filter reaches the rows' scan (no WHERE on the scan
-- itself: DuckDB then keeps a pushed-down run filter above the scan instead of skipping row groups).
with cells as (
    select run_id, arm, expected, chosen, tool_set_id, min(rung) as rung, count(*) as n_rows,
           count(*) filter (where outcome in ('wrong_tool', 'no_tool')) as n_pair,
           count(*) filter (where not correct) as n_failed
    from selection_rows
    group by run_id, arm, expected, chosen, tool_set_id
),
failures as (
    select run_id, arm, sum(n_failed) as n_failures
    from cells
    group by run_id, arm
),
pairs as (
    select run_id, arm, min(rung) as rung, expected, chosen, sum(n_pair)::bigint as n
    from cells
    where n_pair > 0
    group by run_id, arm, expected, chosen
),
expected_by_tool_set as (
    select run_id, arm, expected, tool_set_id, sum(n_rows) as n_rows
    from cells
    group by run_id, arm, expected, tool_set_id
),
offered_together as (
    select p.run_id, p.arm, p.expected, p.chosen, sum(e.n_rows) as n_offered_together
    from pairs p
    join expected_by_tool_set e
      on e.run_id = p.run_id and e.arm = p.arm and e.expected = p.expected
    left join offered_tools o
      on o.tool_set_id = e.tool_set_id and o.tool = p.chosen
    where p.chosen = 'none' or o.tool is not null
    group by p.run_id, p.arm, p.expected, p.chosen
)
select p.run_id, p.arm, p.rung, p.expected, p.chosen, p.n,
       p.n / f.n_failures as share_of_failures,
       o.n_offered_together,
       p.n / o.n_offered_together as pair_rate
from pairs p
join failures f using (run_id, arm)
left join offered_together o using (run_id, arm, expected, chosen)
order by p.run_id, p.rung, p.n desc, p.expected, p.chosen
