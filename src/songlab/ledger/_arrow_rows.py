"""Some rows of an in-memory tasks table, taken by Arrow's kernels: those created between two
times (a zero-copy slice when the table is in time order, as a ledger's rows are, newest
first) and of one operation (a dictionary column compared by its indices, never decoded).

DuckDB converts every projected column of every row of an Arrow table before it filters, so
a query of a few days of ten million tasks costs a scan of them all; these rows, registered
on their own (``DuckDB.register_rows``), cost only what they hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import songlab.ledger._arrow as arrow
from songlab.ledger._arrow import Chunked, Column, ColumnLike, Dictionary

__all__ = ["Order", "rows", "rows_of"]


@dataclass(frozen=True)
class Order:
    """A table's creation times, when every one is known and they never rise (newest first):
    negated, so they ascend for ``numpy.searchsorted``."""

    negated: np.ndarray[Any, Any]
    unit: pa.DataType

    @classmethod
    def of(cls, table: pa.Table) -> Order | None:
        """The order of ``table``'s ``created_at``; None: a time is missing or rises."""
        at = table["created_at"]
        if at.null_count or not pa.types.is_timestamp(at.type):
            return None
        values = at.combine_chunks().cast(pa.int64()).to_numpy()
        if values.size > 1 and not bool(np.all(values[:-1] >= values[1:])):
            return None
        return cls(np.negative(values), at.type)

    def span(self, created_from: datetime | None, created_to: datetime | None) -> slice:
        """The positions of the rows created from ``created_from`` to ``created_to``."""
        first, end = 0, self.negated.size
        if created_to is not None:  # the newer rows come first
            first = int(np.searchsorted(self.negated, -self._micros(created_to), "left"))
        if created_from is not None:
            end = int(np.searchsorted(self.negated, -self._micros(created_from), "right"))
        return slice(first, max(first, end))

    def _micros(self, at: datetime) -> int:
        value: int = pa.scalar(at, self.unit).cast(pa.int64()).as_py()
        return value


def rows(
    table: pa.Table,
    order: Order | None,
    created_from: datetime | None,
    created_to: datetime | None,
    operation: str | None,
) -> pa.Table:
    """The rows of ``table`` created from ``created_from`` to ``created_to`` (inclusive; a
    null time is outside any bound) of ``operation`` (None: any), in the table's order."""
    if order is not None and (created_from is not None or created_to is not None):
        span = order.span(created_from, created_to)
        table = table.slice(span.start, span.stop - span.start)
        created_from = created_to = None
    mask = rows_of(table, created_from, created_to, operation)
    return table if mask is None else table.filter(mask)


def rows_of(
    table: pa.Table,
    created_from: datetime | None,
    created_to: datetime | None,
    operation: str | None,
) -> ColumnLike | None:
    """The mask of ``table``'s rows created from ``created_from`` to ``created_to`` (a null
    time is outside any bound) of ``operation``; None: no condition."""
    masks: list[ColumnLike] = []
    if created_from is not None or created_to is not None:
        at = table["created_at"]
        if created_from is not None:
            masks.append(pc.greater_equal(at, pa.scalar(created_from, at.type)))
        if created_to is not None:
            masks.append(pc.less_equal(at, pa.scalar(created_to, at.type)))
    if operation is not None:
        masks.append(_equal(table["operation"], operation))
    if not masks:
        return None
    mask = masks[0]
    for more in masks[1:]:
        mask = pc.and_(mask, more)
    return arrow.fill_null(mask, False)


def _equal(column: Chunked, value: str) -> ColumnLike:
    """``column == value``; a dictionary column's chunks by their indices (a dictionary may
    hold a value more than once: every index of it counts)."""
    if not pa.types.is_dictionary(column.type):
        return pc.equal(column, pa.scalar(value, column.type))
    chunks: list[Column] = []
    for part in column.chunks:
        chunk = cast("Dictionary", part)
        words = chunk.dictionary
        found = pc.indices_nonzero(pc.equal(words, pa.scalar(value, words.type)))
        chunks.append(pc.is_in(chunk.indices, value_set=found.cast(chunk.indices.type)))
    return pa.chunked_array(chunks, pa.bool_())
