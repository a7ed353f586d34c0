"""A value per object, memoised by the object's identity: the harness hands every request of one (arm, seed)
the same ToolSpec and tuple objects, so an ``is`` check beats hashing their content on every request."""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    """``memo(obj)`` is ``compute(obj)``, computed once per object. The object is held beside its value, so
    its id cannot be reused by another object while the entry lives; the memo is emptied when full."""

    def __init__(self, compute: Callable[[K], V], limit: int) -> None:
        self._compute = compute
        self._limit = limit
        self._entries: dict[int, tuple[K, V]] = {}

    def __call__(self, obj: K) -> V:
        entry = self._entries.get(id(obj))
        if entry is not None and entry[0] is obj:
            return entry[1]
        value = self._compute(obj)
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[id(obj)] = (obj, value)
        return value
