-- judge_argument_check: one row per (run, arm, judge verdict, argument check) that some judged row has.
-- The LLM judge's verdict on the choice of tool (right / wrong / unsure, blind to the labels) beside the
-- argument check against the request's expected arguments (right / wrong / not_scored: arguments_correct
-- true / false / null), over the judged rows of the arm (judge_verdict not null). rows: rows with both
-- readings; label_correct: those of them whose tool matched the label (correct); n_requests: requests among
-- them. Judge right with arguments wrong: the choice held and the call did not; judge wrong with arguments
-- right: the judge disagrees with the label (arguments are scored only on calls of the labelled tool).
with judged as (
    select run_id, arm, rung, request_id, correct, judge_verdict,
           case when arguments_correct then 'right'
                when not arguments_correct then 'wrong'
                else 'not_scored' end as argument_check
    from selection_rows
    where judge_verdict is not null
)
select run_id, arm, min(rung) as rung, judge_verdict, argument_check,
       count(*) as rows,
       count(*) filter (where correct) as label_correct,
       count(distinct request_id) as n_requests
from judged
group by run_id, arm, judge_verdict, argument_check
order by run_id, rung, judge_verdict, argument_check
