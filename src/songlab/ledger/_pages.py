"""Listing page bytes -> the ledger's raw task columns, without a Python dict per task.

Each page is the body of one ``GET /v1/generations`` answer,
``{"data": [task, ...], "next_cursor": ...}``. Pages are gathered into batches
of about :data:`BATCH_BYTES`, one page per line (JSON whitespace, newlines
included, is only ever between tokens, so a page's newlines can become spaces),
and read by Arrow's JSON reader against an explicit schema: only the fields the
ledger uses are converted, every other key is skipped in C++.

Arrow's reader is strict: a value of another JSON type than the schema's (a
number where a string is expected, a ``"3"`` license, an ``output`` that is
not an object ...) fails the batch. Such a batch is decoded with ``json.loads``
instead and handed to the dict path, which accepts or refuses it with its own
errors, so both paths give the same frame or the same error.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

import songlab.ledger._arrow as _arrow
from songlab.ledger._arrow import Column

__all__ = ["BATCH_BYTES", "batches"]

BATCH_BYTES: Final[int] = 16 * 1024 * 1024  # ~500 pages of 100 tasks
_MIN_BLOCK: Final[int] = 1024 * 1024  # Arrow parses a batch in blocks, on its threads

# What a batch yields: (raw, metadata_json, None) from Arrow, or (None, None, dicts).
# (raw, metadata_json, None) read by Arrow, or (None, None, task dicts)
Batch = tuple[pa.StructArray, Column, None] | tuple[None, None, list[Mapping[str, object]]]


def _schema(raw_task: pa.StructType) -> pa.Schema:
    fields = [raw_task.field(i) for i in range(raw_task.num_fields)]
    task = pa.struct([*fields, ("output", pa.struct([("metadata_json", pa.string())]))])
    return pa.schema([("data", pa.list_(task))])


def _one_line(page: bytes) -> bytes:
    if not isinstance(page, bytes | bytearray | memoryview):
        raise TypeError(f"page: expected the bytes of a listing page, got {type(page).__name__}")
    page = bytes(page)
    if b"\n" in page or b"\r" in page:
        page = page.replace(b"\r", b" ").replace(b"\n", b" ")
    return page


def _dicts(lines: list[bytes]) -> list[Mapping[str, object]]:
    """The tasks of the pages, decoded one by one (the fallback), with clear errors."""
    out: list[Mapping[str, object]] = []
    for n, line in enumerate(lines):
        try:
            body = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"listing page {n}: not JSON ({exc})") from None
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise ValueError(f"listing page {n}: data must be an array of tasks")
        out.extend(data)
    return out


def _read(
    lines: list[bytes], schema: pa.Schema, raw_task: pa.StructType, op_names: tuple[str, ...]
) -> Batch | None:
    block = max(_MIN_BLOCK, max(map(len, lines)) + 1)
    try:
        table = pj.read_json(
            io.BytesIO(b"\n".join(lines)),
            read_options=pj.ReadOptions(block_size=block),
            parse_options=pj.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="ignore"
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None, None, _dicts(lines)
    data = table.column("data")
    if table.num_rows != len(lines) or data.null_count:
        return None, None, _dicts(lines)  # not one page per line, or a page without data
    lists = cast("list[pa.ListArray[Any]]", data.chunks)  # "data" is a list of task structs
    tasks = (
        cast(pa.StructArray, pa.concat_arrays([c.flatten() for c in lists]))  # of task structs
        if data.num_chunks
        else None
    )
    if tasks is None or len(tasks) == 0:
        return None  # empty pages
    names = [raw_task.field(i).name for i in range(raw_task.num_fields)]
    raw = pa.StructArray.from_arrays(
        [tasks.field(n) for n in names], fields=list(raw_task), mask=pc.is_null(tasks)
    )
    if raw.null_count:
        return None, None, _dicts(lines)  # a null task: the dict path names the error
    # kept on Agent One runs, and where the operation is not shown (the record may name it)
    ops = [raw.field(n) for n in op_names]
    op = ops[0] if len(ops) == 1 else _arrow.coalesce(*ops)
    maybe_agent = _arrow.fill_null(pc.equal(op, pa.scalar("agent")), pa.scalar(True))
    meta = _arrow.if_else(
        maybe_agent, pc.struct_field(tasks.field("output"), [0]), pa.scalar(None, pa.string())
    )
    return raw, meta, None


def batches(
    pages: Iterable[bytes], raw_task: pa.StructType, op_names: tuple[str, ...] = ("operation",)
) -> Iterator[Batch]:
    """The pages' tasks a batch at a time, in order: ``(raw, metadata_json, None)``
    read by Arrow, or ``(None, None, task dicts)`` where Arrow's types did not fit."""
    schema = _schema(raw_task)
    lines: list[bytes] = []
    size = 0
    for page in pages:
        line = _one_line(page)
        lines.append(line)
        size += len(line)
        if size >= BATCH_BYTES:
            if (batch := _read(lines, schema, raw_task, op_names)) is not None:
                yield batch
            lines, size = [], 0
    if lines and (batch := _read(lines, schema, raw_task, op_names)) is not None:
        yield batch
