"""The attributes every span of a trace carries to link it to its warehouse row, and the decision
attributes OpenInference has no name for yet (the DECISION convention names the model, not the options).

Filter in Phoenix with the attribute paths: ``span_kind == 'DECISION' and tooleval.decision.confidence < 0.7``,
``metadata['arm'] == 'gated'``, ``tooleval.request_id == 'sup-e-004'``.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from openinference.instrumentation import get_metadata_attributes, get_tag_attributes

PREFIX = "tooleval"

LINK_FIELDS = ("run_id", "experiment", "arm", "seed", "taskset_version", "slice")
"""Row fields every span repeats (with the unit id and the label) so any span finds its row."""


def link_attributes(row: Mapping[str, Any], unit_field: str, label_field: str) -> dict[str, Any]:
    """``tooleval.<field>`` for the row's keys, plus ``metadata`` (JSON) and ``tag.tags`` for the UI."""
    link = {name: row[name] for name in LINK_FIELDS if row.get(name) is not None}
    link[unit_field] = row[unit_field]
    link["label"] = row[label_field]
    attributes = {f"{PREFIX}.{name}": value for name, value in link.items()}
    attributes.update(get_metadata_attributes(metadata=link))
    attributes.update(get_tag_attributes(tags=[str(row["arm"]), str(row["slice"])]))
    return attributes


def decision_attributes(*, pick: str | None, confidence: float | None, probabilities: Mapping[str, float] | None,
                        threshold: float | None, fallback: bool | None, options: list[str]) -> dict[str, Any]:
    """Every option's probability (in the seed's order, then 'none'), the confidence, the pick, the
    threshold and whether the gate fell back. Null values are left out (OpenTelemetry has no null)."""
    values: dict[str, Any] = {
        "pick": pick, "confidence": confidence, "threshold": threshold, "fallback": fallback,
        "options": options or None,
        "probabilities": [float(probabilities.get(o, 0.0)) for o in options] if probabilities and options else None,
        "probabilities_json": json.dumps(dict(probabilities), sort_keys=True) if probabilities else None,
    }
    return {f"{PREFIX}.decision.{name}": value for name, value in values.items() if value is not None}
