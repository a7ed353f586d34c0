"""Arrow tables from rows without importing pandas.

The first time pyarrow converts Python values (``pa.array``, ``pa.table``: every landed batch and registered
record), it asks once whether pandas can be imported, and imports it if so, to recognise pandas objects
among the values. Rows and records are plain values, never pandas objects, and pandas with its own imports
is a large share of a small run's start. ``skip_pandas_probe`` has that first question answered "no" while
pandas is not loaded. pyarrow asks again, and imports pandas as before, wherever it needs it
(``to_pandas``, ``Table.from_pandas``)."""

from __future__ import annotations

import sys


class _NoPandas:
    """An import finder that refuses pandas."""

    @staticmethod
    def find_spec(name: str, *_args: object) -> None:
        if name == "pandas":
            raise ImportError("pandas is not imported for pyarrow's probe")


def skip_pandas_probe() -> None:
    """Answer pyarrow's first "is pandas there?" with no, unless pandas is loaded already. Call it before
    any thread converts values (an import of pandas elsewhere would fail while the question is asked)."""
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    sys.meta_path.insert(0, _NoPandas)  # type: ignore[arg-type]
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(_NoPandas)  # type: ignore[arg-type]
