"""A batch's result as a frame: one row per request (``songlab.client.BatchResult``).

The client returns typed rows of facts (the cost each task's snapshot showed, the list
price of its request) and knows no frame; this is the frame a notebook reads
(``songlab.widgets.batch`` returns it). ``cost_usd`` and ``cost_source`` come from the
ledger's one rule of what counts (``_schema.cost_of``, as in every tasks frame), so a
batch row and the same task's ledger row say the same thing in the same words.
pyarrow-backed like every ledger frame: money is ``decimal128(18, 8)`` (exact),
``file_ids`` a list of strings.
"""

from __future__ import annotations

from typing import Final, cast

import pandas as pd
import pyarrow as pa

import songlab.ledger._arrow as _arrow
import songlab.ledger._schema as _schema
from songlab.client import BatchResult

__all__ = ["BATCH", "batch_frame"]

BATCH: Final[pa.Schema] = _arrow.schema(
    [
        pa.field("request", pa.int64()),
        pa.field("task_id", pa.string()),
        pa.field("status", pa.string()),
        pa.field("reused", pa.bool_()),
        pa.field("take", pa.int32()),
        pa.field("tool_id", pa.string()),
        pa.field("cost_usd", _schema.MONEY),
        pa.field("cost_source", pa.string()),
        pa.field("billed_usd", _schema.MONEY),
        pa.field("estimate_usd", _schema.MONEY),
        pa.field("file_ids", pa.list_(pa.string())),
        pa.field("error", pa.string()),
    ]
)


def batch_frame(result: BatchResult) -> pd.DataFrame:
    """One row per request of ``result``, in request order: ``request, task_id, status,
    reused, take, tool_id``, ``cost_usd`` and ``cost_source`` by the ledger's rule
    (``billed``, ``estimate`` for a completed task the service shows no cost for,
    ``unbilled`` for a failed one: 0, ``pending``, ``unknown``: null, never 0),
    ``billed_usd`` and ``estimate_usd`` (the facts it was decided from), ``file_ids,
    error``. A request that was never created has no cost and no source (null)."""
    rows = result.rows
    billed = pa.array([r.billed_usd for r in rows], _schema.MONEY)
    estimate = pa.array([r.estimate_usd for r in rows], _schema.MONEY)
    status = pa.array([r.status for r in rows], pa.string())
    cost, source = _schema.cost_of(billed, estimate, status)
    created = pa.array([r.task_id is not None for r in rows], pa.bool_())
    columns: dict[str, _arrow.Column | list[object]] = {
        "request": pa.array([r.request for r in rows], pa.int64()),
        "task_id": pa.array([r.task_id for r in rows], pa.string()),
        "status": status,
        "reused": pa.array([r.reused for r in rows], pa.bool_()),
        "take": pa.array([r.take for r in rows], pa.int32()),
        "tool_id": pa.array([r.tool_id for r in rows], pa.string()),
        "cost_usd": _arrow.if_else(created, cost, pa.scalar(None, _schema.MONEY)),
        "cost_source": _arrow.if_else(
            created,
            cast(_arrow.Dictionary, source).dictionary_decode(),
            pa.scalar(None, pa.string()),
        ),
        "billed_usd": billed,
        "estimate_usd": estimate,
        "file_ids": pa.array([list(r.file_ids) for r in rows], pa.list_(pa.string())),
        "error": pa.array([r.error for r in rows], pa.string()),
    }
    return _schema.to_frame(pa.Table.from_pydict(columns, schema=BATCH))
