"""Provisional labels (production hints not yet decided by a person): refused unless a run allows them,
and named in the report of a run that did."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from tasks.files.input_errors import InputError, Problem

if TYPE_CHECKING:  # the loader (pydantic models, jsonschema): a report reading provisional_notice needs none of it
    from tasks.taskset.load_taskset import TaskSetVersion

RULE = "labels-adjudicated"


def provisional_counts(versions: Mapping[str, TaskSetVersion]) -> dict[str, int]:
    """Provisional requests per version of the run (versions without any are left out)."""
    counts = {version: int((loaded.table.get_column("label_status") == "provisional").sum())
              for version, loaded in versions.items()}
    return {version: n for version, n in sorted(counts.items()) if n}


def refuse_provisional(versions: Mapping[str, TaskSetVersion], allow: bool) -> dict[str, int]:
    """Raise InputError when a version has provisional labels and the run does not allow them."""
    counts = provisional_counts(versions)
    if counts and not allow:
        import polars as pl  # only to name a refused version's first provisional request

        problems = []
        for version, n in counts.items():
            loaded = versions[version]
            first = loaded.table.filter(pl.col("label_status") == "provisional").item(0, "id")
            problems.append(Problem(
                str(loaded.requests_path), f"{n} of {len(loaded.requests)} requests (first: id {first})", RULE,
                f"{version} has provisional labels (production hints, not decided by a person). Import the "
                f"adjudicated labelling queue (`tooleval queue import`) and run the adjudicated version, or run with "
                "--allow-provisional (flow parameter allow_provisional) and read the figures as agreement with "
                "production"))
        raise InputError(problems)
    return counts


def provisional_notice(con: Any, run_id: str) -> list[str]:
    """Report lines for a run that measured provisional labels (empty when it measured none)."""
    import duckdb  # loaded already by whoever opened ``con``

    try:
        rows = con.execute("SELECT taskset_version, label_status, n_requests FROM label_status_counts WHERE run_id = ?",
                           [run_id]).fetchall()
    except duckdb.CatalogException:  # a warehouse file created before the view existed, opened read-only
        return []
    totals: dict[str, int] = {}
    provisional: dict[str, int] = {}
    for version, status, n in rows:
        totals[version] = totals.get(version, 0) + n
        if status == "provisional":
            provisional[version] = n
    return [
        f"PROVISIONAL LABELS: {version} has {n} of {totals[version]} requests labelled by production's first tool, "
        "not decided by a person; this run was explicitly allowed to use them (--allow-provisional). Its figures "
        f"on {version} measure agreement with production, not correctness."
        for version, n in sorted(provisional.items())
    ]
