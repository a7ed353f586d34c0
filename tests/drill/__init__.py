"""The failure drill: bad inputs with their expected messages (``bad_inputs``), kill -9 at named
points of a run followed by a resuming rerun, readers holding the DuckDB file and concurrent runs
(``harness``). ``tests/flows/test_failure_drill.py`` runs a fast subset; ``benchmarks/failure_drill.py`` runs
all of it and prints the figures quoted in docs/reliability/index.md."""
