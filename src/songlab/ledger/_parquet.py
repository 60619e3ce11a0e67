"""Parquet files that read back with the ledger's dtypes, in pandas and in DuckDB alike.

Written by hand so every reader sees the same types:

- money (``decimal128``) columns carry the Arrow extension type
  ``songlab.decimal`` over their decimal storage. With ``songlab.ledger``
  imported (it registers the type), ``pd.read_parquet`` gives them back as
  ``pd.ArrowDtype(decimal128(p, s))`` - plain pandas would give object columns
  of ``Decimal``. Readers that do not know the type (DuckDB, Spark, pandas
  without songlab) read the storage: an exact ``DECIMAL(p, s)``;
- the pandas metadata names every other column's ``pd.ArrowDtype`` in a form
  pandas parses back (``utf8[pyarrow]``, ``timestamp[us, tz=UTC][pyarrow]``,
  ...), so strings, timestamps and durations come back as Arrow dtypes too.
  List columns are marked ``object`` (pandas cannot parse their dtype string
  and would fail the whole read) and come back as object arrays.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, cast

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import songlab.ledger._arrow as _arrow
import songlab.ledger._schema as _schema
import songlab.localfiles as localfiles
from songlab.ledger._arrow import Chunked

# Rows per Parquet row group in the files songlab writes (a month of a ledger store, a ledger
# frame). A row group is what an engine reads on one core and what it skips by its min and max:
# pyarrow's default (1Mi rows) makes a month of a busy account one group, scanned on one core
# and never skipped (the month's window, the newest tasks). DuckDB's own row groups are 122,880
# rows; this is about as many.
ROW_GROUP_ROWS: Final[int] = 131_072

__all__ = [
    "DecimalType",
    "SourceType",
    "read_table",
    "replace_atomically",
    "to_parquet_table",
    "write_atomic",
    "write_parquet",
]


def _decimal(t: pa.DataType) -> pa.Decimal128Type:
    if not isinstance(t, pa.Decimal128Type):
        raise TypeError(f"songlab.decimal: storage must be decimal128, got {t}")
    return t


def _dictionary(t: pa.DataType) -> pa.DictionaryType[Any, Any]:
    if not isinstance(t, pa.DictionaryType):
        raise TypeError(f"songlab.source: storage must be a dictionary type, got {t}")
    return t


def _extension_column(ext: pa.ExtensionType, col: Chunked) -> Chunked:
    """``col``'s chunks as the extension type ``ext`` over them."""
    chunks = [pa.ExtensionArray.from_storage(ext, c) for c in col.chunks]
    # chunked_array's overloads name each type; an extension type is known at run time
    return pa.chunked_array(chunks, type=ext)  # type: ignore[call-overload, no-any-return]


def _storage_column(col: Chunked, storage: pa.DataType) -> Chunked:
    """An extension column's chunks as their storage arrays (of type ``storage``)."""
    chunks = [c.storage for c in cast("list[pa.ExtensionArray[Any]]", col.chunks)]
    return pa.chunked_array(chunks, type=storage)  # type: ignore[call-overload, no-any-return]


class DecimalType(pa.ExtensionType):
    """``songlab.decimal``: exact money over ``decimal128(p, s)`` storage."""

    def __init__(self, precision: int = 18, scale: int = 8) -> None:
        super().__init__(pa.decimal128(precision, scale), "songlab.decimal")

    def __arrow_ext_serialize__(self) -> bytes:
        t = _decimal(self.storage_type)
        return f"{t.precision},{t.scale}".encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> DecimalType:
        t = _decimal(storage_type)
        return cls(t.precision, t.scale)

    # pyarrow asks an extension type for a pandas dtype; the stub knows only numpy's
    def to_pandas_dtype(self) -> pd.ArrowDtype:  # type: ignore[override]
        return _schema.MoneyDtype(self.storage_type)  # prints amounts, never 0E-8

    def __hash__(self) -> int:  # pandas hashes dtypes (dtype_backend="numpy_nullable")
        return hash((self.extension_name, self.storage_type))


class SourceType(pa.ExtensionType):
    """``songlab.source``: a dictionary-encoded string column (the ledger's ``*_source``
    columns) that pandas reads back as the same ``pd.ArrowDtype`` (pandas cannot parse a
    dictionary dtype's name from the metadata); other readers see plain strings."""

    def __init__(self, index_type: pa.DataType = pa.int8()) -> None:
        # pa.dictionary's overloads name each index type; this one is known at run time
        storage = pa.dictionary(index_type, pa.string())  # type: ignore[call-overload]
        super().__init__(storage, "songlab.source")

    def __arrow_ext_serialize__(self) -> bytes:
        return str(_dictionary(self.storage_type).index_type).encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> SourceType:
        return cls(_dictionary(storage_type).index_type)

    def to_pandas_dtype(self) -> pd.ArrowDtype:  # type: ignore[override]  # as DecimalType's
        return pd.ArrowDtype(self.storage_type)

    def __hash__(self) -> int:
        return hash((self.extension_name, self.storage_type))


for _ext in (DecimalType(), SourceType()):
    try:
        # the stub names the retired PyExtensionType; pyarrow registers an ExtensionType
        pa.register_extension_type(_ext)  # type: ignore[arg-type]
    except pa.ArrowKeyError:  # already registered (module reloaded)
        pass


def _numpy_type(t: pa.DataType) -> str:
    if (
        pa.types.is_decimal(t)
        or pa.types.is_list(t)
        or pa.types.is_struct(t)
        or pa.types.is_dictionary(t)
    ):
        return "object"
    if pa.types.is_string(t):
        return "utf8[pyarrow]"  # "string[pyarrow]" would give pandas' StringDtype
    if pa.types.is_date32(t):
        return "date32[day][pyarrow]"
    return f"{t}[pyarrow]"


def to_parquet_table(table: pa.Table) -> pa.Table:
    """``table`` with money as ``songlab.decimal`` and pandas metadata naming Arrow dtypes."""
    arrays, fields = [], []
    for field, col in zip(table.schema, table.columns, strict=True):
        if pa.types.is_decimal128(field.type):
            ext = DecimalType(field.type.precision, field.type.scale)
            col = _extension_column(ext, col)
            field = pa.field(field.name, ext, field.nullable, field.metadata)
        elif (
            pa.types.is_dictionary(field.type)
            and pa.types.is_string(field.type.value_type)
            and pa.types.is_integer(field.type.index_type)
        ):
            sext = SourceType(field.type.index_type)
            col = _extension_column(sext, col)
            field = pa.field(field.name, sext, field.nullable, field.metadata)
        arrays.append(col)
        fields.append(field)
    pandas_meta = {
        "index_columns": [],
        "column_indexes": [],
        "creator": {"library": "songlab"},
        "pandas_version": pd.__version__,
        "columns": [
            {
                "name": f.name,
                "field_name": f.name,
                "pandas_type": "object",
                "numpy_type": _numpy_type(f.type),
                "metadata": None,
            }
            for f in table.schema
        ],
    }
    meta: dict[bytes | str, bytes | str] = dict((table.schema.metadata or {}).items())
    meta[b"pandas"] = json.dumps(pandas_meta).encode()
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=meta))


def _storage(table: pa.Table) -> pa.Table:
    cols, fields = [], []
    for field, col in zip(table.schema, table.columns, strict=True):
        if isinstance(field.type, pa.BaseExtensionType):
            st = field.type.storage_type
            col = _storage_column(col, st)
            field = pa.field(field.name, st, field.nullable, field.metadata)
        cols.append(col)
        fields.append(field)
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def read_table(path: str | os.PathLike[str], schema: pa.Schema | None = None) -> pa.Table:
    """A file written here (or by an older songlab) as plain Arrow types; with ``schema``,
    exactly that schema (columns it lacks are null)."""
    table = _storage(pq.read_table(os.fspath(path)))
    if schema is None:
        return table
    cols = [
        table[f.name].cast(f.type)
        if f.name in table.column_names
        else _arrow.nulls(table.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(cols, schema=schema)


def replace_atomically(target: Path, write: Callable[[Path], Any]) -> None:
    """``write(tmp)`` to a temporary file in ``target``'s directory, fsynced and renamed over
    ``target``: a reader sees the old file or the new one, never half of one. The file is
    private (0600, new folders 0700: :func:`songlab.localfiles.replace_atomically`)."""
    localfiles.replace_atomically(target, write)


def write_atomic(target: Path, table: pa.Table) -> None:
    """One Parquet file (zstd) written over ``target`` atomically."""
    replace_atomically(
        target,
        lambda tmp: pq.write_table(
            to_parquet_table(table), tmp, compression="zstd", row_group_size=ROW_GROUP_ROWS
        ),
    )


def write_parquet(frame: object, path: str | os.PathLike[str]) -> Path:
    """Write a ledger frame (or Arrow table) to one Parquet file, atomically.

    ``pd.read_parquet(path)`` gives back the same ``pd.ArrowDtype`` columns
    (with songlab.ledger imported); DuckDB reads money as exact ``DECIMAL``.
    """
    if isinstance(frame, pd.DataFrame):
        table = pa.Table.from_pandas(frame, preserve_index=False)
        table = table.replace_schema_metadata(None)
    elif isinstance(frame, pa.Table):
        table = frame
    else:
        raise TypeError(f"frame: expected a DataFrame or Arrow table, got {type(frame).__name__}")
    target = Path(path)
    write_atomic(target, table)
    return target
