"""Deployment tests start real processes (a Prefect server, a worker, a Dask cluster): marked slow."""


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: starts real servers, workers or clusters (tens of seconds); runs in make test")
