-- label_status_counts: one row per (run, task-set version, label status).
-- Requests of each version a run measured, by whether their labels were decided by a person
-- ('adjudicated') or are production hints not yet decided ('provisional'); a run with provisional rows
-- was explicitly allowed to use them, and its report says so.
select run_id, taskset, taskset_version, label_status,
       count(distinct request_id) as n_requests,
       count(*) as n_rows
from selection_rows
group by run_id, taskset, taskset_version, label_status
order by run_id, taskset_version, label_status
