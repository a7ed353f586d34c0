"""Rows become Arrow tables and land as Parquet without importing pandas; whatever needs pandas through
pyarrow afterwards still gets it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CODE = """
import sys, tempfile
from pathlib import Path
from warehouse.arrow_without_pandas import skip_pandas_probe
skip_pandas_probe()
import pyarrow as pa
from warehouse.parquet_store import write_partition
table = pa.table({"a": [1, 2], "b": ["x", None], "m": [[("k", 0.5)], []]},
                 schema=pa.schema([("a", pa.int64()), ("b", pa.string()), ("m", pa.map_(pa.string(), pa.float64()))]))
path = write_partition(Path(tempfile.mkdtemp()), "r", "arm", 1, 0, table)
import pyarrow.parquet as pq
assert pq.read_table(path).equals(table)
print("pandas after landing:", "pandas" in sys.modules)
frame = table.to_pandas()
print("pandas after to_pandas:", "pandas" in sys.modules, len(frame))
import pandas as pd
print("from pandas:", pa.Table.from_pandas(pd.DataFrame({"c": [3]})).column("c").to_pylist(),
      pa.array(pd.Series(["2026-01-01"], dtype="datetime64[ns]")).type)
"""


def test_rows_land_without_pandas_and_pandas_is_there_when_asked_for():
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["pandas after landing: False", "pandas after to_pandas: True 2",
                                        "from pandas: [3] timestamp[ns]"], done.stdout


def test_with_pandas_loaded_nothing_is_changed():
    code = ("import sys, pandas\nfrom warehouse.arrow_without_pandas import skip_pandas_probe\nskip_pandas_probe()\n"
            "import pyarrow as pa\nprint(sys.modules['pandas'] is pandas, pa.array(pandas.Series([1])).to_pylist())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "[1]"]
