"""Surface transforms: what the model sees of a set of tools, changed in one respect (namespace prefixes,
renames, rewritten descriptions, a subset), with the map back to the tools underneath."""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Sequence

from schemas.catalogue import PARAMETERS_PASSED, ToolSpec
from schemas.surface.surface_file import SurfaceTransform


def transform_problems(names: Sequence[str], transform: SurfaceTransform) -> list[tuple[str, str]]:
    """(rule, message) for every way the transform does not fit the tools it is applied to."""
    known = set(names)
    problems: list[tuple[str, str]] = []
    mentioned = [("rename", n) for n in transform.rename] + [("describe", n) for n in transform.describe]
    mentioned += [("include", n) for n in transform.include or []]
    mentioned += [("prefix", n) for tools in transform.prefix.values() for n in tools]
    for where, name in mentioned:
        if name not in known:
            problems.append(("transform-tools", f"{where} names '{name}', which is not a tool here "
                                                f"({', '.join(sorted(known))})"))
    prefixed = Counter(n for tools in transform.prefix.values() for n in tools)
    for name, count in prefixed.items():
        if count > 1:
            problems.append(("transform-prefix", f"'{name}' is given {count} prefixes"))
    if not problems:
        offered = [offered_name(n, transform) for n in names if transform.include is None or n in transform.include]
        for name, count in Counter(offered).items():
            if count > 1:
                problems.append(("tool-names-unique", f"two tools would be offered as '{name}'"))
        if not offered:
            problems.append(("transform-tools", "the transform offers no tool"))
    return problems


def offered_name(name: str, transform: SurfaceTransform) -> str:
    renamed = transform.rename.get(name, name)
    for prefix, tools in transform.prefix.items():
        if name in tools:
            return f"{prefix}{renamed}"
    return renamed


def transform_tools(tools: Sequence[ToolSpec], transform: SurfaceTransform) -> list[tuple[ToolSpec, str]]:
    """(tool as offered, the name of the tool underneath) for each tool the transform offers, in order.
    Call ``transform_problems`` first: here a name the tools lack is simply not applied."""
    out: list[tuple[ToolSpec, str]] = []
    for spec in tools:
        if transform.include is not None and spec.name not in transform.include:
            continue
        offered = ToolSpec.model_validate(  # the parameters are the checked tool's own: not checked again
            {"name": offered_name(spec.name, transform),
             "description": transform.describe.get(spec.name, spec.description), "parameters": spec.parameters},
            context={PARAMETERS_PASSED: True})
        out.append((offered, spec.name))
    return out


def label_as_offered(label: str | None, tools: Iterable[Any]) -> str | None:
    """A label naming a backend tool (a task's declared intent: ``read_text_file``) spelled as the surface
    offers that tool (``fs.read_text_file`` under a prefix); any other label as written. ``tools`` are the
    surface's offered tools (``OfferedTool``: the offered ``spec`` and the ``backend`` tool it runs)."""
    for tool in tools:
        if tool.backend.name == label:
            return tool.spec.name
    return label
