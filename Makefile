# The two commands of the README. Each installs what it needs into .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo demo-tasks test test-fast install bench clean-warehouse

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first, from the machine's CPU build: anything else would pull a multi-GB CUDA build
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -c requirements.lock -e '.[embedding,dev]'
	touch $(STAMP)

install: $(STAMP)

# Exit 1 means a registered gate failed: the demo's finding, reported above. Any other non-zero code
# (bad input 2, model mismatch 3, not judged 4, not registered 5, crashed 6) fails the demo.
demo: $(STAMP)
	@$(BIN)/tooleval run tasksets/support/experiments/ladder.yaml; status=$$?; \
	if [ $$status -eq 1 ]; then echo "make demo: the run completed; a registered gate failed (exit 1), as reported above."; exit 0; fi; \
	exit $$status

# Tasks done on a tool surface: the four-arm support-desk experiment, offline (the baseline agent, no key).
demo-tasks: $(STAMP)
	@$(BIN)/tooleval tasks run tasksets/support_tasks/experiments/four_arms.yaml; status=$$?; \
	if [ $$status -eq 1 ]; then echo "make demo-tasks: the run completed; a registered gate failed (exit 1), as reported above."; exit 0; fi; \
	exit $$status

# The full suite (what CI runs).
test: $(STAMP)
	$(BIN)/python -m pytest -q

# The logic without the slow tier (Prefect flow runs, real servers, Dask, the MiniLM model, end-to-end CLI runs,
# whole-window reads of the bundled production log): `pytest -m slow` is that tier alone.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

bench: $(STAMP)
	$(BIN)/python benchmarks/evaluate_flow.py
	$(BIN)/python benchmarks/report_views.py

clean-warehouse:
	rm -rf warehouse/tooleval.duckdb warehouse/tooleval.duckdb.wal warehouse/rows warehouse/reports warehouse/cache warehouse/task_runs warehouse/task_calls warehouse/registrations
