"""Typed names for Arrow columns, and the pyarrow calls whose stubs cannot say what the code knows.

pyarrow-stubs types an array by its scalar type (``Array[Int64Scalar]``) and its compute
functions by overloads over those types. A ledger column's type is decided at run time, by
a schema: :data:`Column` is an array whose scalar type is that run-time one (``Any`` in
the one place it is written), so the array's own methods and the compute functions'
arity and options are still checked. ``pa.repeat`` and ``pa.nulls`` have one overload per
scalar class and none for a type known only at run time: :func:`repeat` and :func:`nulls`
say what they return. ``pc.fill_null``, ``pc.coalesce`` and ``pc.if_else`` are typed to
return "an array or a scalar" (the join of their arguments' types): :func:`fill_null`,
:func:`coalesce` and :func:`if_else` return the kind of their first argument, as pyarrow
does for the ledger's calls (a column with a scalar fill or choice is a column), and
:func:`join_strings` is ``pc.binary_join_element_wise`` for columns of a run-time type.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias, cast, overload

import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "Chunked",
    "Column",
    "ColumnLike",
    "Dictionary",
    "Field",
    "Value",
    "coalesce",
    "dictionary_encode",
    "fill_null",
    "if_else",
    "join_strings",
    "metadata",
    "nulls",
    "repeat",
    "schema",
    "value",
]

Column: TypeAlias = "pa.Array[Any]"  # an array of the Arrow type a schema gives at run time
Chunked: TypeAlias = "pa.ChunkedArray[Any]"  # a table's column, likewise
ColumnLike: TypeAlias = "Column | Chunked"
Field: TypeAlias = "pa.Field[pa.DataType]"  # a schema's field of some Arrow type
Value: TypeAlias = "pa.Scalar[Any]"  # a scalar, likewise
Dictionary: TypeAlias = "pa.DictionaryArray[Any, Any]"  # a dictionary-encoded column, likewise

# the compute functions as plain callables: their overloads cannot type a run-time type
_FILL_NULL: Callable[..., object] = pc.fill_null
_COALESCE: Callable[..., object] = pc.coalesce
_IF_ELSE: Callable[..., object] = pc.if_else
_JOIN: Callable[..., object] = pc.binary_join_element_wise
_ENCODE: Callable[..., object] = pc.dictionary_encode


def value(item: object, type_: pa.DataType) -> Value:
    """``item`` as a scalar of ``type_`` (``pa.scalar`` with the type the stubs leave open)."""
    return pa.scalar(item, type_)


def repeat(item: object, n: int, type_: pa.DataType) -> Column:
    """``n`` copies of ``item`` as an array of ``type_``."""
    # the stub has one overload per scalar class; a run-time type matches none of them
    return cast("Column", pa.repeat(value(item, type_), n))  # type: ignore[call-overload]


def nulls(n: int, type_: pa.DataType) -> Column:
    """``n`` nulls as an array of ``type_``."""
    # as for repeat: one overload per type class, none for a DataType known at run time
    return cast("Column", pa.nulls(n, type_))  # type: ignore[call-overload]


def metadata(schema: pa.Schema) -> dict[bytes | str, bytes | str] | None:
    """A schema's metadata as ``pa.schema`` takes it (the stub reads ``dict[bytes, bytes]``
    and takes ``dict[bytes | str, bytes | str]``: the same dict, to an invariant type)."""
    return None if schema.metadata is None else dict(schema.metadata.items())


@overload
def fill_null(values: Column, fill: object) -> Column: ...
@overload
def fill_null(values: Chunked, fill: object) -> Chunked: ...
@overload
def fill_null(values: ColumnLike, fill: object) -> ColumnLike: ...
def fill_null(values: ColumnLike, fill: object) -> ColumnLike:
    """``values`` with each null replaced by ``fill`` (a Python value, a scalar or a column)."""
    return cast("ColumnLike", _FILL_NULL(values, fill))


@overload
def coalesce(first: Column, *rest: object) -> Column: ...
@overload
def coalesce(first: Chunked, *rest: object) -> Chunked: ...
@overload
def coalesce(first: ColumnLike, *rest: object) -> ColumnLike: ...
def coalesce(first: ColumnLike, *rest: object) -> ColumnLike:
    """Per row, the first of ``first, *rest`` that is not null."""
    return cast("ColumnLike", _COALESCE(first, *rest))


@overload
def if_else(cond: Column, left: object, right: object) -> Column: ...
@overload
def if_else(cond: Chunked, left: object, right: object) -> Chunked: ...
@overload
def if_else(cond: ColumnLike, left: object, right: object) -> ColumnLike: ...
def if_else(cond: ColumnLike, left: object, right: object) -> ColumnLike:
    """Per row, ``left`` where ``cond`` is true, else ``right`` (null where ``cond`` is)."""
    return cast("ColumnLike", _IF_ELSE(cond, left, right))


def join_strings(*parts: object, null_handling: str = "emit_null") -> Column:
    """Per row, the string ``parts`` but the last joined by the last (the separator);
    ``null_handling`` as ``pc.binary_join_element_wise`` takes it."""
    return cast("Column", _JOIN(*parts, null_handling=null_handling))


def dictionary_encode(values: Column) -> Dictionary:
    """``values`` as a dictionary column (the stub returns a plain array)."""
    return cast("Dictionary", _ENCODE(values))


def schema(fields: Sequence[Field]) -> pa.Schema:
    """``pa.schema`` of fields of different types (a list literal of them is a list of
    ``object`` to mypy; a parameter of this type gives it its element type)."""
    return pa.schema(fields)
