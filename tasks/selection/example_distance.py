"""How far each trained arm's requests are from the labelled examples its model learned from (the
``far_from_examples`` view): a table per run with such arms, and a headline sentence when an arm is out of
its domain.

A request is far when the cosine of its nearest labelled example is below the model file's far cut-off (a
low quantile, 5% by default, of the training requests' own held-out nearest-example cosines), so about one
in twenty requests of the training set itself is far. When many more are, the model's kNN features are
near zero on most requests and it decides on cosine and BM25 alone: its figures are a cosine/BM25 router's.
Runs without such arms get neither table nor line (their report is unchanged).
"""

from __future__ import annotations

from typing import Any, Callable

from tasks.report.format import pct
from tasks.report_types import ReportTable

FAR_SHARE_HIGH = 0.25
"""An arm with at least this share of far requests is called out of its domain (five times the share of the
training set's own requests below the default 5% cut-off)."""


def _far_text(r: dict[str, Any]) -> str:
    if r["far_share"] is None:
        return "— (the model file records no cut-off: retrain it)"
    return f"{pct(r['far_share'])} ({r['n_far']:,} of {r['n_requests']:,})"


def far_from_examples_table(records: list[dict[str, Any]], label: Callable[[str], str]) -> ReportTable | None:
    """The table from the run's ``far_from_examples`` rows; None when no arm recorded a nearest example."""
    if not records:
        return None
    return ReportTable(
        title="How far the requests are from the trained model's examples",
        columns=["rung", "far from every example", "cut-off", "nearest example: q25 / median / q75"],
        rows=[[label(r["arm"]), _far_text(r), "—" if r["far_cutoff"] is None else f"{r['far_cutoff']:.3f}",
               f"{r['nearest_q25']:.3f} / {r['nearest_median']:.3f} / {r['nearest_q75']:.3f}"] for r in records],
        key="far_from_examples", summary=True,
        note="far: the cosine of the request's nearest labelled example (any label) is below the model file's "
             "cut-off, a low quantile (5% by default) of its training requests' own held-out nearest-example cosines (so about "
             f"5% of in-domain requests are far); at {pct(FAR_SHARE_HIGH)} or more the arm is out of its domain "
             "and decides on cosine and BM25 alone.",
    )


def far_from_examples_notices(records: list[dict[str, Any]], label: Callable[[str], str]) -> list[str]:
    """A headline sentence per arm whose share of far requests is high."""
    return [f"{label(r['arm'])}: {pct(r['far_share'])} of requests are far from every example the model learned "
            "from: it is out of its domain; read its figures as a cosine/BM25 router's"
            for r in records if r["far_share"] is not None and r["far_share"] >= FAR_SHARE_HIGH]
