-- selection_rows: one row per (run, arm, seed, request).
-- Every registered selection row, as landed from Parquet (columns documented in schemas/selection/rows.py).
-- The base of every other view: aggregate, per-tool, per-pair and weighted figures are GROUP BYs over it.
select *
from landed_rows
