"""The order the suite's modules start in: the longest first, so that pytest-xdist's workers (``make test``:
each takes the next module when it is free, a module never split between two) end together instead of one
finishing a long module alone at the end. The longest modules are named below, longest first; after them
come the other modules with a slow test, then the rest, each group in collection order. Only the order
changes: every test still runs, in its module's own order."""

from __future__ import annotations

LONGEST_FIRST = (
    "tests/flows/test_failure_drill.py",
    "tests/flows/test_run_signals_and_progress.py",
    "tests/flows/test_kept_server.py",
    "tests/selectors/decision_models/test_out_of_domain.py",
    "tests/deployments/test_deploy_local_server.py",
    "tests/flows/test_evaluate_flow.py",
    "tests/flows/test_pre_change_outcome.py",
    "tests/flows/test_immutable_warehouse.py",
    "tests/surface/test_mcp_git_example.py",
    "tests/deployments/test_deploy_dask_runner.py",
    "tests/tracing/test_phoenix_traces.py",
    "tests/warehouse/test_register_large_run.py",
    "tests/flows/test_weekly_flow.py",
    "tests/surface/test_mcp_text_errors.py",
    "tests/selectors/routers/test_embedding_store.py",
    "tests/traffic/test_traffic_queue.py",
    "tests/flows/test_imported_sets_run.py",
    "tests/flows/test_temporary_server_start.py",
    "tests/flows/test_position_sensitive_run.py",
    "tests/flows/test_prefect_api_lost_and_ports.py",
)
"""Test modules (paths from the repository's root) that take the longest in ``make test``, longest first."""


def module_rank(nodeid: str, has_slow_test: set[str]) -> int:
    """Where the module of the test ``nodeid`` starts: its place in LONGEST_FIRST, else after those (a module
    with a slow test before one without)."""
    module = nodeid.split("::", 1)[0]
    if module in _RANK:
        return _RANK[module]
    return len(_RANK) + (module not in has_slow_test)


_RANK = {module: rank for rank, module in enumerate(LONGEST_FIRST)}
