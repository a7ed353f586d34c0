# The two commands of the README (make demo, make test) and the others. Each installs what it needs into .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo demo-tasks demo-mcp demo-git test test-fast test-experimental docs install lock bench bench-tracing clean-warehouse phoenix phoenix-serve \
        prefect-server prefect-deploy prefect-worker

# torch is the machine's CPU build, a wheel file in TORCH_WHEELS: PyPI's torch would pull a multi-GB CUDA build.
# `make lock` pins it in requirements.lock with that file's hash, and a --find-links line there tells uv and pip
# where the file lies.
TORCH        := torch==2.13.0+cpu
TORCH_WHEELS ?= /opt/wheels

# uv, pinned (requirements-uv.lock, with hashes), in a venv of its own: it makes the lock and installs it.
UV_VERSION := 0.13.9
UV_VENV    := .venv-uv
UV         := $(UV_VENV)/bin/uv

$(UV): requirements-uv.lock
	test -x $(UV_VENV)/bin/python || $(PYTHON) -m venv $(UV_VENV)
	$(UV_VENV)/bin/python -m pip install -q --require-hashes -r requirements-uv.lock
	touch $(UV)

# Every package comes from a lock: pinned, with hashes; a file whose hash is not listed is refused. uv installs
# it as locked (--no-deps: the lock is the resolution; `pip check` then proves it consistent); then the project
# itself. Bytecode is compiled at install, as pip does: a fresh venv's first run (and CI's timing tests) must not
# pay for it. `make install INSTALLER=pip` does the same with the venv's pip alone, about twice as slow.
# $(call install_lock,VENV,LOCK) installs LOCK into VENV.
INSTALLER ?= uv
ifeq ($(INSTALLER),pip)
install_lock = $(1)/bin/python -m pip install -q --no-deps --require-hashes -r $(2)
LOCK_TOOL    =
else
install_lock = $(UV) pip install -q --python $(1)/bin/python --no-deps --require-hashes --compile-bytecode -r $(2)
LOCK_TOOL    = $(UV)
endif

$(STAMP): pyproject.toml requirements.lock | $(LOCK_TOOL)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(call install_lock,$(VENV),requirements.lock)
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e .
	$(BIN)/python -m pip check
	touch $(STAMP)

# `make lock` regenerates the three lock files with uv, for Python 3.11 on linux x86_64, with hashes:
# requirements.lock from pyproject.toml (all extras, torch from TORCH_WHEELS), requirements-phoenix.lock from
# PHOENIX, requirements-uv.lock from UV_VERSION. Pins already in a lock are kept where its input still allows
# them; releases uploaded after LOCK_DATE are not considered, so the same inputs give the same locks (move
# LOCK_DATE forward, or delete a lock, to take newer releases).
LOCK_EXTRAS  := analyst dask dev embedding mcp-servers tracing
LOCK_DATE    := 2026-12-02T00:00:00Z
PHOENIX      := arize-phoenix==20.26.1
LOCK_TARGET  := --python-version 3.11 --python-platform x86_64-manylinux_2_28 --exclude-newer $(LOCK_DATE)
LOCK_COMPILE := $(UV) pip compile --generate-hashes $(LOCK_TARGET) --quiet

lock: $(UV)
	echo '$(TORCH)' > $(UV_VENV)/torch.txt
	$(LOCK_COMPILE) pyproject.toml $(foreach e,$(LOCK_EXTRAS),--extra $(e)) \
	  --find-links $(TORCH_WHEELS) --emit-find-links --constraint $(UV_VENV)/torch.txt \
	  --custom-compile-command 'make lock  (pyproject.toml, all extras, torch from TORCH_WHEELS: see Makefile)' \
	  -o requirements.lock
	echo '$(PHOENIX)' > $(UV_VENV)/phoenix.in
	$(LOCK_COMPILE) $(UV_VENV)/phoenix.in \
	  --custom-compile-command 'make lock  (the Phoenix server, for make phoenix)' -o requirements-phoenix.lock
	echo 'uv==$(UV_VERSION)' > $(UV_VENV)/uv.in
	$(LOCK_COMPILE) $(UV_VENV)/uv.in \
	  --custom-compile-command 'make lock  (uv itself, for make install and make lock)' -o requirements-uv.lock

# The MCP servers of the mcp_office task set (Node 20+ and npm): pinned by its package-lock.json.
MCP_SERVERS := tasksets/mcp_office/node_modules/.installed

$(MCP_SERVERS): tasksets/mcp_office/package.json tasksets/mcp_office/package-lock.json
	npm ci --prefix tasksets/mcp_office --no-audit --no-fund --loglevel=error
	touch $(MCP_SERVERS)

install: $(STAMP) $(MCP_SERVERS)

# The Phoenix server (traces, annotations) in a venv of its own: arize-phoenix pins anthropic<2, the project
# needs anthropic 2. The tracing tests start it (`phoenix serve` on free ports, a temporary working dir).
PHOENIX_VENV  := .venv-phoenix
PHOENIX_STAMP := $(PHOENIX_VENV)/.installed

$(PHOENIX_STAMP): requirements-phoenix.lock | $(LOCK_TOOL)
	test -x $(PHOENIX_VENV)/bin/python || $(PYTHON) -m venv $(PHOENIX_VENV)
	$(call install_lock,$(PHOENIX_VENV),requirements-phoenix.lock)
	$(PHOENIX_VENV)/bin/python -m pip check
	touch $(PHOENIX_STAMP)

phoenix: $(PHOENIX_STAMP)

# Phoenix on http://$(PHOENIX_HOST):$(PHOENIX_PORT) (UI, OTLP/HTTP and REST on one port), its SQLite in
# PHOENIX_WORKING_DIR (default .phoenix/ of the checkout, not Phoenix's ~/.phoenix). Another port:
# `make phoenix-serve PHOENIX_PORT=6016`, then `--trace otlp://127.0.0.1:6016`.
PHOENIX_HOST ?= 127.0.0.1
PHOENIX_PORT ?= 6006
PHOENIX_WORKING_DIR ?= $(CURDIR)/.phoenix

phoenix-serve: $(PHOENIX_STAMP)
	mkdir -p $(PHOENIX_WORKING_DIR)
	PHOENIX_HOST=$(PHOENIX_HOST) PHOENIX_PORT=$(PHOENIX_PORT) PHOENIX_WORKING_DIR=$(PHOENIX_WORKING_DIR) \
	  PHOENIX_TELEMETRY_ENABLED=false $(PHOENIX_VENV)/bin/phoenix serve

# A long-lived Prefect server, the deployments and a process worker (docs/weekly/deploying.md), on any port:
# `make prefect-server PREFECT_PORT=4300`, and the same PREFECT_PORT for prefect-deploy and prefect-worker.
# The server is told its port through PREFECT_SERVER_API_HOST/PORT and its UI where the API is through
# PREFECT_UI_API_URL: `prefect server start --port N` alone serves a UI whose browser calls 4200 (the UI's API
# URL comes from PREFECT_API_URL, else from PREFECT_SERVER_API_HOST/PORT, not from --port).
PREFECT_HOST ?= 127.0.0.1
PREFECT_PORT ?= 4200
PREFECT_POOL ?= tooleval-process
PREFECT_SERVER_URL = http://$(PREFECT_HOST):$(PREFECT_PORT)/api

prefect-server: $(STAMP)
	PREFECT_SERVER_API_HOST=$(PREFECT_HOST) PREFECT_SERVER_API_PORT=$(PREFECT_PORT) \
	PREFECT_UI_API_URL=$(PREFECT_SERVER_URL) $(BIN)/prefect server start

prefect-deploy: $(STAMP)
	PREFECT_API_URL=$(PREFECT_SERVER_URL) $(BIN)/prefect work-pool inspect $(PREFECT_POOL) >/dev/null 2>&1 || \
	PREFECT_API_URL=$(PREFECT_SERVER_URL) $(BIN)/prefect work-pool create $(PREFECT_POOL) --type process
	PREFECT_API_URL=$(PREFECT_SERVER_URL) $(BIN)/prefect --no-prompt deploy --all --prefect-file deployments/prefect.yaml

prefect-worker: $(STAMP)
	PREFECT_API_URL=$(PREFECT_SERVER_URL) $(BIN)/prefect worker start --pool $(PREFECT_POOL)

# Exit 1 means a registered gate failed: the demo's finding, reported above. Any other non-zero code
# (bad input 2, model mismatch 3, not judged 4, not registered 5, crashed 6) fails the demo.
demo: $(STAMP)
	@$(BIN)/tooleval run tasksets/support/experiments/ladder.yaml; status=$$?; \
	if [ $$status -eq 1 ]; then echo "make demo: done; a registered gate failed (exit 1), as the report says."; exit 0; fi; \
	exit $$status

# Tasks done on a tool surface: the four-arm support-desk experiment, offline (the baseline agent, no key).
demo-tasks: $(STAMP)
	@$(BIN)/tooleval tasks run tasksets/support_tasks/experiments/four_arms.yaml; status=$$?; \
	if [ $$status -eq 1 ]; then echo "make demo-tasks: done; a registered gate failed (exit 1), as the report says."; exit 0; fi; \
	exit $$status

# Tasks on the reference MCP servers (memory: the CRM; filesystem: the documents): the office's four-arm experiment,
# offline (the baseline agent on the real servers, no key; Node 20+).
demo-mcp: $(STAMP) $(MCP_SERVERS)
	@$(BIN)/tooleval tasks run tasksets/mcp_office/experiments/four_arms.yaml; status=$$?; \
	if [ $$status -eq 1 ]; then echo "make demo-mcp: done; a registered gate failed (exit 1), as the report says."; exit 0; fi; \
	exit $$status

# Tasks on a Python MCP server from PyPI (mcp-server-git, pinned in requirements.lock), every task in a fresh Git
# repository built from its fixtures: the invoicer team's four-arm experiment, offline (the baseline agent, no key).
demo-git: $(STAMP)
	@$(BIN)/tooleval tasks run tasksets/mcp_git/experiments/four_arms.yaml; status=$$?; \
	if [ $$status -eq 1 ]; then echo "make demo-git: done; a registered gate failed (exit 1), as the report says."; exit 0; fi; \
	exit $$status

# The full suite (what CI runs), after the documentation site builds strict (a broken link, a page missing
# from the nav or a stale generated page fails it); it ends with the 25 slowest tests and set-ups. The tests run in
# TEST_WORKERS processes (pytest-xdist): each takes the next module when it is free, the longest modules first
# (tests/longest_first.py), a module never split (its module-scoped set-up is built once); TEST_WORKERS=0 runs
# them in this one process, in that order.
TEST_WORKERS ?= 2
test: $(STAMP) $(PHOENIX_STAMP) $(MCP_SERVERS) docs
	$(BIN)/python -m pytest -q --durations=25 \
	  $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

# The documentation site (mkdocs-material, mkdocs.yml) into site/ (git-ignored), strict: warnings are errors.
# The generated pages: python -m flows.cli_doc --write; python -m warehouse.schema_doc --write.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site

# The logic without the slow tier (Prefect flow runs, real servers, Dask, the MiniLM model, end-to-end CLI runs,
# whole-window reads of the bundled production log): `pytest -m slow` is that tier alone.
test-fast: $(STAMP) $(MCP_SERVERS)
	$(BIN)/python -m pytest -q -m "not slow"

# The experimental code's tests (experimental/: fine-tuning and the product of experts, `tooleval train
# --fine-tune`), outside `make test`: minutes of MiniLM fine-tuning.
test-experimental: $(STAMP)
	$(BIN)/python -m pytest -q experimental/tests

bench: $(STAMP)
	$(BIN)/python benchmarks/evaluate_flow.py
	$(BIN)/python benchmarks/report_views.py

bench-tracing: $(STAMP) $(PHOENIX_STAMP)
	$(BIN)/python benchmarks/tracing_overhead.py

clean-warehouse:
	rm -rf warehouse/tooleval.duckdb warehouse/tooleval.duckdb.wal warehouse/rows warehouse/reports warehouse/cache warehouse/task_runs warehouse/task_calls warehouse/registrations
