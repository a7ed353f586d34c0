"""What a run's flow would import only after the Prefect API answers (Prefect's engines, parameter
serialisation, pyarrow's pandas shim, a lexical router's bm25s), imported while the local server starts."""

from __future__ import annotations

import importlib

ALWAYS = ("prefect.flow_engine", "prefect.task_engine", "fastapi.encoders", "pandas")
BY_SELECTOR = {"lexical": ("bm25s", "bm25s.stopwords")}


def import_before_api(prepared) -> None:
    """Import what the flow of ``prepared`` (tasks/run/prepare_run.py) will import after the API answers."""
    selectors = sorted(filter(None, {getattr(arm, "selector", None) for arm in prepared.experiment.arms}))
    for name in ALWAYS + tuple(module for kind in selectors for module in BY_SELECTOR.get(kind, ())):
        try:
            importlib.import_module(name)
        except ImportError:  # an optional dependency not installed: the run says so where it needs it
            continue
