"""The client's record of creates read as the ledger's :data:`RECORD` columns (:func:`record_table`).

Shared by ``labels`` (which re-exports both names) and ``tasks`` (which joins the
record onto the task listing), so neither imports the other.
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

import songlab.ledger._arrow as _arrow
import songlab.ledger._schema as _schema
from songlab.ledger._arrow import ColumnLike

__all__ = ["RECORD", "record_table"]


# The columns of the client's record (``songlab.client.RECORD_SCHEMA``) the ledger joins.
RECORD: Final[pa.Schema] = _arrow.schema(
    [
        pa.field("task_id", pa.string()),
        pa.field("key_id", pa.string()),
        pa.field("tool_id", pa.string()),
        pa.field("operation", pa.string()),
        pa.field("model", pa.string()),
        pa.field("license", pa.int8()),
        pa.field("estimate_usd", _schema.MONEY),
        pa.field("project", pa.string()),
        pa.field("tags", pa.string()),
        pa.field("sent_at", _schema.TIMESTAMP),
        pa.field("accepted_at", _schema.TIMESTAMP),
    ]
)


def _cast(col: ColumnLike, name: str, type_: pa.DataType) -> ColumnLike:
    if col.type == type_:
        return col
    if pa.types.is_timestamp(type_) and pa.types.is_string(col.type):
        col = pc.strptime(
            pc.utf8_slice_codeunits(col, 0, 19), format="%Y-%m-%dT%H:%M:%S", unit="us"
        )
        return pc.assume_timezone(col, "UTC") if col.type.tz is None else col
    try:
        return pc.cast(col, type_)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ValueError(f"record: column {name} is {col.type}, not {type_} ({exc})") from None


def record_table(record: object) -> pa.Table | None:
    """The client's record as a table of the :data:`RECORD` columns, oldest row first.

    ``record``: a ``songlab.client.RecordStore`` (or anything with ``.table()``), an Arrow
    table with the record's columns (``RECORD_SCHEMA``: extra columns are ignored, missing
    ones are null), or None / False for no record.
    """
    if record is None or record is False:
        return None
    if not isinstance(record, pa.Table):
        reader = getattr(record, "table", None)
        if not callable(reader):
            raise TypeError(
                "record: expected a RecordStore (with .table()), an Arrow table or "
                f"None, got {type(record).__name__}"
            )
        record = reader()
        if not isinstance(record, pa.Table):
            raise TypeError(f"record: .table() gave {type(record).__name__}, not an Arrow table")
    if "task_id" not in record.column_names:
        raise ValueError("record: the table has no task_id column")
    cols = [
        _cast(record[f.name], f.name, f.type)
        if f.name in record.column_names
        else _arrow.nulls(record.num_rows, f.type)
        for f in RECORD
    ]
    return pa.Table.from_arrays(cols, schema=RECORD)
