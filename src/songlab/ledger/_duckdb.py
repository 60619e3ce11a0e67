"""The DuckDB backend of the ledger engine: embedded, the default.

It reads an Arrow table in place (zero copy; dictionary columns as they are) and a
``LedgerStore``'s month-partitioned Parquet files in place, out of core (1 GB of memory,
then a scratch directory), on all cores; sums are exact ``DECIMAL(38, 8)``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

__all__ = ["DuckDB"]


class DuckDB:
    """``engine.Backend`` on an in-process DuckDB connection (closed by :meth:`close`)."""

    dialect = "duckdb"

    def __init__(self, *, memory_limit: str = "1GB") -> None:
        import duckdb

        self._scratch = tempfile.mkdtemp(prefix="songlab-duckdb-")
        self.con: Any = duckdb.connect(
            config={
                "threads": max(1, os.cpu_count() or 1),
                "memory_limit": memory_limit,
                "temp_directory": self._scratch,
                "preserve_insertion_order": False,
            }
        )
        self.con.execute("SET TimeZone = 'UTC'")
        self.con.execute("SET enable_progress_bar = false")
        self._kept: dict[str, pa.Table] = {}  # registered tables stay alive while the view exists

    def register(self, name: str, table: pa.Table) -> None:
        self._kept[name] = table
        self.con.register(name, table)

    def register_rows(
        self,
        name: str,
        source: str,
        *,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        operation: str | None = None,
    ) -> bool:
        """Register as ``name`` the rows of the Arrow table registered as ``source`` created
        from ``created_from`` to ``created_to`` (inclusive) of ``operation`` (None: any), taken
        by Arrow's kernels reading those columns only (DuckDB converts every projected column
        of every row of an Arrow table before it filters). False: ``source`` is not an Arrow
        table registered here (a Parquet dataset, a view), nothing registered."""
        table = self._kept.get(source)
        if table is None:
            return False
        mask = rows_of(table, created_from, created_to, operation)
        self.register(name, table if mask is None else table.filter(mask))
        return True

    def register_dataset(self, name: str, root: Path, files: Sequence[Path]) -> None:
        # newest month first: a ledger's rows are newest first in each file, so a scan in
        # file order is the ledger's order (the CSV of every task keeps it)
        listed = ", ".join(
            "'" + str(f).replace("'", "''") + "'" for f in sorted(files, reverse=True)
        )
        self.con.execute(
            f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet([{listed}], "
            "hive_partitioning = true, union_by_name = true)"
        )

    def execute(self, sql: str) -> None:
        self.con.execute(sql)

    def materialize(self, name: str, sql: str) -> None:
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {sql}")

    def arrow(self, sql: str) -> pa.Table:
        result: pa.Table = self.con.sql(sql).to_arrow_table()
        return result

    def write_csv(self, sql: str, path: Path) -> None:
        target = str(path).replace("'", "''")
        # the source's order (a ledger's: newest first), streamed: a sort of every task
        # would cost more than the whole rest of the report
        self.con.execute("SET preserve_insertion_order = true")
        try:
            self.con.execute(f"COPY ({sql}) TO '{target}' (FORMAT csv, HEADER true)")
        finally:
            self.con.execute("SET preserve_insertion_order = false")

    def close(self) -> None:
        try:
            self.con.close()
        finally:
            self._kept.clear()
            shutil.rmtree(self._scratch, ignore_errors=True)


def rows_of(
    table: pa.Table,
    created_from: datetime | None,
    created_to: datetime | None,
    operation: str | None,
) -> pa.ChunkedArray | None:
    """The mask of ``table``'s rows created from ``created_from`` to ``created_to`` (a null
    time is outside any bound) of ``operation`` (a dictionary column compared by its indices,
    never decoded); None: no condition."""
    import pyarrow.compute as pc

    masks: list[Any] = []
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
    return pc.fill_null(mask, False)


def _equal(column: pa.ChunkedArray, value: str) -> pa.ChunkedArray:
    """``column == value``; a dictionary column's chunks by their indices (a dictionary may
    hold a value more than once: every index of it counts)."""
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(column.type):
        return pc.equal(column, pa.scalar(value, column.type))
    chunks = []
    for chunk in column.chunks:
        words = chunk.dictionary
        found = pc.indices_nonzero(pc.equal(words, pa.scalar(value, words.type)))
        chunks.append(pc.is_in(chunk.indices, value_set=found.cast(chunk.indices.type)))
    return pa.chunked_array(chunks, pa.bool_())
