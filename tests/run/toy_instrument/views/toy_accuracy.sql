-- toy_accuracy: one row per (run, arm): how many numbers the arm's rule guessed and how many right
SELECT run_id, arm, count(*) AS n_rows, count(*) FILTER (WHERE correct) AS n_correct
FROM toy_rows
GROUP BY run_id, arm
