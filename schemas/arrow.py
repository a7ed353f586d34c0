"""Arrow schemas and DuckDB DDL derived from the pydantic models: columns are declared only once.

pyarrow is imported by the functions, not by this module: a command that reads a module naming
``to_arrow_table`` (``tooleval validate`` reads the instruments') pays for Arrow only when it builds a table."""

from __future__ import annotations

import functools
import types
import typing
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Union

from pydantic import BaseModel

if TYPE_CHECKING:
    import pyarrow as pa


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(annotation))
        if len(args) == 1:
            return args[0], nullable
        raise TypeError(f"unions other than Optional are not supported: {annotation}")
    return annotation, False


def arrow_type(annotation: Any) -> pa.DataType:
    """The Arrow type of one (non-optional) field annotation."""
    import pyarrow as pa

    origin = typing.get_origin(annotation)
    if origin is Literal:
        return pa.string()
    if origin in (list, tuple):
        (item,) = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return pa.list_(arrow_type(item))
    if origin is dict:
        key, value = typing.get_args(annotation)
        return pa.map_(arrow_type(key), arrow_type(value))
    simple = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_(),
              datetime: pa.timestamp("us", tz="UTC")}
    if annotation in simple:
        return simple[annotation]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return pa.struct(list(arrow_schema(annotation)))
    raise TypeError(f"no Arrow type for {annotation!r}")


@functools.cache
def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    """The Arrow schema of a model: one field per model field, in declaration order, with its docstring.
    Built once per model (an Arrow schema is immutable): every landed unit of a run reuses it."""
    import pyarrow as pa

    fields = []
    for name, info in model.model_fields.items():
        annotation, nullable = _unwrap_optional(info.annotation)
        metadata = {"description": info.description} if info.description else None
        fields.append(pa.field(name, arrow_type(annotation), nullable=nullable, metadata=metadata))
    return pa.schema(fields)


def duckdb_type(dtype: pa.DataType) -> str:
    """The DuckDB column type of an Arrow type."""
    import pyarrow as pa

    simple = {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN"}
    if dtype in simple:
        return simple[dtype]
    if pa.types.is_timestamp(dtype):
        return "TIMESTAMPTZ"
    if pa.types.is_list(dtype):
        return f"{duckdb_type(dtype.value_type)}[]"
    if pa.types.is_map(dtype):
        return f"MAP({duckdb_type(dtype.key_type)}, {duckdb_type(dtype.item_type)})"
    if pa.types.is_struct(dtype):
        return "STRUCT(" + ", ".join(f"{f.name} {duckdb_type(f.type)}" for f in dtype) + ")"
    raise TypeError(f"no DuckDB type for {dtype}")


def create_table_sql(model: type[BaseModel], table: str) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for a model, derived from its Arrow schema."""
    columns = []
    for field in arrow_schema(model):
        null = "" if field.nullable else " NOT NULL"
        columns.append(f"    {field.name} {duckdb_type(field.type)}{null}")
    return f"CREATE TABLE IF NOT EXISTS {table} (\n" + ",\n".join(columns) + "\n);"


def to_arrow_table(model: type[BaseModel], records: list[dict[str, Any]]) -> pa.Table:
    """Records (dicts shaped like ``model``) as an Arrow table with the model's schema.

    A field missing from a record takes the model's default; a missing required field is a KeyError.
    """
    import pyarrow as pa

    columns = {}
    for name, info in _fields(model):
        if info is None:
            columns[name] = [record[name] for record in records]
        else:
            default = info.get_default(call_default_factory=True)
            columns[name] = [record.get(name, default) for record in records]
    return pa.table(columns, schema=arrow_schema(model))


@functools.cache
def _fields(model: type[BaseModel]) -> tuple[tuple[str, Any], ...]:
    """Each field's name and, for a field with a default, its pydantic field info (None when required)."""
    return tuple((name, None if info.is_required() else info) for name, info in model.model_fields.items())
