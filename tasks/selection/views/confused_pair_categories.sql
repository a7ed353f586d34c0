-- confused_pair_categories: one row per (run, arm, expected, chosen) of confused_pairs, with the namespace
-- (category) of each tool: the part of its name before the first '.', e.g. 'crm' for 'crm.get_customer'
-- (null for a name without one, and for 'none'). crosses_category says the confusion goes from one
-- namespace to another; within_category that both tools share one. With prefixed catalogues (a surface
-- transform, tooleval tasks catalogue) it tells a routing problem between areas from one inside an area.
select p.run_id, p.arm, p.rung, p.expected, p.chosen, p.n, p.share_of_failures,
       case when position('.' in p.expected) > 0 then split_part(p.expected, '.', 1) end as expected_category,
       case when position('.' in p.chosen) > 0 then split_part(p.chosen, '.', 1) end as chosen_category,
       (position('.' in p.expected) > 0 and position('.' in p.chosen) > 0
        and split_part(p.expected, '.', 1) <> split_part(p.chosen, '.', 1)) as crosses_category,
       (position('.' in p.expected) > 0 and position('.' in p.chosen) > 0
        and split_part(p.expected, '.', 1) = split_part(p.chosen, '.', 1)) as within_category
from confused_pairs p
order by p.run_id, p.rung, p.n desc, p.expected, p.chosen
