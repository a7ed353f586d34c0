"""Prefect flows, one per file, each a short sequence of task calls; and the ``tooleval`` CLI."""
