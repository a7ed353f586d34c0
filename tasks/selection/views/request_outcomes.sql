-- request_outcomes: one row per (run, arm, request).
-- The request as the statistical unit: how many of its seeds were run (trials) and right (correct), and
-- whether it is right by majority (right under more than half of its seeds). Intervals cluster on these
-- rows and paired comparisons join them across arms; expected is the arm's own (effective) label, named as
-- the arm offers it, label the same as the version names it (they differ under a catalogue's offered_as).
-- Unordered: a run's hundreds of thousands of requests are read as columns by a query that orders them
-- itself, or joined; sorting them here would cost every reader a sort it does not use.
select run_id, arm, min(rung) as rung, request_id,
       min(slice) as slice,
       min(expected) as expected,
       min(coalesce(label, expected)) as label,
       count(*) as trials,
       count(*) filter (where correct) as correct,
       majority_right(count(*) filter (where correct), count(*)) as majority_right,
       count(*) filter (where outcome in ('invalid', 'error', 'empty')) as failed
from selection_rows
group by run_id, arm, request_id
