"""Label conflicts among imported requests that offer their own tools: the same request text offered the same
tools carries two different labels. The run's label check refuses such a set (``one-label-per-text``,
tasks/taskset/label_checks.py), so an importer drops every request of a conflicting group and lists them,
as MetaTool's importer does for its shared catalogue. The key is the check's: the last user turn trimmed,
lower case, each run of white space one space, and the names of the tools offered with it."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Sequence

from schemas.taskset import LabelledRequest

REASON = "label_conflict"

SHOWN_TEXT = 80
"""Characters of a conflicting text shown in its line."""

_SPACES = re.compile(r"\s+")


def conflict_key(request: LabelledRequest) -> tuple[str, tuple[str, ...]]:
    """(normalised text, sorted names of the offered tools): requests sharing it must share a label."""
    text = _SPACES.sub(" ", request.text.strip().lower())
    return text, tuple(sorted(tool.name for tool in request.tools or ()))


def drop_label_conflicts(requests: Sequence[LabelledRequest]) -> tuple[list[LabelledRequest], list[str]]:
    """The requests outside any conflicting group, and one line per group naming every side: each label with
    the ids (and slices) that carry it."""
    groups: dict[tuple[str, tuple[str, ...]], list[LabelledRequest]] = defaultdict(list)
    for request in requests:
        groups[conflict_key(request)].append(request)
    dropped: set[str] = set()
    details: list[str] = []
    for group in groups.values():
        labels = dict.fromkeys(request.expected for request in group)
        if len(labels) < 2:
            continue
        dropped.update(request.id for request in group)
        sides = "; ".join(
            f"{label} ({', '.join(f'{r.id} [slice {r.slice}]' for r in group if r.expected == label)})"
            for label in labels)
        text = " ".join(group[0].text.split())
        shown = text if len(text) <= SHOWN_TEXT else text[:SHOWN_TEXT - 3] + "..."
        details.append(f"{REASON}: {shown!r} with the same tools -> {sides}")
    return [request for request in requests if request.id not in dropped], details
