"""The shared SQL macros (warehouse/macros.sql) on known values, against the project's Python statistics, and
where they must be found: after create_views on any connection, and in the DuckDB file for a reader in
another process."""

from __future__ import annotations

import subprocess
import sys

import duckdb
import numpy as np
import pytest

from tasks.stats.distributions import two_sided_quantile
from tasks.stats.wilson import clustered_wilson_interval, wilson_interval
from tests.factories import ROOT
from warehouse.connect import connect
from warehouse.tables import create_tables
from warehouse.views import MACROS_FILE, create_macros, create_views, view_files


@pytest.fixture
def con():
    connection = duckdb.connect(":memory:")
    create_macros(connection)
    yield connection
    connection.close()


def scalar(con, sql: str, params: list | None = None):
    return con.execute(sql, params or []).fetchall()[0][0]


def test_wilson_of_11_in_24_is_the_python_interval(con):
    low, high = con.execute("select wilson_low(11 / 24, 24), wilson_high(11 / 24, 24)").fetchall()[0]
    python = wilson_interval(11, 24)
    assert (round(100 * low, 1), round(100 * high, 1)) == (27.9, 64.9)
    assert (low, high) == pytest.approx((python.low, python.high), abs=1e-12)


@pytest.mark.parametrize("correct, n", [(0, 10), (10, 10), (1, 3), (7, 9), (45, 50), (3, 7.5), (120, 1000.25)])
def test_wilson_bounds_match_python_and_stay_in_0_1(con, correct, n):
    low, high = con.execute("select wilson_low(? / ?, ?), wilson_high(? / ?, ?)",
                            [correct, n, n, correct, n, n]).fetchall()[0]
    python = wilson_interval(correct, n)
    assert (low, high) == pytest.approx((python.low, python.high), abs=1e-12)
    assert 0.0 <= low <= correct / n <= high <= 1.0


def test_wilson_takes_another_quantile(con):
    z90 = two_sided_quantile(0.90)
    low, high = con.execute("select wilson_low(11 / 24, 24, z := ?), wilson_high(11 / 24, 24, z := ?)",
                            [z90, z90]).fetchall()[0]
    python = wilson_interval(11, 24, confidence=0.90)
    assert (low, high) == pytest.approx((python.low, python.high), abs=1e-12)
    assert scalar(con, "select wilson_low(11 / 24, 24, z := 3.0)") < low


CLUSTERS = {
    "three identical seeds (n_eff = requests)": ([3, 3, 0, 0, 3, 0, 3, 3], [3] * 8),
    "one seed (n_eff = rows)": ([1, 0, 1, 1, 0, 1, 1, 0, 1, 1], [1] * 10),
    "mixed seeds": ([3, 2, 1, 0, 3, 3, 2, 1, 3, 0, 2, 3], [3] * 12),
    "unequal trials": ([2, 0, 1, 4, 3], [2, 1, 3, 4, 5]),
    "all right (n_eff = requests)": ([3, 3, 3], [3, 3, 3]),
    "none right (n_eff = requests)": ([0, 0, 0, 0], [2, 2, 2, 2]),
    "every request at p (variance 0 -> rows)": ([1, 1, 1, 1], [2, 2, 2, 2]),
}


def _sums(k: list[int], m: list[int]) -> list[int]:
    k_, m_ = np.asarray(k), np.asarray(m)
    return [int(k_.sum()), int(m_.sum()), len(k), int((k_ * k_).sum()), int((k_ * m_).sum()), int((m_ * m_).sum())]


def _fourth_sums(k: list[int], m: list[int]) -> list[int]:
    k_, m_ = np.asarray(k), np.asarray(m)
    return [int((k_ ** 4).sum()), int((k_ ** 3 * m_).sum()), int((k_ ** 2 * m_ ** 2).sum()),
            int((k_ * m_ ** 3).sum()), int((m_ ** 4).sum())]


@pytest.mark.parametrize("case", list(CLUSTERS))
def test_clustered_n_star_from_group_sums_is_the_python_effective_n(con, case):
    k, m = CLUSTERS[case]
    n_eff = scalar(con, "select clustered_n_star(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", _sums(k, m) + _fourth_sums(k, m))
    assert n_eff == pytest.approx(clustered_wilson_interval(k, m).n_effective, rel=1e-12)
    python = clustered_wilson_interval(k, m)
    low, high = con.execute("select wilson_low(? / ?, ?), wilson_high(? / ?, ?)",
                            [sum(k), sum(m), n_eff, sum(k), sum(m), n_eff]).fetchall()[0]
    assert (low, high) == pytest.approx((python.low, python.high), abs=1e-12)


def test_clustered_n_effective_known_values(con):
    # three identical seeds: the seeds add nothing, the unit is the request
    assert scalar(con, "select clustered_n_effective(?, ?, ?, ?, ?, ?)", _sums([3, 3, 0, 0, 3, 0, 3, 3], [3] * 8)) \
        == pytest.approx(8)
    # one seed: Kish n = rows; every request at p (variance exactly 0): rows; all right: requests
    assert scalar(con, "select clustered_n_effective(?, ?, ?, ?, ?, ?)", _sums([1, 0, 1, 1], [1] * 4)) == 4
    assert scalar(con, "select clustered_n_effective(?, ?, ?, ?, ?, ?)", _sums([1, 1, 1, 1], [2] * 4)) == 8
    assert scalar(con, "select clustered_n_effective(?, ?, ?, ?, ?, ?)", _sums([3, 3, 3], [3] * 3)) == 3
    assert scalar(con, "select clustered_variance(?, ?, ?, ?, ?)", [4, 8, 4, 8, 16]) == 0.0


def test_clustered_variance_is_exact_on_large_sums(con):
    # 10 million rows in requests of 3 seeds: the variance from sums equals the direct sum of squares
    rng = np.random.default_rng(8)
    k = rng.integers(0, 4, size=3_333_334)
    m = np.full_like(k, 3)
    correct, n = int(k.sum()), int(m.sum())
    direct = float((((k - correct / n * m) ** 2).sum()) / n**2)
    from_sums = scalar(con, "select clustered_variance(?, ?, ?, ?, ?)",
                       [correct, n, int((k * k).sum()), int((k * m).sum()), int((m * m).sum())])
    assert from_sums == pytest.approx(direct, rel=1e-9)


@pytest.mark.parametrize("position, n_tools, third", [(1, 18, 1), (6, 18, 1), (7, 18, 2), (12, 18, 2), (13, 18, 3),
                                                      (18, 18, 3), (1, 1, 1), (2, 2, 2), (3, 4, 2), (4, 4, 3),
                                                      (1, 0, None), (None, 18, None)])
def test_position_third(con, position, n_tools, third):
    assert scalar(con, "select position_third(?::integer, ?::integer)", [position, n_tools]) == third


@pytest.mark.parametrize("confidence, bin_", [(0.0, 1), (0.09999, 1), (0.1, 2), (0.55, 6), (0.9, 10), (1.0, 10)])
def test_confidence_bin(con, confidence, bin_):
    assert scalar(con, "select confidence_bin(?::double)", [confidence]) == bin_


def test_majority_right(con):
    assert con.execute("select majority_right(2, 3), majority_right(1, 3), majority_right(1, 2), "
                       "majority_right(1, 1)").fetchall()[0] == (True, False, False, True)


def test_clustered_accuracy_per_tool_counts_every_trial_and_scores_only_the_scored(con):
    # tool a: request r1 scored twice (1 right, seeds 1, 2), r2 once right (seed 1), one unscored trial;
    # tool b: nothing scored
    con.execute("""create table trials as select * from (values
        ('run', 'arm', 0, 's', 'a', 'r1', 1, true, true), ('run', 'arm', 0, 's', 'a', 'r1', 2, true, false),
        ('run', 'arm', 0, 's', 'a', 'r2', 1, true, true), ('run', 'arm', 0, 's', 'a', 'r2', 2, false, null),
        ('run', 'arm', 0, 's', 'b', 'r3', 1, false, null))
        t(run_id, arm, rung, slice, tool, request_id, seed, scored, "right")""")
    rows = con.execute("select tool, n, scored, n_requests, \"right\", n_effective, seed_min, seed_max "
                       "from clustered_accuracy_per_tool(trials) order by tool").fetchall()
    assert rows == [("a", 4, 3, 2, 2, 2.0, 0.0, 1.0), ("b", 1, None, None, None, None, None, None)]


def test_macros_are_created_before_the_views_and_again_without_error():
    connection = duckdb.connect(":memory:")
    create_tables(connection)
    create_views(connection)
    create_views(connection)  # CREATE OR REPLACE: idempotent
    macros = {name for (name,) in connection.execute(
        "select distinct function_name from duckdb_functions() where function_type = 'macro' and not internal"
    ).fetchall()}
    assert {"wilson_low", "wilson_high", "clustered_variance", "clustered_n_effective", "position_third",
            "confidence_bin", "majority_right"} <= macros
    for view in view_files():
        connection.execute(f"select * from {view}").fetchall()


def test_macro_file_is_beside_the_views_and_not_a_view():
    assert MACROS_FILE.is_file() and "macros" not in view_files()
    assert MACROS_FILE.read_text().count("CREATE OR REPLACE MACRO") >= 7


def test_a_reader_in_another_process_finds_the_macros_in_the_file(tmp_path):
    db = tmp_path / "tooleval.duckdb"
    connect(db).close()
    reader = (
        "import duckdb, sys\n"
        "con = duckdb.connect(sys.argv[1], read_only=True)\n"
        "print(con.execute('select round(100 * wilson_low(11 / 24, 24), 1)').fetchall()[0][0])\n"
        "for (view,) in con.execute(\"select view_name from duckdb_views() where not internal\").fetchall():\n"
        "    con.execute(f'select * from {view}').fetchall()\n"
        "print('views ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", reader, str(db)], capture_output=True, text=True, cwd=ROOT,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["27.9", "views", "ok"]
