"""The tasks frame: one row per task, built column by column in Arrow.

Input is any source of task snapshots (see ``_source``): a list or generator
of dicts in design.md's snapshot shape, or a client. Records are read in
chunks straight into an Arrow struct array (C++, no per-field Python loop),
then every column is derived with Arrow compute; the only Python work per
distinct value is the price-list lookup of each distinct (operation, model,
license) and the trace of each Agent One run. A generator is consumed one
chunk at a time, so a long listing never sits in memory as a list of dicts.
A client with ``generations.raw_pages()`` is read from the listing's page
bytes instead (``_pages``: Arrow's JSON reader, no Python dict per task); both
ways end in :func:`assemble`, so they give the same frame.

Rows keep the source's order (the listing's: newest first).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from itertools import islice
from typing import Any, Final

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from songlab._vocab import LICENSE_NAMES_WITH_UNSET
from songlab.ledger import _estimate, _pages, _schema
from songlab.ledger._source import as_dict, iter_tasks, raw_pages

__all__ = ["RAW_TASK", "tasks_frame", "tasks_frame_from_pages", "tasks_table",
           "tasks_table_from_pages"]

CHUNK: Final[int] = 131_072

# The part of a snapshot the ledger reads; other keys are ignored.
RAW_TASK: Final[pa.DataType] = pa.struct(
    [
        ("task_id", pa.string()),
        ("tool_id", pa.string()),
        ("operation", pa.string()),
        ("model", pa.string()),
        ("license", pa.int64()),
        ("status", pa.string()),
        ("created_at", pa.string()),
        ("updated_at", pa.string()),
        ("cost_usd", pa.string()),
        ("parent_task_id", pa.string()),
        ("failure", pa.struct([("error", pa.string())])),
    ]
)
# Read only where they matter, from the records themselves: failure.error of
# failed tasks and output.metadata_json of Agent One runs (nested structs for
# every row would double the conversion time).
_TIER_NAMES = pa.array([LICENSE_NAMES_WITH_UNSET[i] for i in range(6)], pa.string())


_TEXT_FIELDS: Final = ("task_id", "tool_id", "operation", "model", "status", "parent_task_id")


def _clean(rec: Mapping[str, Any]) -> dict[str, Any]:
    """One record coerced to RAW_TASK's types; errors name the task and field."""
    tid = rec.get("task_id")
    out: dict[str, Any] = {k: rec.get(k) for k in ("task_id", "tool_id", "operation", "model")}
    out.update(status=rec.get("status"), parent_task_id=rec.get("parent_task_id"))
    out["failure"] = {"error": _failure_error(rec)}
    for k in ("created_at", "updated_at"):
        v = rec.get(k)
        out[k] = v.isoformat() if isinstance(v, datetime) else v
    lic = rec.get("license")
    if isinstance(lic, float) and lic.is_integer():
        lic = int(lic)  # 3.0 is the integer 3 (as JSON Schema reads it); 3.5 is refused below
    if lic is not None and (isinstance(lic, bool) or not isinstance(lic, int | str)):
        raise ValueError(f"task {tid}: license must be an integer 0-5, got {lic!r}")
    try:
        out["license"] = None if lic is None else int(lic)
    except ValueError:
        raise ValueError(f"task {tid}: license must be an integer 0-5, got {lic!r}") from None
    for k in (*_TEXT_FIELDS, "created_at", "updated_at"):
        if out[k] is not None and not isinstance(out[k], str):
            raise ValueError(f"task {tid}: {k} must be a string, got {type(out[k]).__name__} "
                             f"{out[k]!r}")  # fmt: skip
    if out["failure"]["error"] is not None and not isinstance(out["failure"]["error"], str):
        raise ValueError(f"task {tid}: failure.error must be a string, got "
                         f"{out['failure']['error']!r}")  # fmt: skip
    cost = rec.get("cost_usd")
    if isinstance(cost, float):
        raise ValueError(f"task {tid}: cost_usd must be a decimal string, got float {cost!r}")
    out["cost_usd"] = None if cost is None else str(cost)
    return out


def _failure_error(rec: Mapping[str, Any]) -> str | None:
    failure = rec.get("failure")
    return failure.get("error") if isinstance(failure, Mapping) else None


def _metadata_json(rec: Mapping[str, Any]) -> str | None:
    output = rec.get("output")
    meta = output.get("metadata_json") if isinstance(output, Mapping) else None
    if meta is not None and not isinstance(meta, str):
        meta = json.dumps(meta)
    return meta


def _sparse(records: Sequence[Mapping[str, Any]], mask: pa.Array, read: Any) -> pa.Array:
    """A string column read from the records only where ``mask`` is true, else null."""
    rows = pc.indices_nonzero(mask).to_pylist()
    if not rows:
        return pa.nulls(len(mask), pa.string())
    values = pa.array([read(records[i]) for i in rows], pa.string())
    return pc.replace_with_mask(pa.nulls(len(mask), pa.string()), mask, values)


def _float_license(records: Sequence[Any]) -> bool:
    return any(isinstance(r, Mapping) and type(r.get("license")) is float for r in records)


def _raw_chunk(records: Sequence[Mapping[str, Any]]) -> pa.StructArray:
    # pyarrow converts a float license to int64 by truncating (3.5 -> 3): such chunks are
    # cleaned record by record, where 3.0 is 3 and 3.5 is refused naming the task.
    if not _float_license(records):
        try:
            return pa.array(records, type=RAW_TASK)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            pass  # values of another type (a Decimal cost, a datetime, a numeric string ...)
    return pa.array([_clean(as_dict(r)) for r in records], type=RAW_TASK)


def _timestamps(strings: pa.Array, field: str, tid: pa.Array) -> pa.Array:
    try:
        return pc.cast(strings, _schema.TIMESTAMP)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    out = []
    for i, s in enumerate(strings.to_pylist()):
        if s is None:
            out.append(None)
            continue
        try:
            t = datetime.fromisoformat(s)
        except ValueError:
            raise ValueError(f"task {tid[i]}: {field}: not an ISO 8601 timestamp: {s!r}") from None
        out.append(t if t.tzinfo else t.replace(tzinfo=UTC))
    return pa.array(out, _schema.TIMESTAMP)


def _money(strings: pa.Array, field: str, tid: pa.Array) -> pa.Array:
    try:
        return pc.cast(strings, _schema.MONEY)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        error = exc
    for i, s in enumerate(strings.to_pylist()):  # only on failure: find the task to name
        try:
            pc.cast(pa.array([s], pa.string()), _schema.MONEY)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ValueError(f"task {tid[i]}: {field}: not a decimal amount with at most 8 "
                             f"decimals, got {s!r} ({exc})") from None
    raise ValueError(f"{field}: not a decimal amount with at most 8 decimals ({error})")


def _estimates(op: pa.Array, model: pa.Array, lic: pa.Array, meta: pa.Array) -> pa.Array:
    key = pc.binary_join_element_wise(
        op, model, pc.cast(lic, pa.string()), "\x1f", null_handling="replace"
    )
    enc = pc.dictionary_encode(key)
    est_by_key = []
    for k in enc.dictionary.to_pylist():
        o, m, n = k.split("\x1f")
        est_by_key.append(_estimate.estimate(o or None, m or None, int(n)))
    est = pc.take(pa.array(est_by_key, _schema.MONEY), enc.indices)
    is_agent = pc.fill_null(pc.equal(op, "agent"), False)
    if pc.any(is_agent).as_py():
        rows = pc.indices_nonzero(is_agent)
        models, metas = pc.take(model, rows).to_pylist(), pc.take(meta, rows).to_pylist()
        agent = [_estimate.estimate_agent_run(m, j) for m, j in zip(models, metas, strict=True)]
        est = pc.replace_with_mask(est, is_agent, pa.array(agent, _schema.MONEY))
    return est


def _build(records: Sequence[Mapping[str, Any]]) -> pa.Table:
    raw = _raw_chunk(records)
    is_agent = pc.fill_null(pc.equal(raw.field("operation"), "agent"), False)
    return assemble(raw, _sparse(records, is_agent, _metadata_json))


def assemble(raw: pa.StructArray, meta: pa.Array) -> pa.Table:
    """The tasks table of RAW_TASK rows and their metadata_json (null but on agent rows)."""
    (tid, tool, op, model, lic_raw, status, created_s, updated_s, cost_s, parent,
     failure_s) = raw.flatten()
    bad = pc.invert(
        pc.fill_null(pc.and_(pc.greater_equal(lic_raw, 0), pc.less_equal(lic_raw, 5)), True)
    )
    if pc.any(bad).as_py():
        i = pc.indices_nonzero(bad)[0].as_py()
        raise ValueError(f"task {tid[i]}: license must be 0-5, got {lic_raw[i]}")
    lic = pc.cast(pc.if_else(pc.fill_null(pc.equal(lic_raw, 0), True), 1, lic_raw), pa.int8())
    created = _timestamps(created_s, "created_at", tid)
    updated = _timestamps(updated_s, "updated_at", tid)
    failed = pc.fill_null(pc.equal(status, "failed"), False)
    terminal = pc.or_(failed, pc.fill_null(pc.equal(status, "completed"), False))
    duration = pc.if_else(
        terminal, pc.subtract(updated, created), pa.scalar(None, _schema.DURATION)
    )
    failure = pc.if_else(failed, pc.struct_field(failure_s, [0]), pa.scalar(None, pa.string()))
    billed = _money(cost_s, "cost_usd", tid)
    est = _estimates(op, model, lic, meta)
    has_billed = pc.is_valid(billed)
    zero = pa.scalar(Decimal(0), _schema.MONEY)
    fallback = pc.if_else(failed, zero, est)
    cost = pc.coalesce(billed, fallback)
    source = pc.if_else(
        has_billed,
        _schema.BILLED,
        pc.if_else(
            failed,
            _schema.UNBILLED,
            pc.if_else(pc.is_valid(est), _schema.ESTIMATE, _schema.UNKNOWN),
        ),
    )
    columns = [
        tid, tool, op, model, lic, pc.take(_TIER_NAMES, lic), status, created, updated,
        duration, billed, est, cost, source, failure, parent, meta,
        *(pa.nulls(len(raw), pa.string()) for _ in _schema.LABEL_COLUMNS),
    ]  # fmt: skip
    return pa.Table.from_arrays(columns, schema=_schema.TASKS)


def _chunks(source: Any, size: int) -> Iterator[Sequence[Mapping[str, Any]]]:
    if isinstance(source, list | tuple):
        for start in range(0, len(source), size):
            chunk = source[start : start + size]
            yield chunk if isinstance(chunk[0], Mapping) else [as_dict(r) for r in chunk]
        return
    it = iter_tasks(source)
    while chunk := list(islice(it, size)):
        yield chunk


def tasks_table(source: Any, *, chunk_size: int = CHUNK) -> pa.Table:
    """The tasks ledger as an Arrow table of schema ``_schema.TASKS``.

    A client that offers ``generations.raw_pages()`` is read from the listing's
    page bytes (``_pages``: no Python dict per task), page by page.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size: must be at least 1, got {chunk_size}")
    pages = raw_pages(source)
    if pages is not None:
        return tasks_table_from_pages(pages)
    parts = [_build(chunk) for chunk in _chunks(source, chunk_size)]
    if not parts:
        return _schema.empty_table(_schema.TASKS)
    return pa.concat_tables(parts)


def tasks_table_from_pages(pages: Iterable[bytes]) -> pa.Table:
    """The tasks table of listing pages, each the bytes of one ``GET /v1/generations``
    answer (``{"data": [task, ...], "next_cursor": ...}``), read a batch at a time."""
    parts = [
        assemble(raw, meta) if raw is not None else _build(fallback)
        for raw, meta, fallback in _pages.batches(pages, RAW_TASK)
    ]
    if not parts:
        return _schema.empty_table(_schema.TASKS)
    return pa.concat_tables(parts)


def tasks_frame_from_pages(pages: Iterable[bytes]) -> pd.DataFrame:
    """:func:`tasks_frame` of listing page bytes (see :func:`tasks_table_from_pages`)."""
    return _schema.to_frame(tasks_table_from_pages(pages))


def tasks_frame(source: Any, *, chunk_size: int = CHUNK) -> pd.DataFrame:
    """One row per task (columns: ``docs/ledger.md``), every column ``pd.ArrowDtype``.

    ``source``: an iterable of task dicts (or objects with ``.raw``), or a
    client with ``generations.list()``; a client with ``generations.raw_pages()``
    (songlab's) is read from the page bytes, without a dict per task.
    """
    return _schema.to_frame(tasks_table(source, chunk_size=chunk_size))
