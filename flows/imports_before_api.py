"""What a run would otherwise import only after the Prefect API answers, imported while the temporary server
is still starting, so that none of it lies between the server answering and the run ending.

py-spy of a 1,620-row ``tooleval run`` (load ~8, docs/scale-out/speed.md): after the server answered, the
parent imported FastAPI for Prefect's parameter serialisation (``Flow.serialize_parameters``, 0.5 s),
pandas for the first landed batch (``pyarrow.table`` over Python lists, 0.9 s) and bm25s in the first lexical
unit (0.7 s, with the other three workers waiting on the import lock), all on the critical path. Each is
imported here only when the run will use it."""

from __future__ import annotations

import importlib

ALWAYS = ("prefect.flow_engine", "prefect.task_engine", "fastapi.encoders", "pandas")
"""The flow and task engines, Prefect's parameter serialisation, pyarrow's pandas shim (landing)."""
BY_SELECTOR = {"lexical": ("bm25s", "bm25s.stopwords")}


def import_before_api(prepared) -> None:
    """Import what the run's flow will import after the API answers (``prepared``: tasks/run/prepare_run.py)."""
    selectors = {getattr(arm, "selector", None) for arm in prepared.experiment.arms}
    for name in ALWAYS + tuple(module for kind in sorted(filter(None, selectors))
                                for module in BY_SELECTOR.get(kind, ())):
        try:
            importlib.import_module(name)
        except ImportError:  # an optional dependency not installed: the run says so where it needs it
            continue
