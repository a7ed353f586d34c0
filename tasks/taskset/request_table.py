"""A task-set version's requests as one columnar table (polars), one row per request line.

Every line of ``<version>.jsonl`` is still validated with the ``LabelledRequest`` model, so bad input
keeps its file / line / rule errors, but the model objects are not kept: the run holds each request as a
handful of strings in Arrow buffers, and a work unit is a zero-copy slice of the table (``plan_units``).

Columns (``request_schema()``):

- ``line``: the request's line in the file (blank lines counted), for error messages;
- ``id``, ``expected``, ``fallback`` (null: none), ``slice``, ``intent`` (null), ``label_status``: as in
  the file;
- ``text``: the last user turn (``LabelledRequest.text``);
- ``messages``: the conversation as canonical JSON (``messages_json``: sorted keys, not ASCII-escaped),
  the very string the selection cache key digests;
- ``tools``: the request's own tools as JSON (``tools_json``), null when the arm's catalogue is offered;
- ``expected_arguments``: what the right tool's call must hold, as JSON (``expected_arguments_json``), null
  when the arguments are not scored.

``RequestRows`` reads the table as a sequence of ``LabelledRequest``. polars is imported when a table is
built or read, not with this module.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence, overload

from pydantic import TypeAdapter

from schemas.catalogue import ToolSpec
from schemas.expected_arguments import ExpectedArgument
from schemas.taskset import LabelledRequest, Message

if TYPE_CHECKING:
    import polars as pl

COLUMNS = ("line", "id", "text", "messages", "expected", "fallback", "slice", "intent", "label_status", "tools",
           "expected_arguments")
"""The table's columns, in order: ``line`` an integer, every other one a string."""
CHUNK_ROWS = 16_384
"""Lines gathered as Python values before they become one polars chunk: bounds the loader's transient memory."""

_MESSAGES = TypeAdapter(tuple[Message, ...])
_TOOLS = TypeAdapter(tuple[ToolSpec, ...])
_EXPECTED_ARGUMENTS = TypeAdapter(dict[str, ExpectedArgument])


def messages_json(messages: Iterable[Message]) -> str:
    """The conversation as canonical JSON: the form the selection cache key digests (``plan_units``)."""
    return json.dumps([m.model_dump() for m in messages], sort_keys=True, ensure_ascii=False)


def tools_json(tools: Iterable[ToolSpec] | None) -> str | None:
    """A request's own tools as JSON, keys in the file's order (a provider sees the schema as written)."""
    if tools is None:
        return None
    return json.dumps([t.model_dump(mode="json") for t in tools], ensure_ascii=False)


def expected_arguments_json(expected: Mapping[str, ExpectedArgument] | None) -> str | None:
    """A request's expected arguments as JSON, as the request file writes them."""
    if expected is None:
        return None
    return json.dumps({name: argument.model_dump(mode="json") for name, argument in expected.items()},
                      ensure_ascii=False)


def parse_expected_arguments(text: str | None) -> dict[str, ExpectedArgument] | None:
    return None if text is None else _EXPECTED_ARGUMENTS.validate_json(text)


def parse_messages(text: str) -> tuple[Message, ...]:
    return _MESSAGES.validate_json(text)


def parse_tools(text: str | None) -> tuple[ToolSpec, ...] | None:
    return None if text is None else _TOOLS.validate_json(text)


def _row(request: LabelledRequest, line: int) -> tuple:
    return (line, request.id, request.text, messages_json(request.messages), request.expected, request.fallback,
            request.slice, request.intent, request.label_status, tools_json(request.tools),
            expected_arguments_json(request.expected_arguments))


def request_schema() -> dict[str, Any]:
    """Column name -> polars type, in ``COLUMNS``' order."""
    import polars as pl

    return {name: pl.Int64 if name == "line" else pl.String for name in COLUMNS}


def _frame(rows: list[tuple]) -> pl.DataFrame:
    import polars as pl

    return pl.DataFrame(rows, schema=request_schema(), orient="row")


class _Chunks:
    """Rows gathered into polars chunks of ``CHUNK_ROWS``, concatenated once at the end."""

    def __init__(self) -> None:
        self.frames: list[pl.DataFrame] = []
        self.pending: list[tuple] = []

    def add(self, row: tuple) -> None:
        self.pending.append(row)
        if len(self.pending) >= CHUNK_ROWS:
            self.frames.append(_frame(self.pending))
            self.pending = []

    def frame(self) -> pl.DataFrame:
        import polars as pl

        if self.pending or not self.frames:
            self.frames.append(_frame(self.pending))
            self.pending = []
        return pl.concat(self.frames, rechunk=False) if len(self.frames) > 1 else self.frames[0]


def numbered_request_rows(numbered: Iterable[tuple[int, LabelledRequest]]) -> RequestRows:
    """(line, request) pairs as the rows of a request table. Each request becomes a row as it comes, so a
    generator of validated lines (``load_taskset.read_request_table``) never has more than one chunk of them
    alive; requests that fill one chunk or less stay rows until the table is first read (``RequestRows.frame``)."""
    chunks = _Chunks()
    for line, request in numbered:
        chunks.add(_row(request, line))
    return RequestRows(chunks.frame()) if chunks.frames else RequestRows(rows=chunks.pending)


def request_table(requests: Iterable[LabelledRequest]) -> pl.DataFrame:
    """Requests already in memory (a draft version, a test's tuple) as a request table, lines 1..n."""
    return numbered_request_rows(enumerate(requests, start=1)).frame


def as_request_table(requests: pl.DataFrame | Sequence[LabelledRequest]) -> pl.DataFrame:
    """The table itself, the table behind a ``RequestRows`` view, or a table built from request objects."""
    import polars as pl

    if isinstance(requests, pl.DataFrame):
        return requests
    if isinstance(requests, RequestRows):
        return requests.frame
    return request_table(requests)


def row_request(row: dict[str, Any]) -> LabelledRequest:
    """One row of the table as the ``LabelledRequest`` its line held."""
    fields: dict[str, Any] = {
        "id": row["id"], "messages": json.loads(row["messages"]), "expected": row["expected"],
        "slice": row["slice"], "label_status": row["label_status"],
    }
    for name in ("fallback", "intent"):
        if row[name] is not None:
            fields[name] = row[name]
    if row["tools"] is not None:
        fields["tools"] = json.loads(row["tools"])
    if row.get("expected_arguments") is not None:
        fields["expected_arguments"] = json.loads(row["expected_arguments"])
    return LabelledRequest.model_validate(fields)


class RequestRows(Sequence[LabelledRequest]):
    """The requests of a table as a read-only sequence of ``LabelledRequest``, each built when asked for.

    For code that reads requests one by one (labelling queue, resampling, weekly report); the run path
    reads the table's columns instead (``frame``)."""

    __slots__ = ("_frame", "_rows")
    _ITER_CHUNK = 4096

    def __init__(self, frame: pl.DataFrame | None = None, *, rows: list[tuple] | None = None) -> None:
        """Over ``frame``, or over ``rows`` (tuples in ``COLUMNS``' order) made into one frame when first read."""
        if (frame is None) == (rows is None):
            raise ValueError("RequestRows needs a frame or rows, not both")
        self._frame = frame
        self._rows = rows

    @property
    def frame(self) -> pl.DataFrame:
        """The request table (built from the rows on first read, which are then dropped)."""
        if self._frame is None:
            self._frame = _frame(self._rows or [])
            self._rows = None
        return self._frame

    def column(self, name: str) -> list[Any]:
        """One column's values in row order, read from the rows while no frame is built (no polars)."""
        if self._rows is not None:
            index = COLUMNS.index(name)
            return [row[index] for row in self._rows]
        return self.frame.get_column(name).to_list()

    def __len__(self) -> int:
        return len(self._rows) if self._rows is not None else self.frame.height

    @overload
    def __getitem__(self, index: int) -> LabelledRequest: ...

    @overload
    def __getitem__(self, index: slice) -> "RequestRows": ...

    def __getitem__(self, index: int | slice) -> "LabelledRequest | RequestRows":
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1:
                return RequestRows(self.frame.slice(start, max(stop - start, 0)))
            return RequestRows(self.frame[list(range(start, stop, step))])
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError(index)
        return row_request(self.frame.row(position, named=True))

    def __iter__(self) -> Iterator[LabelledRequest]:
        for start in range(0, self.frame.height, self._ITER_CHUNK):
            for row in self.frame.slice(start, self._ITER_CHUNK).iter_rows(named=True):
                yield row_request(row)

    def __repr__(self) -> str:
        return f"RequestRows({len(self)} requests)"
