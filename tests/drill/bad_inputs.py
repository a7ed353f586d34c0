"""Bad inputs for every command, each with the exit code and the message fragments it must produce.

A case builds its inputs in a fresh folder and returns the command's arguments. The drill then checks:
the exit code; every fragment in what the command printed (each names the file, the line or id, and the
rule broken); no ``Traceback`` printed; and nothing written to the warehouse (a warehouse that did not
exist still does not; one that did is byte for byte the same).

Where a command's harm would land elsewhere, the case watches that path instead: ``tooleval sql`` escapes
(ATTACH read-write, COPY, EXPORT DATABASE, INSTALL, reading any file) watch the folder holding both the
warehouse and a target beside it; ``tasks validate`` watches the task set; ``train`` its ``--out`` file;
``--warehouse ''`` the checkout's default warehouse file, where an empty path used to land. The cases of
the last section keep a review's fixed findings fixed.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import duckdb

from tests.factories.criteria import criteria_text, gate
from tests.factories.rows import RUN, TASK_RUN, KnownRun, tool_rows, warehouse_with_a_task_run
from tests.factories.taskset import REQUESTS, write_experiment, write_taskset
from tests.surface.tiny_desk import desk_task, write_desk
from warehouse.connect import connect
from warehouse.location import DEFAULT_DIR

RUN_OK = "tooleval: bad input, nothing was run or written"


@dataclass(frozen=True)
class Built:
    args: list[str]
    warehouse: Path | None = None
    """The warehouse the command was pointed at, or the path its harm would land on (checked untouched);
    None for commands with neither."""
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class BadInput:
    name: str
    build: Callable[[Path], Built]
    exit_code: int
    fragments: tuple[str, ...]
    needs_root_mount: bool = False
    """Needs a read-only mount (root in a container that may mount): left out where that is impossible."""


# --------------------------------------------------------------------------------------------------
# builders
# --------------------------------------------------------------------------------------------------


def shop(tmp: Path, requests: list[dict] | None = None, freeze: bool = True, **experiment) -> Path:
    """The small shop task set and an experiment over it; returns the experiment file."""
    root = write_taskset(tmp / "shop", requests=requests, freeze=freeze)
    return write_experiment(root, **experiment)


def run(experiment: Path, tmp: Path, *extra: str, warehouse: Path | None = None) -> Built:
    warehouse = warehouse or tmp / "wh"
    return Built(["run", str(experiment), "--warehouse", str(warehouse), *extra], warehouse)


def requests_with(index: int, **changes) -> list[dict]:
    changed = [dict(r) for r in REQUESTS]
    changed[index] = {**changed[index], **changes}
    return changed


def edit_experiment(experiment: Path, old: str, new: str) -> Path:
    text = experiment.read_text()
    assert old in text, (old, text)
    experiment.write_text(text.replace(old, new, 1))
    return experiment


def refreeze(tmp: Path) -> None:
    from tasks.taskset.load_taskset import freeze_version

    (tmp / "shop" / "v1.manifest.json").unlink()
    freeze_version(tmp / "shop", "v1", ["existing"])


def existing_warehouse(tmp: Path) -> Path:
    """A warehouse with its DuckDB file (tables and views, no run) made without Prefect."""
    warehouse = tmp / "wh"
    connect(warehouse / "tooleval.duckdb").close()
    return warehouse


def case_missing_experiment(tmp):
    return run(tmp / "nowhere.yaml", tmp)


def case_yaml_syntax(tmp):
    experiment = shop(tmp)
    experiment.write_text(experiment.read_text() + "arms: [unclosed\n")
    return run(experiment, tmp)


def case_duplicate_yaml_key(tmp):
    experiment = shop(tmp)
    experiment.write_text(experiment.read_text() + "batch_size: 3\n")
    return run(experiment, tmp)


def case_unknown_key(tmp):
    experiment = shop(tmp)
    experiment.write_text(experiment.read_text() + "sedes: [1, 2]\n")
    return run(experiment, tmp)


def case_no_seeds(tmp):
    return run(shop(tmp, seeds=[], declared={"few_seeds": "drill"}), tmp)


def case_huge_seed(tmp):
    return run(shop(tmp, seeds=[1, 2, 2 ** 63]), tmp)


def case_one_change(tmp):
    experiment = shop(tmp, arms=[{"name": "a"}, {"name": "b", "prompt": "terse", "model": "bm25-b"}],
                      comparisons="ladder")
    (tmp / "shop" / "prompts" / "terse.md").write_text("Be terse.\n")
    return run(experiment, tmp)


def case_unknown_catalogue(tmp):
    return run(shop(tmp, arms=[{"name": "a", "catalogue": "nosuch"}, {"name": "b"}]), tmp)


def case_unknown_prompt(tmp):
    return run(shop(tmp, arms=[{"name": "a", "prompt": "nosuch"}, {"name": "b"}]), tmp)


def case_unknown_selector(tmp):
    return run(shop(tmp, arms=[{"name": "a", "selector": "oracle"}, {"name": "b"}]), tmp)


def case_moving_alias(tmp):
    return run(shop(tmp, arms=[{"name": "a", "selector": "openai", "model": "gpt-4.1-mini"}, {"name": "b"}]), tmp)


def case_duplicate_arm(tmp):
    return run(shop(tmp, arms=[{"name": "a"}, {"name": "a"}]), tmp)


def case_missing_version(tmp):
    return run(shop(tmp, version="v9"), tmp)


def case_label_not_offered(tmp):
    return run(shop(tmp, requests=requests_with(1, expected="track_parcel")), tmp)


def case_duplicate_id(tmp):
    return run(shop(tmp, requests=requests_with(2, id="r1")), tmp)


def case_empty_text(tmp):
    return run(shop(tmp, requests=requests_with(3, messages=[{"role": "user", "content": "   "}])), tmp)


def case_undeclared_slice(tmp):
    return run(shop(tmp, requests=requests_with(0, slice="mystery")), tmp)


def case_two_labels_one_text(tmp):
    twin = {**REQUESTS[1], "id": "r9", "expected": "search_kb"}
    return run(shop(tmp, requests=[*REQUESTS, twin]), tmp)


def case_edited_after_freeze(tmp):
    experiment = shop(tmp)
    with (tmp / "shop" / "v1.jsonl").open("a") as handle:
        handle.write(json.dumps({"id": "r9", "messages": [{"role": "user", "content": "x"}], "expected": "none",
                                 "slice": "existing"}) + "\n")
    return run(experiment, tmp)


def case_crlf_checkout(tmp):
    experiment = shop(tmp)
    path = tmp / "shop" / "v1.jsonl"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    return run(experiment, tmp)


def case_bom(tmp):
    experiment = shop(tmp)
    path = tmp / "shop" / "v1.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    refreeze_raw(tmp)
    return run(experiment, tmp)


def case_bad_json_line(tmp):
    experiment = shop(tmp)
    path = tmp / "shop" / "v1.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = lines[2][:-1]  # drop the closing brace
    path.write_text("\n".join(lines) + "\n")
    refreeze_raw(tmp)
    return run(experiment, tmp)


def refreeze_raw(tmp: Path) -> None:
    """Point the frozen manifest at the files as they are now (a version frozen that way, e.g. by hand or
    by an older tool), so what the run reports is the file's own fault, not the hash."""
    from tasks.taskset.load_taskset import content_hash

    manifest = tmp / "shop" / "v1.manifest.json"
    data = json.loads(manifest.read_text())
    data["content_hash"] = content_hash(tmp / "shop", "v1")
    manifest.write_text(json.dumps(data))


def case_missing_version_file_field(tmp):
    experiment = shop(tmp)
    path = tmp / "shop" / "v1.jsonl"
    lines = path.read_text().splitlines()
    lines[0] = json.dumps({k: v for k, v in json.loads(lines[0]).items() if k != "expected"})
    path.write_text("\n".join(lines) + "\n")
    refreeze_raw(tmp)
    return run(experiment, tmp)


def weights(tmp: Path, shares: dict) -> Built:
    experiment = shop(tmp)
    (tmp / "shop" / "weights" / "w1.json").write_text(json.dumps({"window": "w1", "source": "drill", "weights": shares}))
    return run(experiment, tmp)


def case_weights_sum(tmp):
    return weights(tmp, {"refund_order": 0.5, "track_shipment": 0.3})


def case_weights_negative(tmp):
    return weights(tmp, {"refund_order": 1.2, "track_shipment": -0.2})


def case_weights_unknown_tool(tmp):
    return weights(tmp, {"refund_order": 0.5, "fly_drone": 0.5})


def case_weights_missing(tmp):
    return run(shop(tmp, weights="w9"), tmp)


def case_catalogue_broken_json(tmp):
    experiment = shop(tmp)
    (tmp / "shop" / "catalogues" / "base.json").write_text('{"name": "base", "tools": [')
    return run(experiment, tmp)


def case_catalogue_twice(tmp):
    experiment = shop(tmp)
    path = tmp / "shop" / "catalogues" / "base.json"
    data = json.loads(path.read_text())
    data["tools"].append(dict(data["tools"][0]))
    path.write_text(json.dumps(data))
    return run(experiment, tmp)


def criteria(tmp: Path, text: str | None) -> Built:
    experiment = shop(tmp, criteria="criteria.yaml")
    if text is not None:
        (tmp / "shop" / "experiments" / "criteria.yaml").write_text(text)
    return run(experiment, tmp)


def case_criteria_missing(tmp):
    return criteria(tmp, None)


def case_criteria_unknown_kind(tmp):
    return criteria(tmp, criteria_text("drill", gate("g", "vibes_check", max_rate=0.1)))


def case_criteria_out_of_range(tmp):
    return criteria(tmp, criteria_text("drill", gate("g", "failure_rate", max_rate=1.5)))


def case_provisional(tmp):
    requests = [{**r, "label_status": "provisional"} for r in REQUESTS]
    return run(shop(tmp, requests=requests), tmp)


def case_warehouse_is_file(tmp):
    (tmp / "afile").write_text("x")
    return run(shop(tmp), tmp, warehouse=tmp / "afile")


def case_warehouse_under_file(tmp):
    (tmp / "afile").write_text("x")
    return run(shop(tmp), tmp, warehouse=tmp / "afile" / "wh")


def case_warehouse_corrupt(tmp):
    warehouse = tmp / "wh"
    warehouse.mkdir()
    (warehouse / "tooleval.duckdb").write_bytes(b"garbage " * 500)
    return run(shop(tmp), tmp, warehouse=warehouse)


def case_prefect_home_unwritable(tmp):
    (tmp / "afile").write_text("x")
    built = run(shop(tmp), tmp)
    return Built(built.args, built.warehouse, {"PREFECT_HOME": str(tmp / "afile" / "home"), "PREFECT_API_URL": ""})


def case_max_calls_negative(tmp):
    return run(shop(tmp), tmp, "--max-calls", "-1")


def case_spend_not_a_number(tmp):
    return run(shop(tmp), tmp, "--max-spend-usd", "lots")


def case_task_runner_unknown(tmp):
    return run(shop(tmp), tmp, "--task-runner", "spark")


def case_read_only_warehouse(tmp):
    """A warehouse on a read-only mount (tmpfs remounted read-only; the drill unmounts it afterwards)."""
    import subprocess

    warehouse = tmp / "ro"
    warehouse.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(warehouse)], check=True)
    connect(warehouse / "tooleval.duckdb").close()
    subprocess.run(["mount", "-o", "remount,ro", str(warehouse)], check=True)
    return run(shop(tmp), tmp, warehouse=warehouse)


def case_report_no_warehouse(tmp):
    return Built(["report", "--warehouse", str(tmp / "none")], tmp / "none")


def case_report_unknown_run(tmp):
    warehouse = existing_warehouse(tmp)
    return Built(["report", "nosuchrun", "--warehouse", str(warehouse)], warehouse)


def case_report_no_run_yet(tmp):
    warehouse = existing_warehouse(tmp)
    return Built(["report", "--warehouse", str(warehouse)], warehouse)


def case_report_corrupt(tmp):
    warehouse = tmp / "wh"
    warehouse.mkdir()
    (warehouse / "tooleval.duckdb").write_bytes(b"\x00" * 4096 + b"garbage" * 100)
    return Built(["report", "--warehouse", str(warehouse)], warehouse)


def truncated_warehouse(tmp: Path) -> Path:
    """A real warehouse file cut in half (a disk that filled, an interrupted copy)."""
    warehouse = tmp / "wh"
    warehouse.mkdir()
    connect(warehouse / "tooleval.duckdb").close()
    db = warehouse / "tooleval.duckdb"
    os.truncate(db, db.stat().st_size // 2)
    return warehouse


def case_warehouse_truncated(tmp):
    return run(shop(tmp), tmp, warehouse=truncated_warehouse(tmp))


def case_report_truncated(tmp):
    return Built(["report", "--warehouse", str(truncated_warehouse(tmp))], tmp / "wh")


def case_out_under_a_file(tmp):
    (tmp / "afile").write_text("x")
    surface = write_desk(tmp / "desk") / "surfaces" / "plain.yaml"
    return Built(["tasks", "catalogue", str(surface), "--out", str(tmp / "afile" / "c.json")], tmp / "afile")


def case_report_empty_file(tmp):
    warehouse = tmp / "wh"
    warehouse.mkdir()
    (warehouse / "tooleval.duckdb").write_bytes(b"")
    return Built(["report", "--warehouse", str(warehouse)], warehouse)


def case_report_half_created(tmp):
    """A kill during the very first table creation left only ``landed_rows`` (whole: a CREATE TABLE is atomic)."""
    from schemas.arrow import create_table_sql
    from schemas.selection.rows import SelectionRow

    warehouse = tmp / "wh"
    warehouse.mkdir()
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"))
    con.execute(create_table_sql(SelectionRow, "landed_rows"))
    con.close()
    return Built(["report", "--warehouse", str(warehouse)], warehouse)


def case_register_unknown(tmp):
    warehouse = existing_warehouse(tmp)
    return Built(["register", "nosuchrun", "--warehouse", str(warehouse)], warehouse)


def case_plan_zero_requests(tmp):
    return Built(["plan", "--accuracy", "0.9", "--requests", "0"])


def case_plan_zero_seeds(tmp):
    return Built(["plan", "--accuracy", "0.9", "--requests", "40", "--seeds", "0"])


def case_plan_accuracy(tmp):
    return Built(["plan", "--accuracy", "1.5", "--requests", "40"])


def case_validate_missing(tmp):
    return Built(["validate", str(tmp / "v7.jsonl")])


def case_validate_label(tmp):
    shop(tmp, requests=requests_with(1, expected="track_parcel"))
    return Built(["validate", str(tmp / "shop" / "v1.jsonl")])


def _metatool_inputs(tmp: Path) -> tuple[Path, Path]:
    plugins = tmp / "plugin_des.json"
    plugins.write_text(json.dumps({"WeatherBot": "Tells the weather.", "FlightFinder": "Finds flights."}))
    queries = tmp / "queries.csv"
    queries.write_text("Query,Tool\nwill it rain,WeatherBot\ncheap flights to Rome,FlightFinder\n")
    return plugins, queries


def case_bfcl_given_csv(tmp):
    (tmp / "BFCL_v4_multiple.csv").write_text("Query,Tool\nwill it rain,WeatherBot\n")
    return Built(["import", "bfcl", str(tmp / "BFCL_v4_multiple.csv"), "--out", str(tmp / "out")])


def case_bfcl_binary(tmp):
    (tmp / "BFCL_v4_multiple.json").write_bytes(bytes(range(256)) * 8)
    return Built(["import", "bfcl", str(tmp / "BFCL_v4_multiple.json"), "--out", str(tmp / "out")])


def case_bfcl_answers_csv(tmp):
    (tmp / "BFCL_v4_multiple.json").write_text(json.dumps({"id": "multiple_0", "question": [[{"role": "user",
                                               "content": "hi"}]], "function": [{"name": "f"}]}) + "\n")
    (tmp / "answers.csv").write_text("id,ground_truth\nmultiple_0,f\n")
    return Built(["import", "bfcl", str(tmp / "BFCL_v4_multiple.json"), str(tmp / "answers.csv"),
                  "--out", str(tmp / "out")])


def case_import_out_is_file(tmp):
    plugins, queries = _metatool_inputs(tmp)
    (tmp / "afile").write_text("x")
    return Built(["import", "metatool", str(plugins), str(queries), "--out", str(tmp / "afile")])


def case_metatool_binary_csv(tmp):
    plugins, _ = _metatool_inputs(tmp)
    (tmp / "queries.csv").write_bytes(os.urandom(2048).replace(b"\n", b"\xff"))
    return Built(["import", "metatool", str(plugins), str(tmp / "queries.csv"), "--out", str(tmp / "out")])


def case_metatool_header(tmp):
    plugins, queries = _metatool_inputs(tmp)
    queries.write_text("question;tool\nwill it rain;WeatherBot\n")
    return Built(["import", "metatool", str(plugins), str(queries), "--out", str(tmp / "out")])


def case_metatool_binary_plugins(tmp):
    _, queries = _metatool_inputs(tmp)
    (tmp / "plugin_des.json").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    return Built(["import", "metatool", str(tmp / "plugin_des.json"), str(queries), "--out", str(tmp / "out")])


def case_import_frozen(tmp):
    plugins, queries = _metatool_inputs(tmp)
    write_taskset(tmp / "out")
    return Built(["import", "metatool", str(plugins), str(queries), "--out", str(tmp / "out")])


# --------------------------------------------------------------------------------------------------
# findings fixed since, each kept here so it stays fixed
# --------------------------------------------------------------------------------------------------



def case_arm_name_too_long(tmp):
    experiment = shop(tmp, arms=[{"name": "a" * 300}, {"name": "b", "prompt": "terse"}], comparisons="ladder")
    (tmp / "shop" / "prompts" / "terse.md").write_text("Be terse.\n")
    return run(experiment, tmp)


def case_arm_name_dots(tmp):
    experiment = shop(tmp, arms=[{"name": ".."}, {"name": "b", "prompt": "terse"}], comparisons="ladder")
    (tmp / "shop" / "prompts" / "terse.md").write_text("Be terse.\n")
    return run(experiment, tmp)


def case_catalogue_parameters_no_schema(tmp):
    experiment = shop(tmp)
    path = tmp / "shop" / "catalogues" / "base.json"
    data = json.loads(path.read_text())
    data["tools"][1]["parameters"] = {"type": "objekt", "properties": 5}  # tools[1] is track_shipment
    path.write_text(json.dumps(data))
    return run(experiment, tmp)


def desk_with_bad_tool_schema(tmp: Path) -> Path:
    """The tiny help desk whose toolkit gains a tool ``weigh`` with an invalid JSON Schema type."""
    folder = write_desk(tmp)
    backend = folder / "backend" / "desk.py"
    bad_tool = ('    @tool\n    def weigh(self, grams: Annotated[int, Field(json_schema_extra={"type": "integr"})])'
                ' -> dict:\n        """Weigh a parcel."""\n        return {"grams": grams}\n\n')
    anchor = "    @tool\n    def get_ticket"
    backend.write_text(backend.read_text().replace(anchor, bad_tool + anchor, 1))
    return folder


def case_surface_tool_no_schema_validate(tmp):
    folder = desk_with_bad_tool_schema(tmp)
    return Built(["tasks", "validate", str(folder / "t1.jsonl")], folder)


def case_surface_tool_no_schema_run(tmp):
    folder = desk_with_bad_tool_schema(tmp)
    warehouse = tmp / "wh"
    return Built(["tasks", "run", str(folder / "experiments" / "four.yaml"), "--warehouse", str(warehouse)], warehouse)


def case_unknown_matcher(tmp):
    """A frozen task version with a task appended whose reply assertion uses a matcher that does not exist."""
    folder = write_desk(tmp)
    with (folder / "t1.jsonl").open("a") as handle:
        handle.write(json.dumps(desk_task("reply", "Close T-1001.", {"reply": {"startswith": "Your ticket"}})) + "\n")
    return Built(["tasks", "validate", str(folder / "t1.jsonl")], folder)


def case_empty_tasks_file(tmp):
    folder = write_desk(tmp)
    (folder / "t1.jsonl").write_text("\n\n")
    return Built(["tasks", "validate", str(folder / "t1.jsonl")], folder)


def case_train_one_label(tmp):
    """Thirty requests all labelled refund_order; the model file must not be written."""
    requests = [{"id": f"r{i}", "messages": [{"role": "user", "content": f"refund my order number {i} please"}],
                 "expected": "refund_order", "slice": "existing"} for i in range(30)]
    folder = write_taskset(tmp / "one", requests=requests)
    return Built(["train", str(folder / "v1.jsonl"), "--out", str(tmp / "m.json")], tmp / "m.json")


def empty_warehouse_flag(args: list[str]) -> Built:
    """``--warehouse ''`` used to mean "not given": watch the checkout's default warehouse file, where it landed."""
    return Built([*args, "--warehouse", ""], DEFAULT_DIR / "tooleval.duckdb")


def case_run_empty_warehouse(tmp):
    return empty_warehouse_flag(["run", str(shop(tmp))])


def case_report_empty_warehouse(tmp):
    return empty_warehouse_flag(["report"])


def case_sql_empty_warehouse(tmp):
    return empty_warehouse_flag(["sql", "select 1"])


def known_run_warehouse(folder: Path) -> Path:
    """A warehouse holding one registered selection run (tests.factories.rows.RUN), made without Prefect."""
    folder.mkdir(parents=True)
    KnownRun(folder / "tooleval.duckdb").add(tool_rows("refund", 4, [1, 1, 1, 0]) + tool_rows("track", 2, [1, 0])
                                            ).finish().close()
    return folder


def sql(tmp: Path, statement: str) -> Built:
    """``tooleval sql`` on a warehouse holding a run; ``{db}`` in the statement is its DuckDB file, ``{elsewhere}``
    a folder beside it. The case watches the folder holding both, so a file written outside the warehouse shows."""
    root = tmp / "sql"
    warehouse = known_run_warehouse(root / "wh")
    (root / "elsewhere").mkdir()
    query = statement.format(db=warehouse / "tooleval.duckdb", elsewhere=root / "elsewhere")
    return Built(["sql", query, "--warehouse", str(warehouse)], root)


def case_sql_attach_read_write(tmp):
    return sql(tmp, "attach '{db}' as w (read_only false); delete from w.runs")


def case_sql_copy_out(tmp):
    return sql(tmp, "copy (select 1) to '{elsewhere}/out.csv'")


def case_sql_export_database(tmp):
    return sql(tmp, "export database '{elsewhere}/export'")


def case_sql_install_extension(tmp):
    return sql(tmp, "install httpfs")


def case_sql_read_any_file(tmp):
    return sql(tmp, "select * from read_text('/etc/hostname')")


def task_run_warehouse(tmp: Path) -> Path:
    return warehouse_with_a_task_run(tmp)


def case_compare_task_run(tmp):
    warehouse = task_run_warehouse(tmp)
    return Built(["compare", TASK_RUN, RUN, "--warehouse", str(warehouse)], warehouse)


def case_tasks_report_selection_run(tmp):
    warehouse = task_run_warehouse(tmp)
    return Built(["tasks", "report", RUN, "--warehouse", str(warehouse)], warehouse)


BAD_INPUTS: tuple[BadInput, ...] = (
    BadInput("experiment file missing", case_missing_experiment, 2, ("nowhere.yaml",)),
    BadInput("experiment YAML syntax", case_yaml_syntax, 2, ("exp.yaml:line",)),
    BadInput("duplicate YAML key", case_duplicate_yaml_key, 2, ("exp.yaml:line", "batch_size")),
    BadInput("unknown experiment key", case_unknown_key, 2, ("exp.yaml", "sedes")),
    BadInput("no seeds", case_no_seeds, 2, ("exp.yaml", "[seeds-given]")),
    BadInput("seed out of range", case_huge_seed, 2, ("exp.yaml", "[seed-range]")),
    BadInput("two changes in one comparison", case_one_change, 2, ("exp.yaml", "[one-change]", "comparison a -> b")),
    BadInput("unknown catalogue", case_unknown_catalogue, 2, ("exp.yaml", "arm a", "nosuch")),
    BadInput("unknown prompt", case_unknown_prompt, 2, ("exp.yaml", "arm a", "nosuch")),
    BadInput("unknown selector", case_unknown_selector, 2, ("exp.yaml:arms.0.selector: [schema]", "'lexical'")),
    BadInput("moving model alias", case_moving_alias, 2, ("exp.yaml", "arm a", "gpt-4.1-mini")),
    BadInput("arm name twice", case_duplicate_arm, 2, ("exp.yaml", "a")),
    BadInput("version missing", case_missing_version, 2, ("v9",)),
    BadInput("label not offered", case_label_not_offered, 2, ("v1.jsonl:line 2 (id r2): [label-offered]", "track_parcel")),
    BadInput("id twice", case_duplicate_id, 2, ("v1.jsonl", "r1")),
    BadInput("empty request text", case_empty_text, 2, ("v1.jsonl:line 4 (id r4): [request-non-empty]",)),
    BadInput("slice not declared", case_undeclared_slice, 2, ("v1.jsonl:line 1 (id r1): [slice-declared]", "mystery")),
    BadInput("one text, two labels", case_two_labels_one_text, 2, ("v1.jsonl", "[one-label-per-text]", "r9")),
    BadInput("version edited after freezing", case_edited_after_freeze, 2, ("v1.manifest.json: [manifest-hash]", "edited")),
    BadInput("CRLF checkout of a frozen version", case_crlf_checkout, 2, ("v1.manifest.json: [manifest-hash]", "CRLF")),
    BadInput("byte-order mark in a version", case_bom, 2, ("v1.jsonl:line 1: [utf8-no-bom]",)),
    BadInput("a version line that is not JSON", case_bad_json_line, 2, ("v1.jsonl:line 3",)),
    BadInput("request without a label", case_missing_version_file_field, 2, ("v1.jsonl", "line 1", "expected")),
    BadInput("weights do not sum to 1", case_weights_sum, 2, ("w1.json: [weights-sum-to-one]",)),
    BadInput("negative weight", case_weights_negative, 2, ("w1.json", "[weights-non-negative]", "track_shipment")),
    BadInput("weight for an unknown tool", case_weights_unknown_tool, 2, ("w1.json", "[weights-in-catalogue]", "fly_drone")),
    BadInput("weights window missing", case_weights_missing, 2, ("w9",)),
    BadInput("catalogue not JSON", case_catalogue_broken_json, 2, ("base.json",)),
    BadInput("catalogue tool twice", case_catalogue_twice, 2, ("base.json", "refund_order")),
    BadInput("criteria file missing", case_criteria_missing, 2, ("criteria.yaml",)),
    BadInput("unknown gate kind", case_criteria_unknown_kind, 2, ("criteria.yaml", "vibes_check")),
    BadInput("gate bound out of range", case_criteria_out_of_range, 2, ("criteria.yaml", "max_rate")),
    BadInput("provisional labels without --allow-provisional", case_provisional, 2, ("provisional",)),
    BadInput("--warehouse is a file", case_warehouse_is_file, 2, ("afile: [warehouse-writable]", "is a file")),
    BadInput("--warehouse under a file", case_warehouse_under_file, 2, ("[warehouse-writable]", "cannot be made")),
    BadInput("corrupt tooleval.duckdb", case_warehouse_corrupt, 2, ("tooleval.duckdb: [warehouse-readable]",)),
    BadInput("PREFECT_HOME not writable", case_prefect_home_unwritable, 2, ("[prefect-home-writable]",)),
    BadInput("--max-calls -1", case_max_calls_negative, 2, ("--max-calls", "must be 0 or more")),
    BadInput("--max-spend-usd not a number", case_spend_not_a_number, 2, ("--max-spend-usd", "not a number")),
    BadInput("--task-runner unknown", case_task_runner_unknown, 2, ("--task-runner", "spark")),
    BadInput("read-only warehouse", case_read_only_warehouse, 2, ("[warehouse-writable]", "Read-only file system"),
             needs_root_mount=True),
    BadInput("report without a warehouse", case_report_no_warehouse, 2, ("[warehouse-exists]",)),
    BadInput("report of an unknown run", case_report_unknown_run, 2, ("run nosuchrun: [run-registered]",)),
    BadInput("report before any run", case_report_no_run_yet, 2, ("[run-registered]", "no run")),
    BadInput("report on a corrupt file", case_report_corrupt, 2, ("tooleval.duckdb: [warehouse-readable]",)),
    BadInput("report on an empty file", case_report_empty_file, 2, ("tooleval.duckdb", "[warehouse-readable]")),
    BadInput("truncated tooleval.duckdb", case_warehouse_truncated, 2, ("tooleval.duckdb: [warehouse-readable]",
                                                                       "damaged")),
    BadInput("report on a truncated file", case_report_truncated, 2, ("[warehouse-readable]", "damaged")),
    BadInput("--out under a file", case_out_under_a_file, 2, ("c.json:--out: [out-writable]", "is a file")),
    BadInput("report on a half-created file", case_report_half_created, 2, ("tooleval.duckdb: [run-registered]",
                                                                        "no run is registered yet")),
    BadInput("register an unknown run", case_register_unknown, 2, ("run nosuchrun: [run-landed]",)),
    BadInput("plan --requests 0", case_plan_zero_requests, 2, ("--requests", "must be 1 or more")),
    BadInput("plan --seeds 0", case_plan_zero_seeds, 2, ("--seeds", "must be 1 or more")),
    BadInput("plan --accuracy 1.5", case_plan_accuracy, 2, ("--accuracy",)),
    BadInput("validate a missing file", case_validate_missing, 2, ("v7.jsonl",)),
    BadInput("validate a bad label", case_validate_label, 2, ("v1.jsonl:line 2 (id r2): [label-offered]",)),
    BadInput("import bfcl given a CSV", case_bfcl_given_csv, 2, ("BFCL_v4_multiple.csv:line 1: [json-lines]", "CSV")),
    BadInput("import bfcl given a binary file", case_bfcl_binary, 2, ("BFCL_v4_multiple.json:line 1: [json-lines]", "UTF-8")),
    BadInput("import bfcl answers as CSV", case_bfcl_answers_csv, 2, ("answers.csv:line 1: [json-lines]",)),
    BadInput("import --out a file", case_import_out_is_file, 2, ("afile: [out-folder]", "is a file")),
    BadInput("import metatool binary CSV", case_metatool_binary_csv, 2, ("queries.csv:line", "[csv-utf8]")),
    BadInput("import metatool wrong header", case_metatool_header, 2, ("queries.csv:line 1: [csv-header]",)),
    BadInput("import metatool binary plugin_des", case_metatool_binary_plugins, 2, ("plugin_des.json: [json]", "UTF-8")),
    BadInput("import into a frozen version", case_import_frozen, 2, ("v1.manifest.json: [version-immutable]",)),
    # a review's findings, fixed
    BadInput("arm name of 300 characters", case_arm_name_too_long, 2,
             ("exp.yaml:arm aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...: [arm-name-length]", "300 bytes; at most 100")),
    BadInput("arm name '..'", case_arm_name_dots, 2, ("exp.yaml:arm ..: [arm-name-path]",)),
    BadInput("catalogue tool parameters not a JSON Schema", case_catalogue_parameters_no_schema, 2,
             ("exp.yaml:arm a: [tool-parameters-schema]", "base.json", "tool 'track_shipment'",
              "not a valid JSON Schema")),
    BadInput("surface tool parameters not a JSON Schema (tasks validate)", case_surface_tool_no_schema_validate, 2,
             ("plain.yaml:tool weigh: [tool-parameters-schema]", "tool 'weigh'", "not a valid JSON Schema")),
    BadInput("surface tool parameters not a JSON Schema (tasks run)", case_surface_tool_no_schema_run, 2,
             ("four.yaml:arm A: [tool-parameters-schema]", "plain.yaml", "tool 'weigh'")),
    BadInput("task with an unknown matcher", case_unknown_matcher, 2,
             ("t1.jsonl:line 5 (id reply): [task-schema]", "unknown matcher 'startswith'")),
    BadInput("empty tasks file", case_empty_tasks_file, 2, ("t1.jsonl: [not-empty]", "holds no task")),
    BadInput("train on a one-label set", case_train_one_label, 2,
             ("v1.jsonl: [train-classes]", "1 label(s) (refund_order 30)")),
    BadInput("run --warehouse ''", case_run_empty_warehouse, 2, ("argument --warehouse", "an empty path")),
    BadInput("report --warehouse ''", case_report_empty_warehouse, 2, ("argument --warehouse", "an empty path")),
    BadInput("sql --warehouse ''", case_sql_empty_warehouse, 2, ("argument --warehouse", "an empty path")),
    BadInput("sql attach read-write", case_sql_attach_read_write, 2,
             ("tooleval sql is read-only", "tooleval.duckdb' as w (read_only false)", "ATTACH: it would attach")),
    BadInput("sql COPY outside the warehouse", case_sql_copy_out, 2,
             ("tooleval sql is read-only", "elsewhere/out.csv'`", "COPY: it would write (or read) a file outside")),
    BadInput("sql EXPORT DATABASE", case_sql_export_database, 2,
             ("tooleval sql is read-only", "elsewhere/export'`", "EXPORT: it would write files outside")),
    BadInput("sql INSTALL an extension", case_sql_install_extension, 2,
             ("tooleval sql is read-only", "`install httpfs`", "it would install or load an extension")),
    BadInput("sql reads a file outside the warehouse", case_sql_read_any_file, 2,
             ("tooleval sql is read-only", "`select * from read_text('/etc/hostname')`",
              'Cannot access file "/etc/hostname"')),
    BadInput("compare given a task run", case_compare_task_run, 2,
             (f"tooleval.duckdb:run {TASK_RUN}: [run-instrument]", f"run {TASK_RUN} is a task run",
              f"`tooleval tasks report {TASK_RUN}`")),
    BadInput("tasks report given a selection run", case_tasks_report_selection_run, 2,
             (f"tooleval.duckdb:run {RUN}: [run-instrument]", f"run {RUN} is a selection run",
              f"`tooleval report {RUN}`")),
)


# --------------------------------------------------------------------------------------------------
# checking one case
# --------------------------------------------------------------------------------------------------


def snapshot(warehouse: Path | None) -> dict[str, str] | None:
    """Every file under the warehouse with a hash of its bytes (None when it does not exist)."""
    if warehouse is None or not warehouse.exists():
        return None
    if warehouse.is_file():
        return {"": hashlib.sha256(warehouse.read_bytes()).hexdigest()}
    return {str(p.relative_to(warehouse)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(warehouse.rglob("*")) if p.is_file()}


@dataclass
class Checked:
    name: str
    exit_code: int
    output: str
    problems: list[str]

    @property
    def held(self) -> bool:
        return not self.problems


def check(case: BadInput, built: Built, before: dict | None, exit_code: int, output: str) -> Checked:
    problems = []
    if exit_code != case.exit_code:
        problems.append(f"exit {exit_code}, expected {case.exit_code}")
    problems += [f"message lacks {fragment!r}" for fragment in case.fragments if fragment not in output]
    if "Traceback" in output:
        problems.append("a traceback was printed")
    after = snapshot(built.warehouse)
    if after != before:
        problems.append(f"the warehouse changed: {sorted(set(after or {}) ^ set(before or {})) or 'file contents'}")
    return Checked(case.name, exit_code, output, problems)


def root_can_mount() -> bool:
    import subprocess
    import tempfile

    if os.geteuid() != 0:
        return False
    with tempfile.TemporaryDirectory() as probe:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", probe], capture_output=True)
        if done.returncode != 0:
            return False
        subprocess.run(["umount", probe], capture_output=True)
    return True


def unmount_under(tmp: Path) -> None:
    """Unmount whatever a case mounted under ``tmp`` (the read-only warehouse)."""
    import subprocess

    mounts = Path("/proc/mounts").read_text().splitlines() if Path("/proc/mounts").is_file() else []
    for line in mounts:
        target = line.split()[1]
        if target.startswith(str(tmp)):
            subprocess.run(["umount", target], capture_output=True)
