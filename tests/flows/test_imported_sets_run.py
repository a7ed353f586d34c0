"""The importers turn the public files in ../shared/bench into task sets that the evaluate flow runs."""

from __future__ import annotations

import duckdb
import pytest
import yaml

from flows.evaluate import evaluate
from tasks.importers.bfcl import import_bfcl
from tasks.importers.metatool import import_metatool
from tasks.selectors.decision_models.train_decision_model import train_decision_model
from tests.factories import BENCH

pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason=f"public bench data not found at {BENCH}")


def test_bfcl_multiple_runs_with_its_generated_experiment(prefect_harness, tmp_path):
    out = tmp_path / "bfcl"
    import_bfcl(BENCH / "bfcl" / "BFCL_v4_multiple.json",
                BENCH / "bfcl" / "possible_answer" / "BFCL_v4_multiple.json", out)
    train_decision_model(out / "v1.jsonl", out / "models" / "hybrid.json")  # the experiment's 'trained' arm
    summary = evaluate(experiment_path=str(out / "experiments" / "offline-trained.yaml"), warehouse_dir=str(tmp_path / "w"))
    assert summary.n_rows == 200 * 3 * 3
    con = duckdb.connect(str(tmp_path / "w" / "tooleval.duckdb"), read_only=True)
    rows = con.execute("""select arm, min(n_tools), max(n_tools), avg(correct::int) from selection_rows
                          group by arm order by arm""").fetchall()
    assert [r[0] for r in rows] == ["embedding", "lexical", "trained"]
    assert all(2 <= r[1] <= r[2] <= 4 for r in rows)
    assert all(r[3] > 0.9 for r in rows)  # a 2-4 tool choice; no 'none' label, so no router abstains
    rules = dict(con.execute("select arm, abstain_rule from arms").fetchall())
    assert rules["lexical"].startswith("never") and rules["trained"].startswith("never")
    assert con.execute("select count(*) from selection_rows where chosen = 'none'").fetchall() == [(0,)]
    (model_hash,) = con.execute("select decision_model_hash from arms where arm = 'trained'").fetchall()[0]
    assert len(model_hash) == 64
    # every pair counted was offered together
    assert con.execute("select count(*) from confused_pairs where n_offered_together < n").fetchall() == [(0,)]
    con.close()


def test_metatool_runs_on_its_shared_catalogue(prefect_harness, tmp_path):
    out = tmp_path / "metatool"
    import_metatool(BENCH / "metatool" / "plugin_des.json", BENCH / "metatool" / "all_clean_data.dev10.csv", out)
    experiment = yaml.safe_load((out / "experiments" / "offline.yaml").read_text())
    experiment["arms"] = [a for a in experiment["arms"] if a["selector"] == "lexical"]  # keep the test quick
    experiment["comparisons"] = []
    (out / "experiments" / "lexical.yaml").write_text(yaml.safe_dump(experiment))
    summary = evaluate(experiment_path=str(out / "experiments" / "lexical.yaml"), warehouse_dir=str(tmp_path / "w"))
    con = duckdb.connect(str(tmp_path / "w" / "tooleval.duckdb"), read_only=True)
    n_requests = con.execute("select count(distinct request_id) from selection_rows").fetchall()[0][0]
    assert summary.n_rows == n_requests * 3 and n_requests > 2000
    assert con.execute("select min(n_tools), max(n_tools) from selection_rows").fetchall() == [(199, 199)]
    assert con.execute("select count(distinct tool) from per_tool_accuracy").fetchall()[0][0] > 150
    con.close()
