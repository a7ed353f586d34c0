"""Can a state assertion's dotted path ever name a value? Checked before any agent turn (``assert-state-path``),
part by part, the way ``score_task.value_at`` walks the end state: first by the toolkit's state model's types,
then, where they say nothing (``Any``, an untyped collection, extra keys allowed), by the fixtures the task
starts from. A record the task may create passes; a value the state has nowhere is refused, naming the part
(docs/surface/writing-tasks.md gives the rules with examples)."""

from __future__ import annotations

import datetime
import decimal
import difflib
import enum
import functools
import types
import typing
import uuid
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from pydantic import BaseModel

_NOTHING = object()
"""The fixtures hold nothing at this point of the path (a record the task creates, an empty collection)."""


def _strip(annotation: Any) -> Any:
    """The annotation without ``Annotated``, ``ClassVar`` and ``| None``; a union of several types is kept."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated or origin is typing.ClassVar:
            annotation = typing.get_args(annotation)[0]
            continue
        if origin in (typing.Union, types.UnionType):
            rest = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(rest) == 1:
                annotation = rest[0]
                continue
        return annotation


SCALARS = (str, int, float, bool, bytes, datetime.date, datetime.time, datetime.timedelta, decimal.Decimal,
           uuid.UUID, enum.Enum)
"""Types whose JSON is one value: nothing lies below them."""


def _kind(annotation: Any) -> tuple[str, Any]:
    """('model', cls) / ('mapping', value type) / ('list', item type) / ('scalar', name) / ('unknown', None)."""
    try:
        return _kind_of_type(annotation)  # a task set's paths walk the same few types again and again
    except TypeError:  # an annotation that cannot be hashed (Annotated with unhashable metadata)
        return _kind_of(annotation)


def _kind_of(annotation: Any) -> tuple[str, Any]:
    annotation = _strip(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return "scalar", "Literal"
    if origin is None and isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return "model", annotation
        if issubclass(annotation, Mapping):
            return "mapping", Any
        if issubclass(annotation, (list, tuple, set, frozenset)):
            return "list", Any
        if issubclass(annotation, SCALARS):
            return "scalar", annotation.__name__
        return "unknown", None
    if isinstance(origin, type) and issubclass(origin, Mapping):
        return "mapping", args[1] if len(args) == 2 else Any
    if origin is tuple:
        return "list", args[0] if len(args) == 2 and args[1] is Ellipsis else Any
    if isinstance(origin, type) and issubclass(origin, (Sequence, AbstractSet)) and not issubclass(origin, (str, bytes)):
        return "list", args[0] if args else Any
    return "unknown", None


_kind_of_type = functools.lru_cache(maxsize=None)(_kind_of)


@functools.lru_cache(maxsize=None)
def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """The keys a model's JSON dump has (``model_dump``: field names, computed fields too) -> their types (the
    same dict for every call: read it, never change it)."""
    found = {name: info.annotation for name, info in model.model_fields.items()}
    found.update({name: info.return_type for name, info in model.model_computed_fields.items()})
    return found


def _nearest(part: str, options: Sequence[str], label: str = "its fields") -> str:
    close = difflib.get_close_matches(part, list(options), n=1, cutoff=0.6)
    listed = ", ".join(sorted(options)[:12]) + (", ..." if len(options) > 12 else "")
    return (f"did you mean '{close[0]}'? " if close else "") + f"{label}: {listed}"


def _record_in(records: Any, part: str) -> Any:
    """The element of a list ``value_at`` would step to for ``part`` (``_NOTHING`` when there is none)."""
    if not isinstance(records, list):
        return _NOTHING
    if part.lstrip("-").isdigit() and -len(records) <= int(part) < len(records):
        return records[int(part)]
    for key in ("id", "name"):
        found = [r for r in records if isinstance(r, dict) and str(r.get(key)) == part]
        if found:
            return found[0]
    return _NOTHING


TYPES_FIRST = object()
"""``start`` for a walk of the types alone: ``state_path_problem`` raises ``NeedsStart`` at the first part the
types cannot answer, so the state a task starts from is dumped only for the paths that read it."""


class NeedsStart(Exception):
    """A walk given ``TYPES_FIRST`` reached a part only the fixtures can answer: walk again with the state."""


def state_path_problem(model: type[BaseModel], start: Any, parts: Sequence[str]) -> str | None:
    """Why the dotted path ``parts`` can name no value of a state of ``model`` (None: it can, or it cannot be
    told before the run). ``start``: the state the task starts from as JSON (``model_dump(mode="json")`` of the
    backend's fresh state), or None when the fixtures do not make one (``fixtures-schema`` says why)."""
    annotation: Any = model
    value: Any = start if start is not None else _NOTHING
    siblings: list[dict] | None = None
    """When the type says nothing: the fixture records of the collection ``value`` is (or would be) one of."""
    for index, part in enumerate(parts):
        here = f"'{'.'.join(parts[:index])}'"
        at = f"at '{'.'.join(parts[:index + 1])}': " if index < len(parts) - 1 else ""
        kind, inner = _kind(annotation) if annotation is not None else ("unknown", None)
        if kind == "model":
            fields = _fields(inner)
            if part in fields:
                annotation = fields[part]
            elif inner.model_config.get("extra") == "allow":
                annotation = None
            else:
                return f"{at}{inner.__name__} has no field '{part}' ({_nearest(part, list(fields))})"
            value, siblings = value.get(part, _NOTHING) if isinstance(value, dict) else _NOTHING, None
        elif kind == "mapping":  # any key: the task may create the record
            records = value if isinstance(value, dict) else {}
            siblings = _records(list(records.values()))
            value, annotation = records.get(part, _NOTHING), _known(inner)
        elif kind == "list":  # any index: the task may append the element
            item_kind, item = _kind(inner)
            if not _is_index(part) and item_kind == "model" and not {"id", "name"} & set(_fields(item)):
                return (f"{at}{here} is a list of {item.__name__}, which has no 'id' or 'name' field: a part after "
                        "a list is an index (0, 1, -1) or the id (else the name) of a record in it")
            if not _is_index(part) and item_kind == "scalar":
                return f"{at}{here} is a list of single values ({item}): a part after it is an index (0, 1, -1)"
            siblings = _records(value) if isinstance(value, list) else None
            value, annotation = _record_in(value, part), _known(inner)
        elif kind == "scalar":
            return (f"{at}{here} is a single value ({inner}): nothing lies below it (the path ends at {here})")
        else:  # the type says nothing: the fixtures say what they can
            if start is TYPES_FIRST:
                raise NeedsStart
            collection = f"'{'.'.join(parts[:index - 1])}'"
            problem, value, siblings = _fixture_step(value, siblings, part, here, at, collection)
            if problem:
                return problem
            if value is _NOTHING and siblings is None:
                return None  # below a record or key the fixtures do not hold: cannot be told before the run
    return None


def _is_index(part: str) -> bool:
    return part.lstrip("-").isdigit()


def _known(annotation: Any) -> Any:
    """None for a type that says nothing (``Any``, an untyped ``dict`` or ``list``): the walk then reads the
    fixtures (an untyped dict in a collection is a record, its keys those of its fellow records)."""
    kind, inner = _kind(annotation)
    return None if kind == "unknown" or (kind in ("mapping", "list") and inner is Any) else annotation


def _records(values: Any) -> list[dict] | None:
    """The values as a collection of records (every one a mapping, at least one), else None."""
    values = list(values)
    return values if values and all(isinstance(v, dict) for v in values) else None


def _fixture_step(value: Any, siblings: list[dict] | None, part: str, here: str, at: str, collection: str
                  ) -> tuple[str | None, Any, list[dict] | None]:
    """One part of a path through fixtures whose type says nothing: (problem, the value below, its siblings)."""
    if siblings is not None and (value is _NOTHING or isinstance(value, dict)):
        keys = sorted({key for record in siblings for key in record})
        if part not in keys:  # a record of a collection: its keys are those its fellow records have
            return (f"{at}no record of {collection} has a key '{part}' in the fixtures "
                    f"({_nearest(part, keys, 'their keys')})"), _NOTHING, None
        return None, value.get(part, _NOTHING) if isinstance(value, dict) else _NOTHING, None
    if value is _NOTHING:
        return None, _NOTHING, None
    if isinstance(value, dict):  # a collection (any key: the task may create it) or a free-form mapping
        return None, value.get(part, _NOTHING), _records(value.values())
    if isinstance(value, list):
        return None, _record_in(value, part), _records(value)
    return f"{at}{here} is a single value in the fixtures ({type(value).__name__}): nothing lies below it", \
        _NOTHING, None
