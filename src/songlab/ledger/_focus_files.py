"""FOCUS files: the rows of ``focus`` written as CSV or Parquet, with the metadata beside them.

- **Parquet**: the FOCUS types as Parquet types (``DECIMAL``, UTC ``TIMESTAMP``, UTF-8
  strings), the schema metadata (FOCUS's ``SchemaId``, ``FocusVersion``, every column's
  definition) also in the file's key-value metadata under ``focus``.
- **CSV**: a header of column ids; a Date/Time as ``YYYY-MM-DDTHH:mm:ssZ`` (FOCUS's format);
  a Decimal as plain decimal text with all its places (never ``0E-8``); a null as an empty
  field (an empty string is never written: FOCUS forbids it); text a spreadsheet would run
  as a formula gets a leading ``'`` (as every songlab CSV; ``export.FORMULA_START``).
- ``NAME.metadata.json`` beside the file (``out.csv.metadata.json``): the metadata with where the data is
  (``data_location``: file, bytes, rows), as FOCUS's appendix shows.

Each file is written to a temporary name in its directory, readable by the user only
(0600), and renamed into place: an error leaves no half-written file.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

import songlab.ledger._arrow as _arrow
import songlab.ledger._schema as _schema
from songlab.ledger._arrow import Column
from songlab.ledger.export import FORMULA_START

__all__ = ["FORMATS", "check", "metadata_path", "write"]

FORMATS: Final[tuple[str, ...]] = (".csv", ".parquet")


def metadata_path(path: Path) -> Path:
    """``out.csv`` -> ``out.csv.metadata.json`` (a CSV and a Parquet file of one name each
    keep their own)."""
    return path.with_name(f"{path.name}.metadata.json")


def check(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(
            f"focus: the file name must end in .csv or .parquet (the format), got {str(path)!r}"
        )
    if path.exists() and path.is_dir():
        raise ValueError(f"focus: {str(path)!r} is a directory; give a file name")
    return suffix


def _inert(values: Column) -> Column:
    risky = pc.starts_with(values, FORMULA_START[0])
    for lead in FORMULA_START[1:]:
        risky = pc.or_(risky, pc.starts_with(values, lead))
    return _arrow.if_else(
        _arrow.fill_null(risky, pa.scalar(False)),
        _arrow.join_strings("'", values, ""),
        values,
    )


def _as_text(table: pa.Table) -> pa.Table:
    """Every column as CSV text (see the module's doc)."""
    cols = []
    for f, col in zip(table.schema, table.columns, strict=True):
        a = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if pa.types.is_decimal(f.type):
            a = _schema.plain_text(a)
        elif pa.types.is_timestamp(f.type):
            seconds = pc.floor_temporal(a, unit="second")
            # the stub's strftime takes only timestamps without a time zone
            utc = pc.cast(seconds, pa.timestamp("s", tz="UTC"))
            a = pc.strftime(utc, format="%Y-%m-%dT%H:%M:%SZ")  # type: ignore[arg-type]
        else:
            a = _inert(pc.cast(a, pa.string()))
        cols.append(a)
    return pa.Table.from_arrays(cols, names=table.column_names)


def _tmp(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    return tmp


def write(
    rows: Iterable[pa.Table],
    path: str | os.PathLike[str],
    *,
    schema: pa.Schema,
    metadata: Callable[[list[dict[str, object]]], dict[str, object]],
    count: Callable[[], int],
) -> tuple[Path, Path]:
    """Write ``rows`` (tables of ``schema``) to ``path`` (.csv or .parquet) and
    ``metadata(data_location)`` beside it (``count()``: the rows written, asked once they
    are); returns both paths."""
    target = Path(path)
    suffix = check(target)
    meta_target = metadata_path(target)
    tmp = _tmp(target)
    meta_tmp = _tmp(meta_target)
    try:
        if suffix == ".parquet":
            with_meta = schema.with_metadata({"focus": json.dumps(metadata([]))})
            with pq.ParquetWriter(str(tmp), with_meta, compression="zstd") as writer:
                for table in rows:
                    writer.write_table(table.cast(with_meta))
        else:
            opts = pacsv.WriteOptions(include_header=True, quoting_style="needed")
            text_schema = pa.schema([pa.field(n, pa.string()) for n in schema.names])
            with pacsv.CSVWriter(str(tmp), text_schema, write_options=opts) as writer:
                for table in rows:
                    writer.write_table(_as_text(table).cast(text_schema))
        where = [
            {"filepath": target.name, "total_bytes": tmp.stat().st_size, "total_rows": count()}
        ]
        meta_tmp.write_text(json.dumps(metadata(where), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, target)
        os.replace(meta_tmp, meta_target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        meta_tmp.unlink(missing_ok=True)
        raise
    return target, meta_target
