"""`tooleval sql` is read-only and confined: it cannot write or attach the warehouse file,
write or read files elsewhere, install or load extensions (no network), or change its settings; each such
statement exits 2 naming the statement and the rule, and the warehouse stays byte-identical. Every statement
that returns rows prints them (a PIVOT too)."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path


from flows.cli import main

RULE = "tooleval sql is read-only"


def _sha(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _escapes(warehouse: Path, elsewhere: Path) -> list[tuple[str, str]]:
    db = warehouse / "tooleval.duckdb"
    return [
        # the real file attached for writing, its runs deleted
        (f"attach '{db}' as w (read_only false); delete from w.runs", "attach"),
        (f"attach '{db}' as w", "attach"),
        (f"attach '{elsewhere / 'new.duckdb'}' as n", "attach"),
        # writes elsewhere, extensions, reads of any file
        (f"copy (select * from runs) to '{elsewhere / 'out.csv'}'", "copy"),
        (f"copy runs to '{warehouse / 'out.parquet'}' (format parquet)", "copy"),
        (f"export database '{elsewhere / 'export'}'", "export database"),
        ("install httpfs", "install httpfs"),
        ("load httpfs", "load httpfs"),
        ("select * from read_text('/etc/hostname')", "read_text"),
        ("select * from read_csv('/etc/passwd')", "read_csv"),
        (f"select * from '{db}'", "select"),
        ("select * from glob('/etc/*')", "glob"),
        ("set enable_external_access = true", "enable_external_access"),
        ("reset lock_configuration", "lock_configuration"),
        ("set autoinstall_known_extensions = true", "autoinstall"),
        ("delete from runs", "delete from runs"),
        ("select 1; copy (select 1) to '/tmp/tooleval-sql-escape.csv'", "copy"),  # refused before anything runs
    ]


def test_every_escape_is_refused_with_the_rule_and_the_warehouse_is_byte_identical(warehouse, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before = _sha(warehouse)
    for statement, named in _escapes(warehouse, elsewhere):
        code = main(["sql", statement, "--warehouse", str(warehouse)])
        err = capsys.readouterr().err
        assert code == 2, (statement, err)
        assert RULE in err and named.lower() in err.lower(), (statement, err)
        assert "Traceback" not in err
        assert _sha(warehouse) == before, statement
    assert list(elsewhere.iterdir()) == []
    assert not Path("/tmp/tooleval-sql-escape.csv").exists()
    # the runs are all still there, and every view still answers
    assert main(["sql", "select count(*) as n from runs", "--warehouse", str(warehouse)]) == 0
    assert capsys.readouterr().out.splitlines()[2].strip() == "1"
    assert main(["sql", "select tool, accuracy from per_tool_accuracy order by tool", "--warehouse",
                 str(warehouse)]) == 0
    assert "refund" in capsys.readouterr().out


def test_escapes_piped_in_are_refused_and_the_rest_still_answer(warehouse, tmp_path, capsys, monkeypatch):
    before = _sha(warehouse)
    db = warehouse / "tooleval.duckdb"
    script = (f"attach '{db}' as w (read_only false);\ndelete from w.runs;\n"
              f"copy (select 1) to '{tmp_path / 'x.csv'}';\n"
              "create temp table mine as select tool, accuracy from per_tool_accuracy;\n"
              "select count(*) as n_tools from mine;\n")
    monkeypatch.setattr("sys.stdin", io.StringIO(script))
    assert main(["sql", "--warehouse", str(warehouse)]) == 2
    captured = capsys.readouterr()
    assert captured.err.count(RULE) >= 2
    assert "n_tools" in captured.out and captured.out.splitlines()[2].strip() == "2"
    assert _sha(warehouse) == before and not (tmp_path / "x.csv").exists()


def test_a_pivot_prints_its_rows(warehouse, capsys):
    assert main(["sql", "pivot (select expected as tool, correct from selection_rows) on correct using count(*) order by tool",
                 "--warehouse", str(warehouse)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["tool", "false", "true"]
    assert lines[2].split() == ["refund", "1", "3"] and lines[3].split() == ["track", "1", "1"]


def test_every_statement_of_a_multi_statement_query_that_returns_rows_prints_them(warehouse, capsys):
    assert main(["sql", "create temp table t as select 7 as x; select x from t; "
                 "pivot (select expected from selection_rows) on expected using count(*); set variable v = 1; "
                 "select getvariable('v') as v; checkpoint", "--warehouse", str(warehouse)]) == 0
    out = capsys.readouterr().out
    assert "Count" not in out and "Success" not in out  # statements that return no rows of their own stay quiet
    assert out.count("(1 row)") == 3
    assert "refund" in out and "track" in out
