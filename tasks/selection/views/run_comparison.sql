-- run_comparison: one row per (run_a, arm_a, run_b, arm_b, request) for an arm of one run and an arm of
-- another run that both answered the request (the same request id). Always filter on run_a and run_b (and
-- usually arm_a = arm_b): unfiltered it pairs every run with every other.
-- Paired on request ids and seeds where possible: when the two arms ran seeds in common (the same seed =
-- the same recorded tool order for the same tools), each side counts only those seeds (paired_on =
-- 'request and seed'); with no seed in common, every seed of each side (paired_on = 'request').
-- Each side's trials and correct seeds, its majority verdict and its label; label_stable says the request
-- expects the same tool on both sides, as the version names it (label_a, label_b; per-tool changes use
-- only those). worse = right on a smaller share of its seeds in run_b than in run_a; better = the
-- reverse (majority_* = right by majority, descriptive).
-- differs_in: the respects in which the two arms differ ('catalogue', 'prompt', 'model' = the pinned id,
-- 'served_model' = the ids the provider served, 'selector', 'version'), with each side's id beside it;
-- `tooleval compare` refuses a pair that differs in more than the one respect it is told to expect.
-- scored_* / arguments_right_*: each side's rows whose arguments were scored (see argument_accuracy) and those
-- with right arguments, over the same seeds; argument changes pair the label-stable requests scored on both sides.
-- Sum the counts over requests for per-slice and per-tool figures; intervals and tests: tooleval compare.
with arm_sides as (
    select a.run_id, a.arm, a.catalogue, a.catalogue_hash, a.prompt, a.prompt_hash, a.model_id, a.selector,
           a.taskset_version, a.taskset_hash, a.seeds,
           s.served_model_ids
    from arms a
    left join (
        select run_id, arm, list(distinct served_model_id order by served_model_id) as served_model_ids
        from selection_rows
        where served_model_id is not null
        group by run_id, arm
    ) s using (run_id, arm)
),
arm_pairs as (
    select a.run_id as run_a, a.arm as arm_a, b.run_id as run_b, b.arm as arm_b,
           list_sort(list_intersect(a.seeds, b.seeds)) as shared_seeds,
           a.catalogue as catalogue_a, b.catalogue as catalogue_b,
           a.catalogue_hash as catalogue_hash_a, b.catalogue_hash as catalogue_hash_b,
           a.prompt as prompt_a, b.prompt as prompt_b, a.prompt_hash as prompt_hash_a, b.prompt_hash as prompt_hash_b,
           a.model_id as model_a, b.model_id as model_b,
           a.served_model_ids as served_models_a, b.served_model_ids as served_models_b,
           a.selector as selector_a, b.selector as selector_b,
           a.taskset_version as version_a, b.taskset_version as version_b,
           a.taskset_hash as version_hash_a, b.taskset_hash as version_hash_b
    from arm_sides a
    join arm_sides b on a.run_id <> b.run_id
),
side_a as (
    select p.run_a, p.arm_a, p.run_b, p.arm_b, r.request_id,
           min(r.slice) as slice, min(r.expected) as expected, min(coalesce(r.label, r.expected)) as label,
           count(*) as trials, count(*) filter (where r.correct) as correct,
           count(*) filter (where r.arguments_correct is not null) as scored,
           count(*) filter (where r.arguments_correct) as arguments_right
    from arm_pairs p
    join selection_rows r on r.run_id = p.run_a and r.arm = p.arm_a
    where len(p.shared_seeds) = 0 or list_contains(p.shared_seeds, r.seed)
    group by p.run_a, p.arm_a, p.run_b, p.arm_b, r.request_id
),
side_b as (
    select p.run_a, p.arm_a, p.run_b, p.arm_b, r.request_id,
           min(r.expected) as expected, min(coalesce(r.label, r.expected)) as label,
           count(*) as trials, count(*) filter (where r.correct) as correct,
           count(*) filter (where r.arguments_correct is not null) as scored,
           count(*) filter (where r.arguments_correct) as arguments_right
    from arm_pairs p
    join selection_rows r on r.run_id = p.run_b and r.arm = p.arm_b
    where len(p.shared_seeds) = 0 or list_contains(p.shared_seeds, r.seed)
    group by p.run_a, p.arm_a, p.run_b, p.arm_b, r.request_id
)
select p.run_a, p.arm_a, p.run_b, p.arm_b, a.request_id, a.slice,
       a.expected as expected_a, b.expected as expected_b,
       a.label as label_a, b.label as label_b,
       a.label = b.label as label_stable,
       case when len(p.shared_seeds) > 0 then 'request and seed' else 'request' end as paired_on,
       p.shared_seeds,
       a.trials as trials_a, a.correct as correct_a, b.trials as trials_b, b.correct as correct_b,
       a.scored as scored_a, a.arguments_right as arguments_right_a,
       b.scored as scored_b, b.arguments_right as arguments_right_b,
       majority_right(a.correct, a.trials) as majority_a,
       majority_right(b.correct, b.trials) as majority_b,
       share_fell(a.correct, a.trials, b.correct, b.trials) as worse,
       share_fell(b.correct, b.trials, a.correct, a.trials) as better,
       list_filter([
           case when p.catalogue_hash_a is distinct from p.catalogue_hash_b then 'catalogue' end,
           case when p.prompt_hash_a is distinct from p.prompt_hash_b then 'prompt' end,
           case when p.model_a is distinct from p.model_b then 'model' end,
           case when p.served_models_a is not null and p.served_models_b is not null
                     and p.served_models_a <> p.served_models_b then 'served_model' end,
           case when p.selector_a is distinct from p.selector_b then 'selector' end,
           case when p.version_hash_a is distinct from p.version_hash_b then 'version' end
       ], lambda x: x is not null) as differs_in,
       p.catalogue_a, p.catalogue_b, p.catalogue_hash_a, p.catalogue_hash_b,
       p.prompt_a, p.prompt_b, p.prompt_hash_a, p.prompt_hash_b,
       p.model_a, p.model_b, p.served_models_a, p.served_models_b, p.selector_a, p.selector_b,
       p.version_a, p.version_b, p.version_hash_a, p.version_hash_b
from arm_pairs p
join side_a a on a.run_a = p.run_a and a.arm_a = p.arm_a and a.run_b = p.run_b and a.arm_b = p.arm_b
join side_b b on b.run_a = p.run_a and b.arm_a = p.arm_a and b.run_b = p.run_b and b.arm_b = p.arm_b
             and b.request_id = a.request_id
order by p.run_a, p.arm_a, p.run_b, p.arm_b, a.request_id
