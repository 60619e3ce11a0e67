"""A batch's result as a frame: one row per request (``songlab.client.BatchResult``).

The client returns typed rows and knows no frame; this is the frame a notebook reads
(``songlab.widgets.batch`` returns it). pyarrow-backed like every ledger frame: money is
``decimal128(18, 8)`` (exact), ``file_ids`` a list of strings.
"""

from __future__ import annotations

from typing import Final

import pandas as pd
import pyarrow as pa

import songlab.ledger._schema as _schema
from songlab.client import BatchResult

__all__ = ["BATCH", "batch_frame"]

BATCH: Final[pa.Schema] = pa.schema(
    [
        pa.field("request", pa.int64()),
        pa.field("task_id", pa.string()),
        pa.field("status", pa.string()),
        pa.field("reused", pa.bool_()),
        pa.field("take", pa.int32()),
        pa.field("tool_id", pa.string()),
        pa.field("cost_usd", _schema.MONEY),
        pa.field("cost_source", pa.string()),
        pa.field("file_ids", pa.list_(pa.string())),
        pa.field("error", pa.string()),
    ]
)


def batch_frame(result: BatchResult) -> pd.DataFrame:
    """One row per request of ``result``, in request order: ``request, task_id, status,
    reused, take, tool_id, cost_usd`` (Decimal, exact), ``cost_source`` (``service`` /
    ``estimate`` / ``released`` / ``unknown``), ``file_ids, error``."""
    columns = {
        f.name: pa.array([getattr(row, f.name) for row in result.rows], f.type) for f in BATCH
    }
    table = pa.Table.from_pydict(columns, schema=BATCH)
    return table.to_pandas(types_mapper=pd.ArrowDtype)
