"""The attributes every span of a trace carries to link it to its warehouse row, and the decision
attributes OpenInference has no name for yet (its DECISION convention names the model, not the options).

Filter in Phoenix with the attribute paths: ``span_kind == 'DECISION' and tooleval.decision.confidence < 0.7``,
``metadata['arm'] == 'gated'``, ``metadata['request_id'] == 'sup-e-004'``, ``metadata['outcome'] == 'wrong_tool'``
(the row's outcome, on the trace's top span).

Built for speed: what is the same for a whole work unit is computed once per unit, and per-row values are
scalars or one JSON string each (OpenTelemetry checks every element of a list attribute).
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from openinference.instrumentation import get_metadata_attributes

PREFIX = "tooleval"

UNIT_FIELDS = ("run_id", "experiment", "arm", "seed", "taskset_version")
"""Row fields that are the same for every row of a work unit."""


def unit_metadata(row: Mapping[str, Any]) -> dict[str, Any]:
    """The unit's fields of the link (computed once per unit)."""
    return {name: row[name] for name in UNIT_FIELDS if row.get(name) is not None}


def row_link_attributes(row: Mapping[str, Any], unit_field: str, label_field: str, unit_meta: Mapping[str, Any],
                        extra_metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The row's link as ``metadata``: one JSON attribute with the unit's fields, the row's unit id, slice
    and label, plus ``extra_metadata``. Phoenix shows it as a column and filters on ``metadata['arm']``."""
    metadata = {**unit_meta, unit_field: row[unit_field], "slice": row["slice"], "label": row[label_field]}
    if extra_metadata:
        metadata.update({k: v for k, v in extra_metadata.items() if v is not None})
    return get_metadata_attributes(metadata=metadata)


def options_json(options: Sequence[str]) -> str:
    """The offered options in the seed's order, then 'none', as JSON (once per unit)."""
    return json.dumps(list(options))


def decision_input(request_text: str, options_text: str) -> str:
    """The DECISION span's input: the request and the options it chose among (JSON)."""
    return f'{{"request": {json.dumps(request_text)}, "options": {options_text}}}'


def decision_attributes(*, pick: str | None, confidence: float | None, probabilities: Mapping[str, float] | None,
                        threshold: float | None, fallback: bool | None, options: Sequence[str],
                        quoted_options: Sequence[str]) -> dict[str, Any]:
    """Every option's probability (a JSON object in the seed's order, then 'none'), the confidence, the pick,
    the threshold and whether the gate fell back. Null values are left out (OpenTelemetry has no null).
    ``quoted_options``: the options as JSON strings (made once per unit)."""
    values: dict[str, Any] = {"pick": pick, "confidence": confidence, "threshold": threshold, "fallback": fallback}
    if probabilities:
        values["probabilities"] = "{" + ", ".join(f"{quoted}: {float(probabilities.get(o, 0.0))!r}"
                                                  for o, quoted in zip(options, quoted_options)) + "}"
    return {f"{PREFIX}.decision.{name}": value for name, value in values.items() if value is not None}
