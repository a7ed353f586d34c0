"""Units of work: plain functions first, the thin Prefect ``@task`` wrappers beside them."""
